"""Trains DMPO on a single-agent continuous-action Gymnasium environment (default: Pendulum-v1).

    python examples/gymnasium/run_dmpo.py --lp_launch_type=local_mt --max_actor_steps=20000
    python examples/gymnasium/run_dmpo.py --lp_launch_type=local_mp --num_actors=4 --num_caches=2

Every DMPOConfig field is a flag too (e.g. --vmin=-1000 --vmax=0 --num_samples=10).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import dmpo
from mava_systems.launching import launch

main = launch.example_main("mava_systems.dmpo.system:DMPO",
                           dmpo.DMPOConfig, default_env="gymnasium/Pendulum-v1",
                           executor_name="actor", default_num_caches=0)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
