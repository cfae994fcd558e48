"""Trains R2D2 on a single-agent Gymnasium environment (default: CartPole-v1).

    python examples/gymnasium/run_r2d2.py --lp_launch_type=local_mt --max_actor_steps=30000
    python examples/gymnasium/run_r2d2.py --lp_launch_type=local_mp --num_actors=4

Every R2D2Config field is a flag too (e.g. --burn_in_length=8 --trace_length=20).
R2D2 always has one cache between the learner and the actors, as in the seed.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import r2d2
from mava_systems.launching import launch

main = launch.example_main("mava_systems.r2d2.system:R2D2",
                           r2d2.R2D2Config, default_env="gymnasium/CartPole-v1",
                           executor_name="actor", default_num_caches=None)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
