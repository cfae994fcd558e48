"""MAPPO executors: sample each agent's action from its policy; replay gets the behaviour
log-probabilities, the policy's version and (for a centralised critic) the global state."""

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf
import tree

from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.acting.numpy_networks import NumpyNetworks
from mava_systems.acting.recurrent_states import RecurrentStates, present_rows
from mava_systems.madqn.execution import MADQNExecutor, RecurrentMADQNExecutor
from mava_systems.mappo.networks import MAPPONetworks
from wrappers import OLT

# Keys of the observation nest replay stores at each step (see `MAPPOExecutor` and
# `RecurrentMAPPOExecutor`).
AGENTS = "agents"
POLICY_STATE = "policy_state"
CRITIC_STATE = "critic_state"


class MAPPOExecutor(MADQNExecutor):
    """Acts with the policies (greedily when evaluating) and writes sequences to replay.

    Each stored step's observation is `{"agents": per-network stacked OLTs}`,
    plus the environment's extras (e.g. `"env_state"`) when `stores_state`
    (replay needs them at every step, the bootstrap step included, so they go
    with the observation rather than with the per-action extras). The extras
    of each step are the log-probability of every agent's action and
    `policy_version`, the trainer step of the variables it acted with.

    With the default policies it acts in NumPy (see `MADQNExecutor`), through
    the NumPy twins of the policies and of their heads.
    """

    def __init__(
        self,
        networks: MAPPONetworks,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
        greedy: bool = False,
        stores_state: bool = False,
    ):
        super().__init__(networks, ConstantEpsilon(0.0), adder, variable_client, seed)
        self._greedy = greedy
        self._stores_state = stores_state and adder is not None
        self._log_probs: Dict[str, np.ndarray] = {}
        self._acting_version = 0  # The policy version the last actions were chosen with.
        self._environment_extras: Mapping[str, Any] = {}
        self._numpy_heads = {key: head.numpy() for key, head in networks.heads.items()}
        self._numpy_policy_version = self._read_policy_version()

    def acting_modules(self) -> Mapping[str, Any]:
        """The policies, by network key."""
        return self._networks.policies

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor):
        del epsilon  # The policy explores by sampling.
        return self._policy_with(observations, self._networks.policies, self._networks.heads,
                                 self._generator)

    def _numpy_policy(self, observations: Dict[str, OLT], epsilon: float):
        del epsilon
        return self._policy_with(observations, self._numpy_networks, self._numpy_heads,
                                 self._rng)

    def _policy_with(self, observations: Dict[str, OLT], policies: Mapping[str, Any],
                     heads: Mapping[str, Any], random: Any) -> Dict[str, Tuple[Any, Any]]:
        """{key: (action, its log-probability)} with these policies and heads (TensorFlow's or
        their NumPy twins), drawing from `random` (their generator)."""
        return {key: self._choose(heads[key], policies[key](observation.observation),
                                  observation.legal_actions, random)
                for key, observation in observations.items()}

    def _choose(self, head: Any, policy_outputs: Any, legal_actions: Any,
                random: Any) -> Tuple[Any, Any]:
        """(action, its log-probability): sampled, or the most likely when greedy."""
        if self._greedy:
            action = head.greedy(policy_outputs, legal_actions)
            return action, head.log_prob(policy_outputs, legal_actions, action)
        return head.sample(policy_outputs, legal_actions, random)

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action; keeps the log-probabilities."""
        return self.actions_from_outputs(self.policy_outputs(self._stack_observation(observations)))

    def actions_from_outputs(self, outputs: Any, actor: Optional["MAPPOExecutor"] = None
                             ) -> Dict[str, np.ndarray]:
        """The actions in the policy's outputs; keeps their log-probabilities and the version of
        the policy (`actor`'s, if another executor acted) for `observe`."""
        self._log_probs = {key: log_prob for key, (_, log_prob) in outputs.items()}
        self._acting_version = (actor or self).policy_version
        return self._stacker.unstack({key: action for key, (action, _) in outputs.items()})

    @property
    def policy_version(self) -> int:
        """The trainer step of the policy variables this executor acts with."""
        if self.acts_in_numpy:  # Read with the NumPy weights.
            return self._numpy_policy_version
        return self._read_policy_version()

    def _read_policy_version(self) -> int:
        return int(self._networks.policy_version.numpy())

    def _weights_refreshed(self) -> None:
        self._numpy_policy_version = self._read_policy_version()

    @property
    def observes_extras(self) -> bool:
        """Whether the loop passes the environment's extras: when replay stores the state."""
        return self._stores_state

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode in replay."""
        self._sync_numpy_weights(new_episode=True)
        if self._adder is not None:
            self._adder.add_first(self._stored_timestep(timestep, extras))

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step with the log-probabilities and policy version it was chosen with."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(self._stacker.stack(actions),
                            self._stored_timestep(next_timestep, extras),
                            extras={"log_prob": self._log_probs,
                                    "policy_version": np.int64(self._acting_version)})

    def _stored_timestep(self, timestep: dm_env.TimeStep,
                         extras: Optional[Mapping[str, Any]]) -> dm_env.TimeStep:
        stacked = self._stack_timestep(timestep)
        observation = {AGENTS: stacked.observation}
        if self._stores_state:
            if extras is None:
                raise ValueError("this executor stores the environment's extras; got none")
            observation.update(extras)
        return stacked._replace(observation=observation)


def critic_input_rows(stacked: Mapping[str, OLT], key: str, global_state: Optional[np.ndarray]
                      ) -> np.ndarray:
    """What network `key`'s critic sees, [agents, C] float32, as the trainer builds it
    (`MAPPOTrainer.critic_inputs`): each agent's flattened observation, after `global_state`
    (flattened) when there is one (a centralised critic)."""
    own = np.asarray(stacked[key].observation, np.float32)
    own = own.reshape(own.shape[0], -1)
    if global_state is None:
        return own
    state = np.asarray(global_state, np.float32).reshape(1, -1)
    return np.concatenate([np.repeat(state, own.shape[0], axis=0), own], axis=-1)


class RecurrentMAPPOExecutor(MAPPOExecutor, RecurrentMADQNExecutor):
    """MAPPO's executor for recurrent policies and critics: every agent's states carry through
    its episode.

    Policy states are handled as `RecurrentMADQNExecutor` handles its
    Q-networks' (reset exactly when an episode starts, frozen for agents that
    have left, NumPy twins when the networks have them, greedy evaluation the
    same way). Replay stores, with each observation, the policy state the
    agents act from there (`"policy_state"`). With recurrent critics, an
    executor writing to replay also steps each critic on what it sees at every
    observation (the global state and the agent's observation when
    `centralised`) and stores the critic state their value is computed from
    (`"critic_state"`): the trainer unrolls its chunks from them. MLP critics
    (`MAPPONetworks.recurrent_critics` False) are not stepped here.
    """

    def __init__(self, networks: MAPPONetworks, *args: Any, centralised: bool = False,
                 **kwargs: Any):
        """`MAPPOExecutor`'s arguments, and whether the critics are `centralised` (MAPPO's)."""
        super().__init__(networks, *args, **kwargs)
        self._centralised = centralised
        self._steps_critics = networks.recurrent_critics
        self.critic_states = (RecurrentStates(self.initial_critic_states)
                              if self._steps_critics else None)
        self._numpy_critics = (NumpyNetworks.of(networks.critics, self._variable_client)
                               if self.acts_in_numpy and self._steps_critics else None)
        self._critic_step: Optional[Callable[..., Any]] = None  # Compiled on first use.

    @property
    def steps_critics(self) -> bool:
        """Whether the critics are recurrent, stepped (and their states stored) by executors."""
        return self._steps_critics

    def initial_states(self) -> Dict[str, Any]:
        """Every policy's initial state, one row per agent using it."""
        return self._initial(self._networks.policies)

    def initial_critic_states(self) -> Dict[str, Any]:
        """Every critic's initial state, one row per agent using it."""
        return self._initial(self._networks.critics)

    def _initial(self, modules: Mapping[str, Any]) -> Dict[str, Any]:
        return {key: modules[key].initial_state(len(agents))
                for key, agents in self._stacker.agents_by_network.items()}

    def _batched_policy(self, observations: Dict[str, OLT], states: Dict[str, Any],
                        epsilon: tf.Tensor):
        del epsilon  # The policy explores by sampling.
        return self._recurrent_policy_with(observations, states, self._networks.policies,
                                           self._networks.heads, self._generator)

    def _numpy_policy(self, observations: Dict[str, OLT], states: Dict[str, Any],
                      epsilon: float):
        del epsilon
        return self._recurrent_policy_with(observations, states, self._numpy_networks,
                                           self._numpy_heads, self._rng)

    def _recurrent_policy_with(self, observations: Dict[str, OLT], states: Dict[str, Any],
                               policies: Mapping[str, Any], heads: Mapping[str, Any],
                               random: Any) -> Tuple[Dict[str, Tuple[Any, Any]], Dict[str, Any]]:
        """({key: (action, log-probability)}, new states), as `_policy_with`."""
        outputs, new_states = {}, {}
        for key, observation in observations.items():
            policy_outputs, new_states[key] = policies[key](observation.observation, states[key])
            outputs[key] = self._choose(heads[key], policy_outputs, observation.legal_actions,
                                        random)
        return outputs, new_states

    def actions_from_outputs(self, outputs: Any, actor: Optional[MAPPOExecutor] = None
                             ) -> Dict[str, np.ndarray]:
        """The actions in the policy's (outputs, new states), advancing the agents' policy states;
        keeps what `MAPPOExecutor.actions_from_outputs` keeps."""
        outputs, new_states = outputs
        self.advance_states(new_states)
        return super().actions_from_outputs(outputs, actor)

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode: every policy and critic state reset, the first observation in
        replay with them."""
        self._start_episode(timestep)
        if self._steps_critics:
            self.critic_states.reset()
        if self._adder is not None:
            self._adder.add_first(self._stored_timestep(timestep, extras))
            self._advance_critics(timestep, extras, new_episode=True)

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step (see `MAPPOExecutor.observe`), the next observation with the states
        the agents act and are valued from there."""
        super().observe(actions, next_timestep, extras)
        if self._adder is not None:
            self._advance_critics(next_timestep, extras)

    def _stored_timestep(self, timestep: dm_env.TimeStep,
                         extras: Optional[Mapping[str, Any]]) -> dm_env.TimeStep:
        stored = super()._stored_timestep(timestep, extras)
        states = {POLICY_STATE: self.states.current}
        if self._steps_critics:
            states[CRITIC_STATE] = self.critic_states.current
        return stored._replace(observation={**stored.observation, **states})

    def _advance_critics(self, timestep: dm_env.TimeStep, extras: Optional[Mapping[str, Any]],
                         new_episode: bool = False) -> None:
        """Steps every recurrent critic on what it sees at `timestep`'s observation."""
        if not self._steps_critics:
            return
        stacked = self._stack_observation(timestep.observation)
        global_state = None
        if self._centralised:
            if self._stores_state:
                global_state = extras["env_state"]
            else:  # The concatenation of every agent's observation, networks in sorted order.
                global_state = np.concatenate([
                    np.asarray(stacked[key].observation, np.float32).reshape(-1)
                    for key in sorted(stacked)])
        new_states = self.stepped_critic_states(self.critic_inputs(stacked, global_state),
                                                self.critic_states.current, new_episode)
        self.critic_states.advance(new_states, self.critic_present_rows(stacked))

    def stepped_critic_states(self, inputs: Mapping[str, np.ndarray], states: Mapping[str, Any],
                              new_episode: bool = False) -> Dict[str, Any]:
        """Every critic's new states after seeing `inputs` from `states` (rows by critic key),
        as NumPy arrays: through the NumPy twins when acting in NumPy, else compiled."""
        if self._numpy_critics is not None:
            self._numpy_critics.sync(new_episode)
            return {key: self._numpy_critics[key](inputs[key], states[key])[1] for key in inputs}
        if self._critic_step is None:
            self._critic_step = tf.function(lambda inputs, states: {
                key: self._networks.critics[key](inputs[key], states[key])[1] for key in inputs})
        return tree.map_structure(np.asarray, self._critic_step(dict(inputs), dict(states)))

    def critic_inputs(self, stacked: Mapping[str, OLT], global_state: Optional[np.ndarray]
                      ) -> Dict[str, np.ndarray]:
        """What each critic sees at an observation, by critic key: [rows, C] (see
        `critic_input_rows`); `global_state` is None unless the critics are centralised."""
        return {key: critic_input_rows(stacked, key, global_state) for key in stacked}

    def critic_present_rows(self, stacked: Mapping[str, OLT]) -> Dict[str, np.ndarray]:
        """Which rows of each critic's state advance at an observation (see `present_rows`)."""
        return present_rows(stacked)
