"""Q-networks for MADQN: one per agent type (shared weights) or one per agent, built in one place."""

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from acme.tf import utils as tf2_utils
from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.acting.numpy_networks import (FLATTEN, NumpyLayer, mlp_twin, numpy_twin,
                                                register_numpy_twin, sequential_twin)
from mava_systems.acting.recurrent_states import is_recurrent
from mava_systems.training.recurrent_unroll import gru_unroll
from mava_systems.specs import MAEnvironmentSpec, agents_by_network, network_specs

# network_factory(observation_spec, action_spec) -> a module mapping [B, *obs] to [B, num_actions],
# or (recurrent systems) an `snt.RNNCore` mapping ([B, *obs], state) to ([B, num_actions], state).
QNetworkFactory = Callable[[specs.Array, specs.DiscreteArray], snt.Module]


class MLPQNetwork(snt.Module):
    """Flattens the observation, then ReLU layers, then a linear layer with one value per action."""

    def __init__(self, hidden_sizes: Sequence[int], num_actions: int, name: str = "mlp_q_network"):
        super().__init__(name=name)
        self.linears = [snt.Linear(size) for size in list(hidden_sizes) + [num_actions]]

    def __call__(self, observation: tf.Tensor) -> tf.Tensor:
        values = tf.reshape(observation, [tf.shape(observation)[0], -1])
        for linear in self.linears[:-1]:
            values = tf.nn.relu(linear(values))
        return self.linears[-1](values)


@register_numpy_twin(MLPQNetwork)
def _numpy_mlp_q_network(network: MLPQNetwork) -> Optional[NumpyLayer]:
    """An `MLPQNetwork`'s NumPy twin (for acting, see `acting.numpy_networks`)."""
    return sequential_twin(FLATTEN, mlp_twin(network.linears, tf.nn.relu, activate_final=False))


def make_mlp_q_network(observation_spec: specs.Array, action_spec: specs.DiscreteArray,
                       hidden_sizes: Sequence[int] = (64, 64)) -> snt.Module:
    """The default Q-network: an `MLPQNetwork` with one output per action."""
    del observation_spec
    return MLPQNetwork(hidden_sizes, action_spec.num_values)


class RecurrentQNetwork(snt.RNNCore):
    """The reference recurrent agent (PyMARL's): flatten, a ReLU input layer (or MLP), a GRU and
    a linear layer with one value per action.

    `(observation [B, *obs], state [B, gru_size]) -> (Q-values [B, num_actions], new state)`.
    """

    def __init__(self, input_sizes: Sequence[int], gru_size: int, num_actions: int,
                 name: str = "recurrent_q_network"):
        super().__init__(name=name)
        self.input_layer = snt.nets.MLP(list(input_sizes), activate_final=True, name="input_layer")
        self.gru = snt.GRU(gru_size, name="gru")
        self.head = snt.Linear(num_actions, name="head")

    def __call__(self, observation: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        embedding = self.input_layer(tf.reshape(observation, [tf.shape(observation)[0], -1]))
        output, state = self.gru(embedding, state)
        return self.head(output), state

    def initial_state(self, batch_size: int, **unused_kwargs: Any) -> tf.Tensor:
        """Zeros: the state at every episode start."""
        return self.gru.initial_state(batch_size)

    def unroll(self, observations: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(observations [T, B, *obs], state [B, gru_size]) -> (Q-values [T, B, num_actions],
        final state)`: the same values as stepping the network T times, computed with the input
        layer and head applied to all T steps at once and only the GRU stepped (`gru_unroll`: one
        fused loop, compiled with XLA when T is known)."""
        length, batch_size = tf.shape(observations)[0], tf.shape(observations)[1]
        embeddings = self.input_layer(tf.reshape(observations, [length * batch_size, -1]))
        embeddings = tf.reshape(embeddings, [length, batch_size, embeddings.shape[-1]])
        outputs, state = gru_unroll(self.gru, embeddings, state)
        q_values = self.head(tf.reshape(outputs, [length * batch_size, outputs.shape[-1]]))
        return tf.reshape(q_values, [length, batch_size, q_values.shape[-1]]), state


class NumpyRecurrentQNetwork(NumpyLayer):
    """A `RecurrentQNetwork`'s NumPy twin: `(observation, state) -> (Q-values, new state)`."""

    def __call__(self, inputs: np.ndarray, state: np.ndarray = None) -> Any:
        input_layer, gru, head = self.sublayers
        output, state = gru(input_layer(inputs), state)
        return head(output), state


@register_numpy_twin(RecurrentQNetwork)
def _numpy_recurrent_q_network(network: RecurrentQNetwork) -> Optional[NumpyLayer]:
    """A `RecurrentQNetwork`'s NumPy twin (for acting, see `acting.numpy_networks`)."""
    parts = (sequential_twin(FLATTEN, network.input_layer), numpy_twin(network.gru),
             numpy_twin(network.head))
    return None if any(part is None for part in parts) else NumpyRecurrentQNetwork(*parts)


def make_recurrent_q_network(observation_spec: specs.Array, action_spec: specs.DiscreteArray,
                             input_sizes: Sequence[int] = (64,), gru_size: int = 64
                             ) -> snt.RNNCore:
    """The default recurrent Q-network: a `RecurrentQNetwork` with one output per action."""
    del observation_spec
    return RecurrentQNetwork(input_sizes, gru_size, action_spec.num_values)


@dataclasses.dataclass
class MADQNNetworks:
    """Online and target Q-networks keyed by network key, and which agent uses which."""

    q_networks: Dict[str, snt.Module]
    target_q_networks: Dict[str, snt.Module]
    agent_networks: Dict[str, str]

    @property
    def agents_by_network(self) -> Dict[str, list]:
        """Agents grouped by the network they share, in agent order."""
        return agents_by_network(self.agent_networks)

    def trained_modules(self) -> Dict[str, snt.Module]:
        """Every trained module, by name (recorded in run.json): the online Q-networks."""
        return dict(self.q_networks)


def make_networks(
    environment_spec: MAEnvironmentSpec,
    agent_networks: Mapping[str, str],
    network_factory: QNetworkFactory,
    recurrent: bool = False,
) -> MADQNNetworks:
    """Builds (and creates the variables of) every online and target Q-network.

    With `recurrent`, every network must be an `snt.RNNCore` (see `QNetworkFactory`);
    without it, none may be.

    Raises:
      ValueError: if agents sharing a network have different specs, a
        network's output does not have one value per action, or a network is
        (or is not) recurrent against `recurrent`.
    """
    q_networks, target_q_networks = {}, {}
    for key, agents, observation_spec, action_spec in network_specs(environment_spec,
                                                                    agent_networks):
        if not isinstance(action_spec, specs.DiscreteArray):
            raise ValueError(
                f"MADQN needs discrete actions, but agent {agents[0]!r} has action spec {action_spec}")
        q_networks[key] = _build(network_factory, observation_spec, action_spec, key, recurrent)
        target_q_networks[key] = _build(network_factory, observation_spec, action_spec, key,
                                        recurrent)
        for target, source in zip(target_q_networks[key].variables, q_networks[key].variables):
            target.assign(source)
    return MADQNNetworks(q_networks, target_q_networks, dict(agent_networks))


def _build(network_factory: QNetworkFactory, observation_spec: specs.Array,
           action_spec: specs.DiscreteArray, key: str, recurrent: bool = False) -> snt.Module:
    network = network_factory(observation_spec, action_spec)
    if is_recurrent(network) != recurrent:
        raise ValueError(
            f"network {key!r} ({type(network).__name__}) is a recurrent core (an snt.RNNCore, "
            "called with a state): set the config's recurrent=True to train it on sequences"
            if not recurrent else
            f"the config has recurrent=True, but network {key!r} ({type(network).__name__}) is "
            "not a recurrent core: give a network_factory returning an snt.RNNCore (e.g. "
            "snt.DeepRNN([..., snt.GRU(64), snt.Linear(num_actions)])) or leave it None for "
            "the reference GRU agent")
    dummy = tf.zeros((1,) + tuple(observation_spec.shape), dtype=tf.as_dtype(observation_spec.dtype))
    if recurrent:
        output, _ = network(observation_to_input(dummy), network.initial_state(1))
    else:
        output = network(observation_to_input(dummy))
    try:
        has_variables = bool(network.variables)
    except ValueError:  # Sonnet raises instead of returning an empty list.
        has_variables = False
    if not has_variables:
        raise ValueError(f"network {key!r} has no variables: nothing to train or to share")
    expected = (1, action_spec.num_values)
    if tuple(output.shape) != expected:
        raise ValueError(
            f"network {key!r} outputs shape {tuple(output.shape[1:])} per observation, but the "
            f"action spec has {action_spec.num_values} actions: expected output shape "
            f"({action_spec.num_values},)")
    return network


def legal_action_mask(legal_actions: tf.Tensor) -> tf.Tensor:
    """Boolean mask of legal actions; a row with none legal (an agent not to move, or gone) allows all."""
    legal = legal_actions > 0
    return tf.logical_or(legal, tf.logical_not(tf.reduce_any(legal, axis=-1, keepdims=True)))


def numpy_legal_action_mask(legal_actions: np.ndarray) -> np.ndarray:
    """`legal_action_mask` in NumPy."""
    legal = legal_actions > 0
    return legal | ~legal.any(axis=-1, keepdims=True)


def numpy_mask_illegal(values: np.ndarray, legal_actions: np.ndarray) -> np.ndarray:
    """`mask_illegal` in NumPy."""
    return np.where(numpy_legal_action_mask(legal_actions), values, np.finfo(values.dtype).min)


def mask_illegal(q_values: tf.Tensor, legal_actions: tf.Tensor) -> tf.Tensor:
    """Q-values with illegal actions pushed below every legal one (see `legal_action_mask`)."""
    return tf.where(legal_action_mask(legal_actions), q_values, q_values.dtype.min)


def observation_to_input(observation: tf.Tensor) -> tf.Tensor:
    """Casts an observation batch to the float32 a network expects."""
    return tf.cast(observation, tf.float32)


def variables_as_numpy(networks: Mapping[str, snt.Module], names: Sequence[str]):
    """The variables of the named networks, as lists of numpy arrays."""
    return [tf2_utils.to_numpy(networks[name].variables) for name in names]

