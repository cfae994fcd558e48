"""Recurrent Q-networks for R2D2: MLP torso, LSTM, one Q-value per action; online and target."""

import dataclasses
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems.madqn.networks import observation_to_input
from mava_systems.specs import MAEnvironmentSpec, agents_by_network

# factory(observation_spec, action_spec) -> an `snt.RNNCore` mapping ([B, *obs], state) to
# ([B, num_actions], state), with `initial_state(batch_size)`.
RecurrentQNetworkFactory = Callable[[specs.Array, specs.DiscreteArray], snt.RNNCore]


class RecurrentQNetwork(snt.RNNCore):
    """Flatten, an MLP torso, an LSTM and a linear Q-value head."""

    def __init__(self, num_actions: int, hidden_sizes: Sequence[int] = (64,), lstm_size: int = 64):
        super().__init__(name="recurrent_q_network")
        layers = [snt.Flatten()]
        if hidden_sizes:
            layers.append(snt.nets.MLP(list(hidden_sizes), activate_final=True))
        self._torso = snt.Sequential(layers)
        self._lstm = snt.LSTM(lstm_size)
        self._head = snt.Linear(num_actions)

    def __call__(self, observation: tf.Tensor, state: snt.LSTMState
                 ) -> Tuple[tf.Tensor, snt.LSTMState]:
        embedding, state = self._lstm(self._torso(observation), state)
        return self._head(embedding), state

    def initial_state(self, batch_size: int, **unused_kwargs) -> snt.LSTMState:
        return self._lstm.initial_state(batch_size)


def make_recurrent_q_network(observation_spec: specs.Array, action_spec: specs.DiscreteArray,
                             hidden_sizes: Sequence[int] = (64,),
                             lstm_size: int = 64) -> snt.RNNCore:
    """The default R2D2 network: `RecurrentQNetwork`."""
    del observation_spec
    return RecurrentQNetwork(action_spec.num_values, hidden_sizes, lstm_size)


def unroll(network: snt.RNNCore, observations: tf.Tensor, state) -> Tuple[tf.Tensor, object]:
    """Runs `network` over time-major observations [T, B, ...]: (Q-values [T, B, A], final state)."""
    return snt.dynamic_unroll(network, observation_to_input(observations), state)


@dataclasses.dataclass
class R2D2Networks:
    """Online and target recurrent Q-networks keyed by network key, and which agent uses which."""

    q_networks: Dict[str, snt.RNNCore]
    target_q_networks: Dict[str, snt.RNNCore]
    agent_networks: Dict[str, str]

    @property
    def agents_by_network(self) -> Dict[str, List[str]]:
        """Agents grouped by the network they share, in agent order."""
        return agents_by_network(self.agent_networks)

    def trained_modules(self) -> Dict[str, snt.Module]:
        """Every trained module, by name."""
        return dict(self.q_networks)


def make_networks(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str],
                  network_factory: RecurrentQNetworkFactory) -> R2D2Networks:
    """Builds (and creates the variables of) every online and target network; targets start equal.

    Raises:
      ValueError: on continuous actions or a network whose output does not fit the action spec.
    """
    networks = R2D2Networks({}, {}, dict(agent_networks))
    for key, agents in agents_by_network(agent_networks).items():
        observation_spec = environment_spec.observations[agents[0]].observation
        action_spec = environment_spec.actions[agents[0]]
        if not isinstance(action_spec, specs.DiscreteArray):
            raise ValueError(
                f"R2D2 needs discrete actions, but agent {agents[0]!r} has action spec {action_spec}")
        built = []
        for _ in range(2):
            network = network_factory(observation_spec, action_spec)
            dummy = tf.zeros((1,) + tuple(observation_spec.shape), tf.as_dtype(observation_spec.dtype))
            q_values, _ = network(observation_to_input(dummy), network.initial_state(1))
            if tuple(q_values.shape) != (1, action_spec.num_values):
                raise ValueError(f"network {key!r} outputs shape {tuple(q_values.shape[1:])}, "
                                 f"expected ({action_spec.num_values},)")
            built.append(network)
        networks.q_networks[key], networks.target_q_networks[key] = built
        for target, source in zip(built[1].variables, built[0].variables):
            target.assign(source)
    return networks
