"""Trains DQN on a single-agent Gymnasium environment (default: CartPole-v1).

    python examples/gymnasium/run_dqn.py --lp_launch_type=local_mt --max_actor_steps=30000
    python examples/gymnasium/run_dqn.py --lp_launch_type=local_mp --num_actors=4 --num_caches=2

Every DQNConfig field is a flag too (e.g. --batch_size=64 --n_step=3).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import dqn
from mava_systems.launching import launch

main = launch.example_main("mava_systems.dqn.system:DQN",
                           dqn.DQNConfig, default_env="gymnasium/CartPole-v1",
                           executor_name="actor", default_num_caches=1)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
