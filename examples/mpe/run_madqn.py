"""Trains MADQN on a PettingZoo MPE environment (default: simple_spread_v3, 3 cooperative agents).

    python examples/mpe/run_madqn.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_madqn.py --lp_launch_type=local_mp --num_executors=2

Every MADQNConfig field is a flag too (e.g. --batch_size=64 --n_step=3).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from absl import app  # noqa: E402  (after the line above)

from mava_systems import madqn
from mava_systems.launching import launch

# MPE's rewards are dense and its episodes short (25 steps): a discount of 0.9
# values the next ~10 steps and keeps Q-values small; with 0.99 the greedy
# return on simple_spread plateaus around -56 (see docs/benchmarks.md). Agent
# IDs let agents that share a network take different landmarks.
MPE_DEFAULTS = {"discount": 0.9, "agent_ids": True}

main = launch.example_main(madqn.MADQN, madqn.MADQNConfig, default_env="mpe/simple_spread_v3",
                           config_defaults=MPE_DEFAULTS)

if __name__ == "__main__":
    app.run(main)
