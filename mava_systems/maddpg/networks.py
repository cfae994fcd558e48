"""MADDPG's networks: a deterministic policy and a critic per network key, with targets, and
what each agent's critic sees (`CriticInputs`)."""

from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from acme.tf import networks as acme_networks
from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.training.actor_critic import ActorCriticNetworks
from mava_systems.acting.recurrent_states import refuse_recurrent
from mava_systems.madqn.networks import observation_to_input
from mava_systems.specs import MAEnvironmentSpec, agents_by_network, network_specs

# factory(observation_spec, action_spec) -> (policy, critic): the policy maps observations
# [B, *obs] to actions [B, *action] within the spec's bounds; the critic maps its input
# [B, critic input size] (see `CriticInputs`) to values [B] (MADDPG) or to an acme
# `DiscreteValuedDistribution` (MAD4PG).
MADDPGNetworkFactory = Callable[[specs.Array, specs.BoundedArray], Tuple[snt.Module, snt.Module]]


def make_policy(action_spec: specs.BoundedArray, hidden_sizes: Sequence[int]) -> snt.Module:
    """Acme's deterministic policy: a layer-normed MLP, a near-zero-initialised linear layer, and
    tanh squashed to the action spec's bounds."""
    return snt.Sequential([
        snt.Flatten(),
        acme_networks.LayerNormMLP(list(hidden_sizes), activate_final=True),
        acme_networks.NearZeroInitializedLinear(int(np.prod(action_spec.shape))),
        snt.Reshape(tuple(action_spec.shape)),
        acme_networks.TanhToSpec(action_spec),
    ])


def make_default_networks(observation_spec: specs.Array, action_spec: specs.BoundedArray,
                          policy_hidden_sizes: Sequence[int] = (256, 256, 256),
                          critic_hidden_sizes: Sequence[int] = (512, 512, 256)
                          ) -> Tuple[snt.Module, snt.Module]:
    """MADDPG's networks: `make_policy`, and a ReLU MLP critic with one value per row.

    (With a layer-normed critic, as the policy's, MADDPG learnt debug/reach_v0
    far more slowly: its values hardly depended on the actions at first.)
    """
    del observation_spec
    critic = snt.Sequential([
        snt.nets.MLP(list(critic_hidden_sizes) + [1]),
        lambda values: tf.squeeze(values, axis=-1),
    ])
    return make_policy(action_spec, policy_hidden_sizes), critic


def make_distributional_networks(observation_spec: specs.Array, action_spec: specs.BoundedArray,
                                 policy_hidden_sizes: Sequence[int] = (256, 256, 256),
                                 critic_hidden_sizes: Sequence[int] = (512, 512, 256),
                                 vmin: float = -150.0, vmax: float = 150.0, num_atoms: int = 51
                                 ) -> Tuple[snt.Module, snt.Module]:
    """MAD4PG's networks: `make_policy`, and a ReLU MLP critic with Acme's categorical head
    (`DiscreteValuedHead`, as DMPO's critic) over `num_atoms` values in [vmin, vmax]."""
    del observation_spec
    critic = snt.Sequential([
        snt.nets.MLP(list(critic_hidden_sizes), activate_final=True),
        acme_networks.DiscreteValuedHead(vmin, vmax, num_atoms),
    ])
    return make_policy(action_spec, policy_hidden_sizes), critic


class MADDPGNetworks(ActorCriticNetworks):
    """Online and target deterministic policies and critics, by network key."""


def _flat(values: tf.Tensor) -> tf.Tensor:
    """[B, ...] -> [B, prod(...)] float32."""
    values = observation_to_input(values)
    return tf.reshape(values, [tf.shape(values)[0], -1])


class CriticInputs:
    """What each agent's critic sees, by architecture, built from stacked replay data.

    Data come stacked per network key (`{key: [B, A_k, ...]}`, see `AgentStacker`);
    the critic of network key k is evaluated for its A_k agents at once
    (`{key: [B, A_k, input size]}`). Per agent i, the input is:
      - "decentralised": i's observation (flattened), then i's action;
      - "centralised": i's one-hot index among the agents sharing the critic (when
        several do), then every agent's observation, then every agent's action;
      - "state": i's one-hot index (when shared), the global state, every agent's action;
    "every agent" in the environment's agent order, always the same.
    With `own_actions`, agent i's own action is replaced by `own_actions[k][:, i]` in
    its own input only (the others keep theirs): the actor's gradient for agent i
    goes through its critic with its current policy's action and the others' from replay.
    """

    def __init__(self, architecture: str, environment_spec: MAEnvironmentSpec,
                 agent_networks: Mapping[str, str], state_spec: Optional[specs.Array] = None):
        if architecture == "state" and state_spec is None:
            raise ValueError("a 'state' critic needs the environment's global state")
        self.architecture = architecture
        self.agents: List[str] = list(environment_spec.agents)
        self.agents_by_network = agents_by_network(agent_networks)
        self._place = {agent: (key, index) for key, agents in self.agents_by_network.items()
                       for index, agent in enumerate(agents)}
        self._observation_sizes = {agent: int(np.prod(environment_spec.observations[agent]
                                                      .observation.shape))
                                   for agent in self.agents}
        self._action_sizes = {agent: int(np.prod(environment_spec.actions[agent].shape))
                              for agent in self.agents}
        self._state_size = None if state_spec is None else int(np.prod(state_spec.shape))

    def input_size(self, key: str) -> int:
        """The length of network `key`'s critic input vector."""
        agents = self.agents_by_network[key]
        if self.architecture == "decentralised":
            return self._observation_sizes[agents[0]] + self._action_sizes[agents[0]]
        size = sum(self._action_sizes.values()) + (len(agents) if len(agents) > 1 else 0)
        if self.architecture == "centralised":
            return size + sum(self._observation_sizes.values())
        return size + self._state_size

    def __call__(self, observations: Mapping[str, tf.Tensor], actions: Mapping[str, tf.Tensor],
                 states: Optional[tf.Tensor] = None,
                 own_actions: Optional[Mapping[str, tf.Tensor]] = None) -> Dict[str, tf.Tensor]:
        """{key: [B, A_k, input size]} from observations and actions {key: [B, A_k, ...]} and
        (for "state") the global states [B, ...]."""
        if self.architecture == "decentralised":
            return {key: tf.concat([self._rows(observations[key]),
                                    self._rows((own_actions or actions)[key])], axis=-1)
                    for key in self.agents_by_network}
        if self.architecture == "centralised":
            shared = [self._agent_column(observations, agent) for agent in self.agents]
        else:
            shared = [_flat(states)]
        inputs = {}
        for key, agents in self.agents_by_network.items():
            num_rows = len(agents)
            columns = [tf.tile(column[:, None], [1, num_rows, 1]) for column in shared]
            for agent in self.agents:
                action = self._agent_column(actions, agent)[:, None]
                owner, index = self._place[agent]
                if own_actions is not None and owner == key:
                    # Row `index` (the agent's own) takes its own action; others keep replay's.
                    own = self._agent_column(own_actions, agent)[:, None]
                    mask = tf.one_hot(index, num_rows)[None, :, None]
                    action = action + mask * (own - action)
                columns.append(action * tf.ones([1, num_rows, 1]))
            if num_rows > 1:
                batch = tf.shape(columns[0])[0]
                columns.insert(0, tf.tile(tf.eye(num_rows)[None], [batch, 1, 1]))
            inputs[key] = tf.concat(columns, axis=-1)
        return inputs

    def _agent_column(self, stacked: Mapping[str, tf.Tensor], agent: str) -> tf.Tensor:
        key, index = self._place[agent]
        return _flat(stacked[key][:, index])

    @staticmethod
    def _rows(stacked: tf.Tensor) -> tf.Tensor:
        """[B, A, ...] -> [B, A, prod(...)] float32."""
        shape = tf.shape(stacked)
        return tf.reshape(observation_to_input(stacked), tf.concat([shape[:2], [-1]], axis=0))


def make_networks(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str],
                  network_factory: MADDPGNetworkFactory, critic_inputs: CriticInputs,
                  distributional: bool) -> MADDPGNetworks:
    """Builds (and creates the variables of) every online and target network; targets start equal.

    Raises:
      ValueError: on discrete actions, on agents sharing a network with different
        specs, or on networks that do not fit the specs.
    """
    networks = MADDPGNetworks({}, {}, {}, {}, dict(agent_networks))
    for key, _, observation_spec, action_spec in network_specs(environment_spec, agent_networks):
        for online in (True, False):
            policy, critic = _build(network_factory, observation_spec, action_spec,
                                    critic_inputs.input_size(key), distributional, key)
            if online:
                networks.policies[key], networks.critics[key] = policy, critic
            else:
                networks.target_policies[key], networks.target_critics[key] = policy, critic
    networks.copy_to_targets()
    return networks


def check_continuous_actions(environment_spec: MAEnvironmentSpec, system: str) -> None:
    """Raises ValueError, pointing to the discrete-action systems, unless every agent's actions
    are a bounded float array."""
    for agent in environment_spec.agents:
        action_spec = environment_spec.actions[agent]
        if isinstance(action_spec, specs.DiscreteArray) or not isinstance(action_spec,
                                                                         specs.BoundedArray):
            raise ValueError(
                f"{system} needs continuous actions (bounded float arrays), but agent {agent!r} "
                f"has action spec {action_spec}; use a discrete-action system: MADQN, QMIX or "
                "MAPPO")


def _build(network_factory: MADDPGNetworkFactory, observation_spec: specs.Array,
           action_spec: specs.BoundedArray, critic_input_size: int, distributional: bool,
           key: str) -> Tuple[snt.Module, snt.Module]:
    policy, critic = network_factory(observation_spec, action_spec)
    refuse_recurrent("MADDPG", key, policy=policy, critic=critic)
    observation = tf.zeros((1,) + tuple(observation_spec.shape), tf.float32)
    action = policy(observation)
    if tuple(action.shape) != (1,) + tuple(action_spec.shape):
        raise ValueError(f"network {key!r}: the policy returns actions of shape "
                         f"{tuple(action.shape[1:])}, expected {tuple(action_spec.shape)}")
    value = critic(tf.zeros([1, critic_input_size], tf.float32))
    if distributional and not isinstance(value, acme_networks.DiscreteValuedDistribution):
        raise ValueError(f"network {key!r}: MAD4PG's critic must return an acme "
                         f"DiscreteValuedDistribution, got {type(value).__name__}")
    if not distributional and tuple(np.shape(value)) != (1,):
        raise ValueError(f"network {key!r}: the critic returns shape {tuple(np.shape(value))} "
                         "for one input row; expected one value per row, shape (1,)")
    return policy, critic
