"""QMIX's mixer: a monotonic mixing network whose weights hypernetworks make from the state."""

import functools

from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems.vdn.networks import MixerFactory


class QMixer(snt.Module):
    """Team Q = w2(s) . elu(W1(s) q + b1(s)) + V(s), monotonic in every agent's Q-value.

    Two-layer hypernetworks (ReLU, `hypernet_hidden_size` units) map the state
    to W1 (N x `embed_dim`) and w2 (`embed_dim`), both made non-negative by an
    absolute value, so the team Q never decreases when an agent's Q grows; b1
    is a linear function of the state, and the state value V(s) an MLP
    (`embed_dim` ReLU units, then one output), as in the QMIX paper and PyMARL.
    """

    def __init__(self, num_agents: int, embed_dim: int = 32, hypernet_hidden_size: int = 64,
                 name: str = "qmix_mixer"):
        super().__init__(name=name)
        self._num_agents = num_agents
        self._embed_dim = embed_dim
        self.hyper_w1 = snt.nets.MLP([hypernet_hidden_size, num_agents * embed_dim], name="hyper_w1")
        self.hyper_w2 = snt.nets.MLP([hypernet_hidden_size, embed_dim], name="hyper_w2")
        self.hyper_b1 = snt.Linear(embed_dim, name="hyper_b1")
        self.state_value = snt.nets.MLP([embed_dim, 1], name="state_value")

    def __call__(self, agent_q_values: tf.Tensor, states: tf.Tensor) -> tf.Tensor:
        states = tf.reshape(tf.cast(states, tf.float32), [tf.shape(states)[0], -1])
        w1 = tf.reshape(tf.abs(self.hyper_w1(states)), [-1, self._num_agents, self._embed_dim])
        hidden = tf.nn.elu(tf.einsum("bn,bne->be", agent_q_values, w1) + self.hyper_b1(states))
        w2 = tf.abs(self.hyper_w2(states))
        return tf.reduce_sum(hidden * w2, axis=-1) + self.state_value(states)[:, 0]


def make_qmix_mixer(num_agents: int, state_spec: specs.Array, embed_dim: int = 32,
                    hypernet_hidden_size: int = 64) -> snt.Module:
    """A `QMixer` (a `MixerFactory` once the sizes are bound)."""
    del state_spec  # The hypernetworks take any state size.
    return QMixer(num_agents, embed_dim, hypernet_hidden_size)


def qmix_mixer_factory(embed_dim: int, hypernet_hidden_size: int) -> MixerFactory:
    """The `MixerFactory` of QMIX's mixer with these sizes."""
    return functools.partial(make_qmix_mixer, embed_dim=embed_dim,
                             hypernet_hidden_size=hypernet_hidden_size)
