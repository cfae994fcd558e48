"""Trains MADQN on a PettingZoo MPE environment (default: simple_spread_v3, 3 cooperative agents).

    python examples/mpe/run_madqn.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_madqn.py --lp_launch_type=local_mp --num_executors=2

Every MADQNConfig field is a flag too (e.g. --batch_size=64 --n_step=3).
"""

from absl import app, flags

from mava_systems import launch, madqn
import wrappers

launch.define_flags(default_env="mpe/simple_spread_v3")
launch.define_config_flags(madqn.MADQNConfig)
FLAGS = flags.FLAGS


def main(_):
    system = madqn.MADQN(
        environment_factory=wrappers.make_environment_factory(FLAGS.env),
        config=launch.config_from_flags(madqn.MADQNConfig),
        **launch.topology_from_flags(),
    )
    launch.run(system)


if __name__ == "__main__":
    app.run(main)
