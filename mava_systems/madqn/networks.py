"""Q-networks for MADQN: one per agent type (shared weights) or one per agent, built in one place."""

import dataclasses
from typing import Callable, Dict, Mapping, Sequence

from acme.tf import utils as tf2_utils
from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.specs import MAEnvironmentSpec, agents_by_network, shared_specs

# network_factory(observation_spec, action_spec) -> a module mapping [B, *obs] to [B, num_actions].
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


class NumpyMLPQNetwork:
    """An `MLPQNetwork`'s forward pass in NumPy, for acting.

    Executors evaluate small batches one step at a time; for networks this
    small, a TensorFlow call costs far more (about 1 ms on 2 cores) than the
    arithmetic (tens of microseconds). `refresh()` copies the current weights.
    """

    def __init__(self, network: MLPQNetwork):
        self._network = network
        self._weights: list = []
        self.refresh()

    def refresh(self) -> None:
        """Reads the network's current weights."""
        self._weights = [(linear.w.numpy(), linear.b.numpy()) for linear in self._network.linears]

    def __call__(self, observation: np.ndarray) -> np.ndarray:
        values = observation.reshape(observation.shape[0], -1).astype(np.float32, copy=False)
        for w, b in self._weights[:-1]:
            values = np.maximum(values @ w + b, 0.0)
        w, b = self._weights[-1]
        return values @ w + b


def make_mlp_q_network(observation_spec: specs.Array, action_spec: specs.DiscreteArray,
                       hidden_sizes: Sequence[int] = (64, 64)) -> snt.Module:
    """The default Q-network: an `MLPQNetwork` with one output per action."""
    del observation_spec
    return MLPQNetwork(hidden_sizes, action_spec.num_values)


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


def make_networks(
    environment_spec: MAEnvironmentSpec,
    agent_networks: Mapping[str, str],
    network_factory: QNetworkFactory,
) -> MADQNNetworks:
    """Builds (and creates the variables of) every online and target Q-network.

    Raises:
      ValueError: if agents sharing a network have different specs, or a
        network's output does not have one value per action.
    """
    q_networks, target_q_networks = {}, {}
    for key, agents in agents_by_network(agent_networks).items():
        observation_spec, action_spec = shared_specs(environment_spec, key, agents)
        if not isinstance(action_spec, specs.DiscreteArray):
            raise ValueError(
                f"MADQN needs discrete actions, but agent {agents[0]!r} has action spec {action_spec}")
        q_networks[key] = _build(network_factory, observation_spec, action_spec, key)
        target_q_networks[key] = _build(network_factory, observation_spec, action_spec, key)
        for target, source in zip(target_q_networks[key].variables, q_networks[key].variables):
            target.assign(source)
    return MADQNNetworks(q_networks, target_q_networks, dict(agent_networks))


def _build(network_factory: QNetworkFactory, observation_spec: specs.Array,
           action_spec: specs.DiscreteArray, key: str) -> snt.Module:
    network = network_factory(observation_spec, action_spec)
    dummy = tf.zeros((1,) + tuple(observation_spec.shape), dtype=tf.as_dtype(observation_spec.dtype))
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


def mask_illegal(q_values: tf.Tensor, legal_actions: tf.Tensor) -> tf.Tensor:
    """Q-values with illegal actions pushed below every legal one (see `legal_action_mask`)."""
    return tf.where(legal_action_mask(legal_actions), q_values, q_values.dtype.min)


def observation_to_input(observation: tf.Tensor) -> tf.Tensor:
    """Casts an observation batch to the float32 a network expects."""
    return tf.cast(observation, tf.float32)


def variables_as_numpy(networks: Mapping[str, snt.Module], names: Sequence[str]):
    """The variables of the named networks, as lists of numpy arrays."""
    return [tf2_utils.to_numpy(networks[name].variables) for name in names]

