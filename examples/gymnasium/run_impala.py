"""Trains IMPALA on a single-agent Gymnasium environment (default: CartPole-v1).

    python examples/gymnasium/run_impala.py --lp_launch_type=local_mt --max_actor_steps=50000
    python examples/gymnasium/run_impala.py --lp_launch_type=local_mp --num_actors=4

Every IMPALAConfig field is a flag too (e.g. --sequence_length=20 --entropy_cost=0.01).
IMPALA always has one cache between the learner and the actors, as in the seed.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import impala
from mava_systems.launching import launch

main = launch.example_main("mava_systems.impala.system:IMPALA",
                           impala.IMPALAConfig, default_env="gymnasium/CartPole-v1",
                           executor_name="actor", default_num_caches=None)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
