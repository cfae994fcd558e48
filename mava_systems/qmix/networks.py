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
    The four layers that read the state are one linear layer (`state_layer`),
    split in four: the same function with fewer, larger operations.

    With `normalise_states`, the state is layer-normalised (`state_norm`, with a
    learnt scale and offset) before any hypernetwork reads it. Raw, the mixing
    weights and V(s) grow with the state's size, so on states far from those
    trained on (MPE agents that drift off) the team Q is extrapolated far too
    high, and bootstrapping spreads that over-estimate.
    """

    def __init__(self, num_agents: int, embed_dim: int = 32, hypernet_hidden_size: int = 64,
                 normalise_states: bool = False, name: str = "qmix_mixer"):
        super().__init__(name=name)
        self._num_agents = num_agents
        self.state_norm = (snt.LayerNorm(axis=-1, create_scale=True, create_offset=True,
                                         name="state_norm") if normalise_states else None)
        self._embed_dim = embed_dim
        # Hidden units of the W1 and w2 hypernetworks, b1, and V's hidden units.
        self._split = [hypernet_hidden_size, hypernet_hidden_size, embed_dim, embed_dim]
        self.state_layer = snt.Linear(sum(self._split), name="state_layer")
        self.w1_layer = snt.Linear(num_agents * embed_dim, name="w1_layer")
        self.w2_layer = snt.Linear(embed_dim, name="w2_layer")
        self.value_layer = snt.Linear(1, name="value_layer")

    def __call__(self, agent_q_values: tf.Tensor, states: tf.Tensor) -> tf.Tensor:
        states = tf.cast(states, tf.float32)
        if states.shape.rank != 2:  # Flat states (the usual case) need no reshape op.
            states = tf.reshape(states, [tf.shape(states)[0], -1])
        if self.state_norm is not None:
            states = self.state_norm(states)
        w1_hidden, w2_hidden, b1, value_hidden = tf.split(self.state_layer(states), self._split,
                                                          axis=-1)
        w1 = tf.reshape(tf.abs(self.w1_layer(tf.nn.relu(w1_hidden))),
                        [-1, self._num_agents, self._embed_dim])
        hidden = tf.nn.elu(tf.reduce_sum(agent_q_values[:, :, None] * w1, axis=1) + b1)
        w2 = tf.abs(self.w2_layer(tf.nn.relu(w2_hidden)))
        value = self.value_layer(tf.nn.relu(value_hidden))[:, 0]
        return tf.reduce_sum(hidden * w2, axis=-1) + value


def make_qmix_mixer(num_agents: int, state_spec: specs.Array, embed_dim: int = 32,
                    hypernet_hidden_size: int = 64, normalise_states: bool = False) -> snt.Module:
    """A `QMixer` (a `MixerFactory` once the sizes are bound)."""
    del state_spec  # The hypernetworks take any state size.
    return QMixer(num_agents, embed_dim, hypernet_hidden_size, normalise_states)


def qmix_mixer_factory(embed_dim: int, hypernet_hidden_size: int,
                       normalise_states: bool = False) -> MixerFactory:
    """The `MixerFactory` of QMIX's mixer with these sizes (and state normalisation)."""
    return functools.partial(make_qmix_mixer, embed_dim=embed_dim,
                             hypernet_hidden_size=hypernet_hidden_size,
                             normalise_states=normalise_states)
