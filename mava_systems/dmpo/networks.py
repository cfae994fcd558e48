"""DMPO's networks: a Gaussian policy and a distributional critic per network key, with targets."""

from typing import Callable, Mapping, Sequence

from acme.tf import networks as acme_networks
from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems.training.actor_critic import ActorCriticNetworks
from mava_systems.acting.recurrent_states import refuse_recurrent
from mava_systems.madqn.networks import observation_to_input
from mava_systems.specs import MAEnvironmentSpec, agents_by_network

# factory(observation_spec, action_spec) -> (policy, critic): the policy maps [B, *obs] to a
# distribution over [B, action_dim]; the critic maps ([B, *obs], [B, action_dim]) to an
# acme `DiscreteValuedDistribution`.
DMPONetworkFactory = Callable[[specs.Array, specs.BoundedArray], tuple]


def make_default_networks(observation_spec: specs.Array, action_spec: specs.BoundedArray,
                          policy_hidden_sizes: Sequence[int] = (256, 256),
                          critic_hidden_sizes: Sequence[int] = (256, 256),
                          vmin: float = -150.0, vmax: float = 150.0, num_atoms: int = 51,
                          init_scale: float = 0.7) -> tuple:
    """Acme's DMPO networks: layer-normed MLPs, a diagonal Gaussian head and a categorical critic."""
    del observation_spec
    num_dimensions = action_spec.shape[0]
    policy = snt.Sequential([
        snt.Flatten(),
        acme_networks.LayerNormMLP(list(policy_hidden_sizes), activate_final=True),
        acme_networks.MultivariateNormalDiagHead(num_dimensions, init_scale=init_scale,
                                                 use_tfd_independent=True),
    ])
    critic = snt.Sequential([
        acme_networks.CriticMultiplexer(
            observation_network=snt.Flatten(),
            critic_network=acme_networks.LayerNormMLP(list(critic_hidden_sizes),
                                                      activate_final=True),
            action_network=acme_networks.ClipToSpec(action_spec)),
        acme_networks.DiscreteValuedHead(vmin, vmax, num_atoms),
    ])
    return policy, critic


# DMPO trains the shared actor-critic networks (its name kept for its users).
DMPONetworks = ActorCriticNetworks


def _build(network_factory: DMPONetworkFactory, observation_spec: specs.Array,
           action_spec: specs.BoundedArray, key: str) -> tuple:
    policy, critic = network_factory(observation_spec, action_spec)
    refuse_recurrent("DMPO", key, policy=policy, critic=critic)
    observation = observation_to_input(
        tf.zeros((1,) + tuple(observation_spec.shape), tf.as_dtype(observation_spec.dtype)))
    action = policy(observation).sample()
    if tuple(action.shape) != (1,) + tuple(action_spec.shape):
        raise ValueError(f"network {key!r}: the policy samples actions of shape "
                         f"{tuple(action.shape[1:])}, expected {tuple(action_spec.shape)}")
    value = critic(observation, action)
    if not isinstance(value, acme_networks.DiscreteValuedDistribution):
        raise ValueError(f"network {key!r}: the critic must return an acme "
                         f"DiscreteValuedDistribution, got {type(value).__name__}")
    return policy, critic


def make_networks(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str],
                  network_factory: DMPONetworkFactory) -> DMPONetworks:
    """Builds (and creates the variables of) every online and target network; targets start equal.

    Raises:
      ValueError: on discrete actions, or networks that do not fit the specs.
    """
    networks = DMPONetworks({}, {}, {}, {}, dict(agent_networks))
    for key, agents in agents_by_network(agent_networks).items():
        observation_spec = environment_spec.observations[agents[0]].observation
        action_spec = environment_spec.actions[agents[0]]
        if isinstance(action_spec, specs.DiscreteArray) or not isinstance(action_spec,
                                                                         specs.BoundedArray):
            raise ValueError(f"DMPO needs continuous (bounded float) actions, but agent "
                             f"{agents[0]!r} has action spec {action_spec}")
        networks.policies[key], networks.critics[key] = _build(
            network_factory, observation_spec, action_spec, key)
        networks.target_policies[key], networks.target_critics[key] = _build(
            network_factory, observation_spec, action_spec, key)
    networks.copy_to_targets()
    return networks
