"""Tutorial 2: MADQN with a Huber loss, by subclassing three classes.

    .venv/bin/python docs/tutorials/huber_madqn.py --env=mpe/simple_spread_v3
"""

from absl import app
import tensorflow as tf

from mava_systems import launch, madqn


def huber(td_error: tf.Tensor, delta: float = 1.0) -> tf.Tensor:
    """Squared for |error| <= delta, linear beyond: large errors give bounded gradients."""
    absolute = tf.abs(td_error)
    quadratic = tf.minimum(absolute, delta)
    return 0.5 * tf.square(quadratic) + delta * (absolute - quadratic)


class HuberMADQNTrainer(madqn.MADQNTrainer):
    """Double Q-learning targets as before; a Huber loss on the TD error instead of a squared one."""

    def network_loss(self, key, transitions):
        _, td_error, q_values = super().network_loss(key, transitions)
        return huber(td_error), td_error, q_values


class HuberMADQNBuilder(madqn.MADQNBuilder):
    trainer_class = HuberMADQNTrainer


class HuberMADQN(madqn.MADQN):
    builder_class = HuberMADQNBuilder


if __name__ == "__main__":
    app.run(launch.example_main(HuberMADQN, madqn.MADQNConfig, default_env="debug/line_world_v0"))
