"""MAPPO's networks: a policy and a critic per network key (agents of one type share both)."""

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.components.numpy_networks import (FLATTEN, NumpyLayer, register_numpy_twin,
                                                    sequential_twin)
from mava_systems.components.recurrent_states import refuse_recurrent
from mava_systems.madqn.networks import observation_to_input
from mava_systems.mappo.policies import make_head
from mava_systems.specs import MAEnvironmentSpec, agents_by_network, network_specs

# network_factory(observation_spec, action_spec, critic_input_spec) -> (policy, critic):
# the policy maps observations [B, *obs] to logits [B, num_actions] (discrete actions) or to
# (mean, log_std) [B, D] each (continuous); the critic maps its inputs [B, S] to values [B].
NetworkFactory = Callable[[specs.Array, specs.Array, specs.Array], Tuple[snt.Module, snt.Module]]


def flatten(batch: tf.Tensor) -> tf.Tensor:
    """[B, ...] -> [B, prod(...)] float32."""
    return tf.reshape(observation_to_input(batch), [tf.shape(batch)[0], -1])


class CategoricalPolicy(snt.Module):
    """An MLP from the flattened observation to one logit per action."""

    def __init__(self, num_actions: int, hidden_sizes: Sequence[int], name: str = "policy"):
        super().__init__(name=name)
        self._mlp = snt.nets.MLP(list(hidden_sizes) + [num_actions], activation=tf.nn.tanh,
                                 w_init=snt.initializers.Orthogonal())

    def __call__(self, observation: tf.Tensor) -> tf.Tensor:
        return self._mlp(flatten(observation))


class GaussianPolicy(snt.Module):
    """An MLP from the flattened observation to the mean of each action dimension, and a
    learnt log standard deviation per dimension (not depending on the observation)."""

    def __init__(self, action_size: int, hidden_sizes: Sequence[int], init_log_std: float,
                 name: str = "policy"):
        super().__init__(name=name)
        self._mlp = snt.nets.MLP(list(hidden_sizes) + [action_size], activation=tf.nn.tanh,
                                 w_init=snt.initializers.Orthogonal())
        self.log_std = tf.Variable(tf.fill([action_size], float(init_log_std)), name="log_std")

    def __call__(self, observation: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        mean = self._mlp(flatten(observation))
        return mean, tf.zeros_like(mean) + self.log_std


@register_numpy_twin(CategoricalPolicy)
def _numpy_categorical_policy(policy: CategoricalPolicy) -> Optional[NumpyLayer]:
    """A `CategoricalPolicy`'s NumPy twin (for acting, see `components.numpy_networks`)."""
    return sequential_twin(FLATTEN, policy._mlp)  # pylint: disable=protected-access


class NumpyGaussianPolicy(NumpyLayer):
    """A `GaussianPolicy`'s NumPy twin: (mean, log_std) [B, D] each."""

    def __init__(self, policy: GaussianPolicy, mean: NumpyLayer):
        super().__init__(mean)
        self._policy = policy
        self._log_std: Optional[np.ndarray] = None

    def read_variables(self) -> None:
        self._log_std = self._policy.log_std.numpy()

    def __call__(self, observation: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        mean = self.sublayers[0](observation)
        return mean, np.zeros_like(mean) + self._log_std


@register_numpy_twin(GaussianPolicy)
def _numpy_gaussian_policy(policy: GaussianPolicy) -> Optional[NumpyLayer]:
    mean = sequential_twin(FLATTEN, policy._mlp)  # pylint: disable=protected-access
    return None if mean is None else NumpyGaussianPolicy(policy, mean)


class ValueCritic(snt.Module):
    """An MLP from the flattened critic input to one value."""

    def __init__(self, hidden_sizes: Sequence[int], name: str = "critic"):
        super().__init__(name=name)
        self._mlp = snt.nets.MLP(list(hidden_sizes) + [1], activation=tf.nn.tanh,
                                 w_init=snt.initializers.Orthogonal())

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        return tf.squeeze(self._mlp(flatten(inputs)), axis=-1)


def make_mlp_networks(observation_spec: specs.Array, action_spec: specs.Array,
                      critic_input_spec: specs.Array, hidden_sizes: Sequence[int] = (64, 64),
                      init_log_std: float = -0.5) -> Tuple[snt.Module, snt.Module]:
    """The default networks: a categorical or Gaussian MLP policy and an MLP critic."""
    del observation_spec, critic_input_spec
    if isinstance(action_spec, specs.DiscreteArray):
        policy = CategoricalPolicy(action_spec.num_values, hidden_sizes)
    else:
        policy = GaussianPolicy(int(np.prod(action_spec.shape)), hidden_sizes, init_log_std)
    return policy, ValueCritic(hidden_sizes)


def mlp_network_factory(hidden_sizes: Sequence[int], init_log_std: float) -> NetworkFactory:
    """`make_mlp_networks` with these sizes (a `NetworkFactory`)."""
    return functools.partial(make_mlp_networks, hidden_sizes=tuple(hidden_sizes),
                             init_log_std=init_log_std)


@dataclasses.dataclass
class MAPPONetworks:
    """Policies and critics by network key, their action heads, and which agent uses which."""

    policies: Dict[str, snt.Module]
    critics: Dict[str, snt.Module]
    heads: Dict[str, Any]
    agent_networks: Dict[str, str]
    # The trainer step of the policies' variables (executors fetch it with them).
    policy_version: tf.Variable = dataclasses.field(
        default_factory=lambda: tf.Variable(0, dtype=tf.int64, trainable=False))

    @property
    def agents_by_network(self) -> Dict[str, List[str]]:
        """Agents grouped by the networks they share, in agent order."""
        return agents_by_network(self.agent_networks)

    def trained_modules(self) -> Dict[str, snt.Module]:
        """Every trained module, by its checkpoint name (`policy/<key>`, `critic/<key>`)."""
        return {**{f"policy/{key}": policy for key, policy in self.policies.items()},
                **{f"critic/{key}": critic for key, critic in self.critics.items()}}


def make_networks(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str],
                  network_factory: NetworkFactory,
                  critic_input_specs: Mapping[str, specs.Array]) -> MAPPONetworks:
    """Builds (and creates the variables of) every policy and critic.

    `critic_input_specs[key]` is the spec of what network `key`'s critic sees per agent.

    Raises:
      ValueError: if agents sharing networks have different specs, on an action
        spec MAPPO cannot act in, or networks whose outputs do not fit the specs.
    """
    policies, critics, heads = {}, {}, {}
    for key, _, observation_spec, action_spec in network_specs(environment_spec, agent_networks):
        heads[key] = make_head(action_spec)
        policy, critic = network_factory(observation_spec, action_spec, critic_input_specs[key])
        refuse_recurrent("MAPPO", key, policy=policy, critic=critic)
        check_outputs(key, policy, critic, observation_spec, action_spec, critic_input_specs[key])
        policies[key], critics[key] = policy, critic
    return MAPPONetworks(policies, critics, heads, dict(agent_networks))


def check_outputs(key: str, policy: snt.Module, critic: snt.Module, observation_spec: specs.Array,
                  action_spec: specs.Array, critic_input_spec: specs.Array) -> None:
    """Calls both networks once (creating their variables) and checks their output shapes.

    Raises:
      ValueError: naming network `key`, if an output does not fit its spec.
    """
    observation = tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype)
    outputs = policy(observation)
    if isinstance(action_spec, specs.DiscreteArray):
        expected, shapes = f"logits of shape (1, {action_spec.num_values})", [outputs.shape]
        fits = tuple(outputs.shape) == (1, action_spec.num_values)
    else:
        size = (1,) + tuple(action_spec.shape)
        expected = f"(mean, log_std) of shape {size} each"
        shapes = [output.shape for output in outputs] if isinstance(outputs, tuple) else [outputs.shape]
        fits = len(shapes) == 2 and all(tuple(shape) == size for shape in shapes)
    if not fits:
        raise ValueError(f"policy {key!r} must return {expected}, got shapes {shapes}")
    value = critic(tf.zeros((1,) + tuple(critic_input_spec.shape), tf.float32))
    if tuple(value.shape) != (1,):
        raise ValueError(f"critic {key!r} must return one value per row, shape (1,), "
                         f"got {tuple(value.shape)}")
