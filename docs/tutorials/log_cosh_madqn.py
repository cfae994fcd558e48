"""Tutorial 2: MADQN with a log-cosh loss, by subclassing three classes.

    .venv/bin/python docs/tutorials/log_cosh_madqn.py --env=mpe/simple_spread_v3
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

from absl import app  # noqa: E402  (after the line above)
import tensorflow as tf

from mava_systems import madqn
from mava_systems.launching import launch


def log_cosh(td_error: tf.Tensor) -> tf.Tensor:
    """log(cosh(x)): about x**2 / 2 near 0 and |x| - log(2) far out, smooth everywhere."""
    absolute = tf.abs(td_error)
    log_2 = tf.math.log(tf.constant(2.0, absolute.dtype))
    return absolute + tf.nn.softplus(-2.0 * absolute) - log_2


class LogCoshMADQNTrainer(madqn.MADQNTrainer):
    """Double Q-learning targets as before; a log-cosh loss on the TD error instead of Huber."""

    def network_loss(self, key, transitions):
        _, td_error, q_values = super().network_loss(key, transitions)
        return log_cosh(td_error), td_error, q_values


class LogCoshMADQNBuilder(madqn.MADQNBuilder):
    trainer_class = LogCoshMADQNTrainer


class LogCoshMADQN(madqn.MADQN):
    builder_class = LogCoshMADQNBuilder


if __name__ == "__main__":
    app.run(launch.example_main(LogCoshMADQN, madqn.MADQNConfig, default_env="debug/line_world_v0"))
