"""Trains MAD4PG on a PettingZoo SISL environment (default: multiwalker_v9, 3 walkers).

    python examples/sisl/run_mad4pg.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/sisl/run_mad4pg.py --lp_launch_type=local_mp --num_executors=2 --critic=state

Every MAD4PGConfig field is a flag too (e.g. --vmin=-150 --vmax=150 --num_atoms=51, the critics'
support, which should cover the environment's discounted returns).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import maddpg
from mava_systems.launching import launch

main = launch.example_main("mava_systems.maddpg.system:MAD4PG",
                           maddpg.MAD4PGConfig, default_env="sisl/multiwalker_v9")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
