"""Trains MAPPO on a PettingZoo SISL environment (default: multiwalker_v9, 3 walkers, continuous).

    python examples/sisl/run_mappo.py --lp_launch_type=local_mt --max_executor_steps=100000
    python examples/sisl/run_mappo.py --lp_launch_type=local_mp --num_executors=2

Every MAPPOConfig field is a flag too (e.g. --init_log_std=-1.0); `--env_kwargs` passes the
environment's arguments as JSON (e.g. '{"n_walkers": 2}').
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import mappo
from mava_systems.launching import launch

main = launch.example_main("mava_systems.mappo.system:MAPPO",
                           mappo.MAPPOConfig, default_env="sisl/multiwalker_v9")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
