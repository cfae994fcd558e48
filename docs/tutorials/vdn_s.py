"""Tutorial 7: VDN-S, value decomposition with a state-dependent bias.

The team value is VDN's sum of the agents' Q-values plus V(s), a function of the
global state alone: V(s) carries the part of the team's value no agent's action
changes (QMIX's state bias), so the agents' Q-values need not.

    .venv/bin/python docs/tutorials/vdn_s.py --env=mpe/simple_spread_v3
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

from absl import app  # noqa: E402  (after the line above)
from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems import vdn
from mava_systems.launching import launch


class StateBiasedSum(snt.Module):
    """Team Q = sum_i Q_i + V(s), with V a small MLP of the (flattened) global state."""

    def __init__(self, hidden_size: int = 32):
        super().__init__(name="state_biased_sum")
        self.state_value = snt.Sequential([snt.Flatten(), snt.nets.MLP([hidden_size, 1])])

    def __call__(self, agent_q_values: tf.Tensor, states: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(agent_q_values, axis=-1) + self.state_value(states)[:, 0]


def make_state_biased_sum(num_agents: int, state_spec: specs.Array) -> snt.Module:
    """A mixer factory (see `vdn.MixerFactory`); the MLP takes any state size."""
    del num_agents, state_spec
    return StateBiasedSum()


class VDNSBuilder(vdn.VDNBuilder):
    # Replay keeps the environment's global state at both ends of each transition.
    stores_environment_extras = True

    def default_mixer_factory(self):
        return make_state_biased_sum


class VDNS(vdn.VDN):
    """VDN whose team value adds a learnt bias of the global state to the agents' sum."""

    builder_class = VDNSBuilder
    system_name = "vdns"


if __name__ == "__main__":
    app.run(launch.example_main(VDNS, vdn.VDNConfig, default_env="debug/line_world_v0"))
