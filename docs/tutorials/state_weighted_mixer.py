"""Tutorial 5: your own mixer for QMIX, a state-weighted sum of the agents' Q-values.

    .venv/bin/python docs/tutorials/state_weighted_mixer.py --env=mpe/simple_spread_v3
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

from absl import app  # noqa: E402  (after the line above)
from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems import qmix
from mava_systems.launching import launch


class StateWeightedSum(snt.Module):
    """Team Q = sum_i w_i(s) Q_i + b(s), with weights w_i(s) = softplus(linear(s)) >= 0.

    Non-negative weights keep the team Q monotonic in every agent's Q-value, so
    each agent's greedy action is still the team's greedy joint action.
    """

    def __init__(self, num_agents: int):
        super().__init__(name="state_weighted_sum")
        self.weights = snt.Linear(num_agents, name="weights")
        self.bias = snt.Linear(1, name="bias")

    def __call__(self, agent_q_values: tf.Tensor, states: tf.Tensor) -> tf.Tensor:
        weights = tf.nn.softplus(self.weights(states))  # [B, N]
        return tf.reduce_sum(weights * agent_q_values, axis=-1) + self.bias(states)[:, 0]


def make_state_weighted_sum(num_agents: int, state_spec: specs.Array) -> snt.Module:
    """A mixer factory: `QMIX(..., mixer_factory=make_state_weighted_sum)` uses it."""
    del state_spec  # snt.Linear takes any state size.
    return StateWeightedSum(num_agents)


# Or make it a system's default, overriding one method of the builder:
class StateWeightedQMIXBuilder(qmix.QMIXBuilder):
    def default_mixer_factory(self):
        return make_state_weighted_sum


class StateWeightedQMIX(qmix.QMIX):
    builder_class = StateWeightedQMIXBuilder


if __name__ == "__main__":
    app.run(launch.example_main(StateWeightedQMIX, qmix.QMIXConfig,
                                default_env="debug/line_world_v0"))
