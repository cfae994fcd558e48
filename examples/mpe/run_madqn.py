"""Trains MADQN on a PettingZoo MPE environment (default: simple_spread_v3, 3 cooperative agents).

    python examples/mpe/run_madqn.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_madqn.py --lp_launch_type=local_mp --num_executors=2

Every MADQNConfig field is a flag too (e.g. --batch_size=64 --n_step=3).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import madqn
from mava_systems.launching import launch

# The defaults: the config's, with MPE's settings (mava_systems/family_settings.py).
main = launch.example_main("mava_systems.madqn.system:MADQN",
                           madqn.MADQNConfig, default_env="mpe/simple_spread_v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
