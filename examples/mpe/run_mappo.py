"""Trains MAPPO on a PettingZoo MPE environment (default: simple_spread_v3, 3 cooperative agents).

    python examples/mpe/run_mappo.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_mappo.py --lp_launch_type=local_mp --num_executors=2
    python examples/mpe/run_mappo.py --env_kwargs='{"continuous_actions": true}'
    python examples/mpe/run_mappo.py --critic=decentralised   # IPPO

Every MAPPOConfig field is a flag too (e.g. --num_epochs=10 --clip_epsilon=0.1); `--env` takes any
registered environment (e.g. debug/line_world_v0).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import mappo
from mava_systems.launching import launch

main = launch.example_main("mava_systems.mappo.system:MAPPO",
                           mappo.MAPPOConfig, default_env="mpe/simple_spread_v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
