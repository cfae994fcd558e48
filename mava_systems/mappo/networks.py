"""MAPPO's networks: a policy and a critic per network key (agents of one type share both)."""

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.acting.numpy_networks import (FLATTEN, NumpyLayer, numpy_twin,
                                                register_numpy_twin, sequential_twin)
from mava_systems.acting.recurrent_states import is_recurrent
from mava_systems.training.recurrent_unroll import gru_unroll_from_stored
from mava_systems.madqn.networks import observation_to_input
from mava_systems.mappo.policies import make_head
from mava_systems.specs import MAEnvironmentSpec, agents_by_network, network_specs

# network_factory(observation_spec, action_spec, critic_input_spec) -> (policy, critic):
# the policy maps observations [B, *obs] to logits [B, num_actions] (discrete actions) or to
# (mean, log_std) [B, D] each (continuous); the critic maps its inputs [B, S] to values [B].
# With `MAPPOConfig(recurrent=True)` both are `snt.RNNCore`s: (inputs, state) -> (outputs, state).
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
    """A `CategoricalPolicy`'s NumPy twin (for acting, see `acting.numpy_networks`)."""
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


class RecurrentMLPCore(snt.RNNCore):
    """The reference recurrent policy or critic (the MAPPO paper's): flatten, ReLU input
    layer(s), a GRU and a linear head; `(inputs [B, ...], state [B, gru_size]) -> (outputs,
    new state)`, the outputs shaped by `outputs` (a subclass's)."""

    def __init__(self, input_sizes: Sequence[int], gru_size: int, output_size: int, name: str):
        super().__init__(name=name)
        self.input_layer = snt.nets.MLP(list(input_sizes), activate_final=True, name="input_layer")
        self.gru = snt.GRU(gru_size, name="gru")
        self.head = snt.Linear(output_size, name="head",
                               w_init=snt.initializers.Orthogonal(gain=0.01))

    def __call__(self, inputs: tf.Tensor, state: tf.Tensor) -> Tuple[Any, tf.Tensor]:
        output, state = self.gru(self.input_layer(flatten(inputs)), state)
        return self.outputs(self.head(output)), state

    def outputs(self, head_output: Any) -> Any:
        """The core's outputs from its head's (TensorFlow tensors, or NumPy arrays in the NumPy
        twin unless the core has a `log_std`): as they are."""
        return head_output

    def initial_state(self, batch_size: int, **unused_kwargs: Any) -> tf.Tensor:
        """Zeros: the state at every episode start."""
        return self.gru.initial_state(batch_size)

    def unroll_from_stored(self, inputs: tf.Tensor, stored_states: tf.Tensor, resets: tf.Tensor,
                           present: tf.Tensor) -> Any:
        """The core's outputs [T, N, ...] over time-major `inputs` [T, N, ...], the states
        taken from `stored_states` as `gru_unroll_from_stored` takes them: the input layers
        and head applied to every step at once, only the GRU stepped."""
        leading = tf.shape(inputs)[:2]
        embeddings = self.input_layer(flatten(tf.reshape(
            inputs, tf.concat([[-1], tf.shape(inputs)[2:]], 0))))
        embeddings = tf.reshape(embeddings, tf.concat([leading, [embeddings.shape[-1]]], 0))
        outputs, _ = gru_unroll_from_stored(self.gru, embeddings, stored_states, resets, present)
        outputs = self.outputs(self.head(tf.reshape(outputs, [-1, outputs.shape[-1]])))
        return tf.nest.map_structure(
            lambda output: tf.reshape(output, tf.concat([leading, tf.shape(output)[1:]], 0)),
            outputs)


class RecurrentCategoricalPolicy(RecurrentMLPCore):
    """A `RecurrentMLPCore` with one logit per action."""

    def __init__(self, num_actions: int, input_sizes: Sequence[int], gru_size: int,
                 name: str = "recurrent_policy"):
        super().__init__(input_sizes, gru_size, num_actions, name)


class RecurrentGaussianPolicy(RecurrentMLPCore):
    """A `RecurrentMLPCore` with the mean of each action dimension, and a learnt log standard
    deviation per dimension (as `GaussianPolicy`'s)."""

    def __init__(self, action_size: int, input_sizes: Sequence[int], gru_size: int,
                 init_log_std: float, name: str = "recurrent_policy"):
        super().__init__(input_sizes, gru_size, action_size, name)
        self.log_std = tf.Variable(tf.fill([action_size], float(init_log_std)), name="log_std")

    def outputs(self, head_output: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """(mean, log_std), each [B, D]."""
        return head_output, tf.zeros_like(head_output) + self.log_std


class RecurrentValueCritic(RecurrentMLPCore):
    """A `RecurrentMLPCore` with one value: `(inputs [B, S], state) -> (values [B], state)`."""

    def __init__(self, input_sizes: Sequence[int], gru_size: int, name: str = "recurrent_critic"):
        super().__init__(input_sizes, gru_size, 1, name)

    def outputs(self, head_output: Any) -> Any:
        return head_output[:, 0]


class NumpyRecurrentMLPCore(NumpyLayer):
    """A `RecurrentMLPCore`'s NumPy twin: `(inputs, state) -> (outputs, new state)`."""

    def __init__(self, core: RecurrentMLPCore, *sublayers: NumpyLayer):
        super().__init__(*sublayers)
        self._core = core
        self._log_std: Optional[np.ndarray] = None

    def read_variables(self) -> None:
        if isinstance(self._core, RecurrentGaussianPolicy):
            self._log_std = self._core.log_std.numpy()

    def __call__(self, inputs: np.ndarray, state: np.ndarray = None) -> Any:
        input_layer, gru, head = self.sublayers
        output, state = gru(input_layer(np.asarray(inputs, np.float32)), state)
        output = head(output)
        if self._log_std is not None:
            return (output, np.zeros_like(output) + self._log_std), state
        return self._core.outputs(output), state


def _numpy_recurrent_core(core: RecurrentMLPCore) -> Optional[NumpyLayer]:
    """A `RecurrentMLPCore`'s NumPy twin (for acting, see `acting.numpy_networks`)."""
    parts = (sequential_twin(FLATTEN, core.input_layer), numpy_twin(core.gru),
             numpy_twin(core.head))
    return None if any(part is None for part in parts) else NumpyRecurrentMLPCore(core, *parts)


for _core_type in (RecurrentCategoricalPolicy, RecurrentGaussianPolicy, RecurrentValueCritic):
    register_numpy_twin(_core_type)(_numpy_recurrent_core)


def make_recurrent_networks(observation_spec: specs.Array, action_spec: specs.Array,
                            critic_input_spec: specs.Array, input_sizes: Sequence[int] = (64,),
                            gru_size: int = 64, init_log_std: float = -0.5,
                            critic_hidden_sizes: Optional[Sequence[int]] = None
                            ) -> Tuple[snt.RNNCore, snt.Module]:
    """The reference recurrent networks: a categorical or Gaussian recurrent policy (see
    `RecurrentMLPCore`), and a recurrent critic of the same layout, or with
    `critic_hidden_sizes` an MLP critic of those sizes (see `ValueCritic`)."""
    del observation_spec, critic_input_spec
    if isinstance(action_spec, specs.DiscreteArray):
        policy = RecurrentCategoricalPolicy(action_spec.num_values, input_sizes, gru_size)
    else:
        policy = RecurrentGaussianPolicy(int(np.prod(action_spec.shape)), input_sizes, gru_size,
                                         init_log_std)
    if critic_hidden_sizes is not None:
        return policy, ValueCritic(critic_hidden_sizes)
    return policy, RecurrentValueCritic(input_sizes, gru_size)


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


def recurrent_network_factory(input_sizes: Sequence[int], gru_size: int, init_log_std: float,
                              critic_hidden_sizes: Optional[Sequence[int]] = None
                              ) -> NetworkFactory:
    """`make_recurrent_networks` with these sizes (a `NetworkFactory`)."""
    return functools.partial(
        make_recurrent_networks, input_sizes=tuple(input_sizes), gru_size=gru_size,
        init_log_std=init_log_std,
        critic_hidden_sizes=None if critic_hidden_sizes is None else tuple(critic_hidden_sizes))


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
    def recurrent(self) -> bool:
        """Whether the policies and critics are recurrent cores (called with a state)."""
        return any(is_recurrent(policy) for policy in self.policies.values())

    @property
    def recurrent_critics(self) -> bool:
        """Whether the critics are recurrent cores (a recurrent policy may have an MLP critic)."""
        return any(is_recurrent(critic) for critic in self.critics.values())

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
                  critic_input_specs: Mapping[str, specs.Array],
                  recurrent: bool = False,
                  recurrent_critic: Optional[bool] = None) -> MAPPONetworks:
    """Builds (and creates the variables of) every policy and critic.

    `critic_input_specs[key]` is the spec of what network `key`'s critic sees per agent.
    With `recurrent`, every policy must be an `snt.RNNCore`; without it, none may be. Every
    critic must be one with `recurrent_critic` (None: as `recurrent`), and none without it.

    Raises:
      ValueError: if agents sharing networks have different specs, on an action
        spec MAPPO cannot act in, networks whose outputs do not fit the specs, or
        a network that is (or is not) recurrent against `recurrent` (`recurrent_critic`).
    """
    recurrent_critic = recurrent if recurrent_critic is None else recurrent_critic
    policies, critics, heads = {}, {}, {}
    for key, _, observation_spec, action_spec in network_specs(environment_spec, agent_networks):
        heads[key] = make_head(action_spec)
        policy, critic = network_factory(observation_spec, action_spec, critic_input_specs[key])
        check_recurrent(key, "policy", policy, recurrent)
        check_recurrent(key, "critic", critic, recurrent_critic,
                        "recurrent_critic" if recurrent else "recurrent")
        check_outputs(key, policy, critic, observation_spec, action_spec, critic_input_specs[key])
        policies[key], critics[key] = policy, critic
    return MAPPONetworks(policies, critics, heads, dict(agent_networks))


def check_recurrent(key: str, role: str, network: snt.Module, recurrent: bool,
                    switch: str = "recurrent") -> None:
    """Raises ValueError if network `key`'s `network` (its `role`: "policy" or "critic") is, or
    is not, a recurrent core against the config's `switch` setting (`recurrent`, or
    `recurrent_critic` for the critic of recurrent policies), whose value is `recurrent`."""
    if is_recurrent(network) and not recurrent:
        raise ValueError(
            f"network {key!r}'s {role} ({type(network).__name__}) is a recurrent core (an "
            f"snt.RNNCore, called with a state): set the config's {switch}=True to train it "
            "on chunks with its stored states")
    if recurrent and not is_recurrent(network):
        given = " and ".join(dict.fromkeys([f"{switch}=True", "recurrent=True"]))
        raise ValueError(
            f"the config has {given}, but network {key!r}'s {role} "
            f"({type(network).__name__}) is not a recurrent core: give a network_factory "
            f"returning a recurrent {role} (an snt.RNNCore), or leave it None for the "
            "reference networks")


def _call_once(network: snt.Module, inputs: tf.Tensor) -> Any:
    """The network's outputs on `inputs` (from its initial state, if recurrent)."""
    if is_recurrent(network):
        return network(inputs, network.initial_state(int(inputs.shape[0])))[0]
    return network(inputs)


def check_outputs(key: str, policy: snt.Module, critic: snt.Module, observation_spec: specs.Array,
                  action_spec: specs.Array, critic_input_spec: specs.Array) -> None:
    """Calls both networks once (creating their variables) and checks their output shapes.

    Raises:
      ValueError: naming network `key`, if an output does not fit its spec.
    """
    observation = tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype)
    outputs = _call_once(policy, observation)
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
    value = _call_once(critic, tf.zeros((1,) + tuple(critic_input_spec.shape), tf.float32))
    if tuple(value.shape) != (1,):
        raise ValueError(f"critic {key!r} must return one value per row, shape (1,), "
                         f"got {tuple(value.shape)}")
