"""Actor-critic networks for IMPALA: logits over actions and a state value, per network key."""

import dataclasses
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems.acting.recurrent_states import refuse_recurrent
from mava_systems.madqn.networks import observation_to_input
from mava_systems.specs import MAEnvironmentSpec, agents_by_network

# factory(observation_spec, action_spec) -> a module mapping [B, *obs] to (logits [B, A], value [B]).
ActorCriticFactory = Callable[[specs.Array, specs.DiscreteArray], snt.Module]


class MLPActorCritic(snt.Module):
    """Two MLPs on the flattened observation: one for the policy's logits, one for the value.

    Separate torsos keep the value loss, whose scale grows with the returns,
    from reshaping the policy's features.
    """

    def __init__(self, num_actions: int, hidden_sizes: Sequence[int] = (64, 64)):
        super().__init__(name="mlp_actor_critic")
        self._policy = snt.Sequential([snt.Flatten(),
                                       snt.nets.MLP(list(hidden_sizes) + [num_actions])])
        self._value = snt.Sequential([snt.Flatten(), snt.nets.MLP(list(hidden_sizes) + [1])])

    def __call__(self, observation: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        return self._policy(observation), tf.squeeze(self._value(observation), axis=-1)


def make_mlp_actor_critic(observation_spec: specs.Array, action_spec: specs.DiscreteArray,
                          hidden_sizes: Sequence[int] = (64, 64)) -> snt.Module:
    """The default IMPALA network: `MLPActorCritic` with `hidden_sizes`."""
    del observation_spec
    return MLPActorCritic(action_spec.num_values, hidden_sizes)


@dataclasses.dataclass
class IMPALANetworks:
    """One actor-critic per network key, and which agent uses which."""

    networks: Dict[str, snt.Module]
    agent_networks: Dict[str, str]

    @property
    def agents_by_network(self) -> Dict[str, List[str]]:
        """Agents grouped by the network they share, in agent order."""
        return agents_by_network(self.agent_networks)

    def trained_modules(self) -> Dict[str, snt.Module]:
        """Every trained module, by name."""
        return dict(self.networks)


def make_networks(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str],
                  network_factory: ActorCriticFactory) -> IMPALANetworks:
    """Builds (and creates the variables of) every actor-critic network.

    Raises:
      ValueError: on continuous actions, or a network whose outputs do not fit
        the action spec.
    """
    networks = {}
    for key, agents in agents_by_network(agent_networks).items():
        observation_spec = environment_spec.observations[agents[0]].observation
        action_spec = environment_spec.actions[agents[0]]
        if not isinstance(action_spec, specs.DiscreteArray):
            raise ValueError(
                f"IMPALA needs discrete actions, but agent {agents[0]!r} has action spec {action_spec}")
        network = network_factory(observation_spec, action_spec)
        refuse_recurrent("IMPALA", key, network=network)
        dummy = tf.zeros((1,) + tuple(observation_spec.shape), tf.as_dtype(observation_spec.dtype))
        logits, value = network(observation_to_input(dummy))
        if tuple(logits.shape) != (1, action_spec.num_values) or tuple(value.shape) != (1,):
            raise ValueError(
                f"network {key!r} must return (logits, value) of shapes ({action_spec.num_values},) "
                f"and () per observation, got {tuple(logits.shape[1:])} and {tuple(value.shape[1:])}")
        networks[key] = network
    return IMPALANetworks(networks, dict(agent_networks))
