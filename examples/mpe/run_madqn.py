"""Trains MADQN on a PettingZoo MPE environment (default: simple_spread_v3, 3 agents).

    python examples/mpe/run_madqn.py --lp_launch_type=local_mt --max_executor_steps=20000
"""

from absl import app, flags

from mava_systems import launch, madqn
import wrappers

launch.define_flags(default_env="mpe/simple_spread_v3")
FLAGS = flags.FLAGS


def main(_):
    system = madqn.MADQN(
        environment_factory=wrappers.make_environment_factory(FLAGS.env),
        num_executors=FLAGS.num_executors,
        num_caches=FLAGS.num_caches,
        max_executor_steps=launch.max_executor_steps_flag(),
        config=madqn.MADQNConfig(seed=FLAGS.seed),
        run_dir=FLAGS.run_dir,
    )
    launch.run(system)


if __name__ == "__main__":
    app.run(main)
