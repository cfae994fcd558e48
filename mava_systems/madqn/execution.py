"""MADQN executors: epsilon-greedy over legal actions, one batched forward pass per network."""

from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf

from mava_systems.acting.numpy_networks import NumpyNetworks
from mava_systems.acting.multi_environment import row_generator
from mava_systems.acting.recurrent_states import RecurrentStates, present_rows
from mava_systems.data.stacking import AgentStacker
from mava_systems.madqn.networks import (MADQNNetworks, legal_action_mask, mask_illegal,
                                         numpy_legal_action_mask, observation_to_input)
from wrappers import OLT

ExplorationSchedule = Callable[[int], float]


def epsilon_greedy(q_values: tf.Tensor, legal_actions: tf.Tensor, epsilon: tf.Tensor,
                   generator: tf.random.Generator) -> tf.Tensor:
    """Greedy legal action with probability 1 - epsilon, else a uniformly random legal one.

    Rows with no legal action (an agent that is not to move, or has left) treat
    every action as legal.
    """
    legal = legal_action_mask(legal_actions)
    greedy = tf.argmax(mask_illegal(q_values, legal_actions), axis=-1, output_type=tf.int32)
    # Uniform over legal actions: random scores, illegal ones pushed below every legal one.
    scores = tf.where(legal, generator.uniform(tf.shape(q_values)), -1.0)
    random = tf.argmax(scores, axis=-1, output_type=tf.int32)
    explore = generator.uniform(tf.shape(greedy)) < epsilon
    return tf.where(explore, random, greedy)


def numpy_epsilon_greedy(q_values: np.ndarray, legal_actions: np.ndarray, epsilon: float,
                         rng: np.random.Generator) -> np.ndarray:
    """`epsilon_greedy` in NumPy: the same choice rule, for the NumPy acting path."""
    legal = numpy_legal_action_mask(legal_actions)
    greedy = np.where(legal, q_values, -np.inf).argmax(axis=-1)
    random = np.where(legal, rng.random(q_values.shape), -1.0).argmax(axis=-1)
    explore = rng.random(greedy.shape) < epsilon
    return np.where(explore, random, greedy).astype(np.int32)


def defines_numpy_policy(executor_class: type) -> bool:
    """Whether the class defining `executor_class._batched_policy` also defines its NumPy
    twin `_numpy_policy`: a subclass that changes the TensorFlow policy alone acts in
    TensorFlow."""
    owner = next(klass for klass in executor_class.__mro__ if "_batched_policy" in vars(klass))
    return "_numpy_policy" in vars(owner)


class MADQNExecutor:
    """Selects every agent's action, writes transitions to replay and keeps variables fresh.

    All agents sharing a network act in one batched forward pass. When every
    acting network has a NumPy twin (the default networks do, see
    `acting.numpy_networks`) that pass runs in NumPy (`_numpy_policy`),
    its weights re-read whenever the variable client copied new variables, or
    at each episode start without a client (`NumpyNetworks.sync`; call
    `refresh_weights()` after changing the variables otherwise); other
    networks run in one compiled TensorFlow call per step for all networks
    (`_batched_policy`). Replay receives the data stacked per network (see
    `AgentStacker`).

    Subclasses acting differently override `_batched_policy` and, for the NumPy
    path, `_numpy_policy` (the same outputs as NumPy arrays) and `acting_modules`;
    one that overrides `_batched_policy` alone acts in TensorFlow.

    With a sequence of seeds (one per environment, see `MultiEnvironmentExecutor`)
    the policy's rows hold those environments' agents in turn, and the NumPy
    path draws each environment's rows from its own generator (`row_generator`).
    """

    def __init__(
        self,
        networks: MADQNNetworks,
        exploration_schedule: ExplorationSchedule,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: Union[int, Sequence[int]] = 0,
    ):
        self._networks = networks
        self._stacker = AgentStacker(networks.agent_networks)
        self._schedule = exploration_schedule
        self._adder = adder
        self._variable_client = variable_client
        self._numpy_networks = (NumpyNetworks.of(self.acting_modules(), variable_client)
                                if defines_numpy_policy(type(self)) else None)
        self._rng = row_generator(seed)
        self._generator = tf.random.Generator.from_seed(int(np.atleast_1d(seed)[0]))
        self._policy: Optional[Callable[..., Dict[str, tf.Tensor]]] = None  # Compiled on first use.
        # The last observation dict seen and its stacked form: observe() stacks the
        # next observation and select_actions() reuses it on the following step.
        self._stacked_observation: Tuple[Any, Dict[str, Any]] = (None, {})
        self.num_steps = 0

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor) -> Dict[str, tf.Tensor]:
        return {key: epsilon_greedy(
                    self._networks.q_networks[key](observation_to_input(observation.observation)),
                    observation.legal_actions, epsilon, self._generator)
                for key, observation in observations.items()}

    def _numpy_policy(self, observations: Dict[str, OLT], epsilon: float) -> Dict[str, np.ndarray]:
        return {key: numpy_epsilon_greedy(self._numpy_networks[key](observation.observation),
                                          observation.legal_actions, epsilon, self._rng)
                for key, observation in observations.items()}

    def acting_modules(self) -> Mapping[str, Any]:
        """The networks this executor acts with, by key (their NumPy twins act for them)."""
        return getattr(self._networks, "q_networks", {})

    @property
    def networks(self) -> Any:
        """The networks this executor acts with (and its variable client updates)."""
        return self._networks

    @property
    def stacker(self) -> AgentStacker:
        """How this executor stacks its agents per network."""
        return self._stacker

    @property
    def acts_in_numpy(self) -> bool:
        """Whether this executor acts through NumPy twins of its networks (else in TensorFlow)."""
        return self._numpy_networks is not None

    @property
    def epsilon(self) -> float:
        """The exploration rate this executor uses at its current step."""
        return float(self._schedule(self.num_steps))

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action."""
        return self.actions_from_outputs(
            self.policy_outputs(self._stack_observation(observations), self.epsilon))

    def actions_from_outputs(self, outputs: Any, actor: Optional["MADQNExecutor"] = None
                             ) -> Dict[str, Any]:
        """Each agent's action from the policy's outputs on this executor's stacked observation
        (`policy_outputs`), keeping what `observe` records of them. `actor` is the executor that
        computed them, when another did (`MultiEnvironmentExecutor` computes the outputs of
        several executors in one call)."""
        del actor  # Nothing about the acting weights is recorded here.
        return self._stacker.unstack(outputs)

    def stacked_observation(self, observations: Dict[str, OLT]) -> Dict[str, OLT]:
        """`observations` stacked per network, as the policy takes them (see `AgentStacker`)."""
        return self._stack_observation(observations)

    def policy_outputs(self, stacked: Dict[str, OLT], epsilon: float = 0.0) -> Any:
        """The batched policy's outputs on stacked observations, as NumPy arrays: computed by
        `_numpy_policy` when acting in NumPy, else by the compiled `_batched_policy`."""
        if self._numpy_networks is not None:
            self._sync_numpy_weights()
            return self._numpy_policy(stacked, epsilon)
        return tf.nest.map_structure(lambda value: value.numpy(), self.run_policy(stacked, epsilon))

    def run_policy(self, stacked: Dict[str, OLT], epsilon: float = 0.0) -> Any:
        """`_batched_policy` on stacked observations, compiled on first use."""
        if self._policy is None:
            # A fixed input signature: TF skips re-checking the numpy inputs on every call.
            signature = tf.nest.map_structure(
                lambda array: tf.TensorSpec(array.shape, tf.as_dtype(array.dtype)), stacked)
            self._policy = tf.function(self._batched_policy, input_signature=[
                signature, tf.TensorSpec([], tf.float32)])
        return self._policy(stacked, np.float32(epsilon))

    @property
    def observes_extras(self) -> bool:
        """Whether `observe_first` and `observe` want the environment's extras (e.g. its global
        state): when replay stores them (see `NStepTransitionAdder`)."""
        return bool(getattr(self._adder, "stores_environment_extras", False))

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode in replay (with the environment's `extras` then, if it stores them)."""
        self._sync_numpy_weights(new_episode=True)
        if self._adder is None:
            return
        if self.observes_extras:
            self._adder.add_first(self._stack_timestep(timestep), extras)
        else:
            self._adder.add_first(self._stack_timestep(timestep))

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step in replay (with the environment's `extras` after it, if it stores them)
        and advances the exploration schedule."""
        self.num_steps += 1
        if self._adder is None:
            return
        if self.observes_extras:
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep),
                            next_environment_extras=extras)
        else:
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep))

    def abandon_episode(self) -> None:
        """Forgets the current episode's steps not yet written to replay (its environment failed)."""
        if self._adder is not None:
            self._adder.reset()

    def update(self, wait: bool = False) -> None:
        """Fetches the source's latest online variables: now with `wait`, else every few steps.

        Without `wait` the fetch runs in the background once every
        `variable_update_period` calls; with it, the call blocks until fresh
        variables arrived (Acme's `update(wait=True)` would wait only when the
        period has come, so an evaluation round could act with old variables).
        """
        if self._variable_client is None:
            return
        if wait:
            self._variable_client.update_and_wait()
        else:
            self._variable_client.update()

    def _sync_numpy_weights(self, new_episode: bool = False) -> None:
        """Re-reads the NumPy weights if they may have changed (see `NumpyNetworks.sync`)."""
        if self._numpy_networks is not None and self._numpy_networks.sync(new_episode):
            self._weights_refreshed()

    def refresh_weights(self) -> None:
        """Makes the NumPy acting path use the networks' current variables.

        Done before acting whenever the variable client has copied new variables
        (and at each episode start without a client); call it yourself after
        changing the networks' variables by other means within an episode.
        """
        if self._numpy_networks is not None:
            self._numpy_networks.refresh()
            self._weights_refreshed()

    def _weights_refreshed(self) -> None:
        """Called after the NumPy weights were re-read (for what depends on them)."""

    def _stack_observation(self, observations: Dict[str, OLT]) -> Dict[str, OLT]:
        seen, stacked = self._stacked_observation
        if seen is not observations:
            stacked = self._stacker.stack(observations)
            self._stacked_observation = (observations, stacked)
        return stacked

    def _stack_timestep(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        # A FIRST timestep has no reward or discount (None, as dm_env.restart makes it).
        return timestep._replace(
            observation=self._stack_observation(timestep.observation),
            reward=None if timestep.reward is None else self._stacker.stack(timestep.reward),
            discount=None if timestep.discount is None else self._stacker.stack(timestep.discount))


class RecurrentMADQNExecutor(MADQNExecutor):
    """MADQN's executor for recurrent Q-networks: each agent's state carries through its episode.

    Every state is reset to the network's initial (zero) state when an episode
    starts (`observe_first`, given the episode's FIRST timestep), and only
    then: not when an agent's discount drops to 0, nor at a time limit. An
    agent that has left the episode (its `terminal` flag set) keeps its last
    state until the next episode's reset, so it no longer changes
    (`RecurrentStates`). Replay receives, with each observation, the state
    the network acts from there (`extras["core_state"]`, stacked per network),
    and the environment's extras when replay stores them (see
    `ObservationExtrasSequenceAdder`). Networks with a NumPy twin (the
    reference `RecurrentQNetwork` has one) act in NumPy, others in one compiled
    TensorFlow call per step that takes and returns the states. As a stream of a
    `MultiEnvironmentExecutor` it keeps its own environment's states: the
    actor's policy call takes them (`policy_outputs`'s `states`) and the stream
    advances them from its rows (`actions_from_outputs`).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.states = RecurrentStates(self.initial_states)

    def initial_states(self) -> Dict[str, Any]:
        """Every network's initial state, one row per agent using it."""
        return {key: self._networks.q_networks[key].initial_state(len(agents))
                for key, agents in self._stacker.agents_by_network.items()}

    def _batched_policy(self, observations: Dict[str, OLT], states: Dict[str, Any],
                        epsilon: tf.Tensor) -> Tuple[Dict[str, tf.Tensor], Dict[str, Any]]:
        actions, new_states = {}, {}
        for key, observation in observations.items():
            q_values, new_states[key] = self._networks.q_networks[key](
                observation_to_input(observation.observation), states[key])
            actions[key] = epsilon_greedy(q_values, observation.legal_actions, epsilon,
                                          self._generator)
        return actions, new_states

    def _numpy_policy(self, observations: Dict[str, OLT], states: Dict[str, Any],
                      epsilon: float) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
        actions, new_states = {}, {}
        for key, observation in observations.items():
            q_values, new_states[key] = self._numpy_networks[key](
                np.asarray(observation.observation, np.float32), states[key])
            actions[key] = numpy_epsilon_greedy(q_values, observation.legal_actions, epsilon,
                                                self._rng)
        return actions, new_states

    def actions_from_outputs(self, outputs: Any, actor: Optional[MADQNExecutor] = None
                             ) -> Dict[str, Any]:
        """Each agent's action from the policy's (actions, new states) on this executor's stacked
        observation, advancing the agents' states (see `MADQNExecutor.actions_from_outputs`)."""
        actions, new_states = outputs
        self.advance_states(new_states)
        return super().actions_from_outputs(actions, actor)

    def advance_states(self, new_states: Mapping[str, Any]) -> None:
        """Takes the policy's `new_states` for the agents still in the episode of the
        observation last stacked (see `RecurrentStates.advance`)."""
        _, stacked = self._stacked_observation
        self.states.advance(new_states, present_rows(stacked))

    def policy_outputs(self, stacked: Dict[str, OLT], epsilon: float = 0.0,
                       states: Optional[Mapping[str, Any]] = None) -> Any:
        """(actions, new states) as NumPy arrays (see `MADQNExecutor`), from `states`: by default
        this executor's current ones (`MultiEnvironmentExecutor` passes its environments'
        states, their rows stacked as the observations' are)."""
        states = self.states.current if states is None else states
        if self._numpy_networks is not None:
            self._sync_numpy_weights()
            return self._numpy_policy(stacked, states, epsilon)
        if self._policy is None:
            to_spec = lambda array: tf.TensorSpec(array.shape, tf.as_dtype(array.dtype))
            self._policy = tf.function(self._batched_policy, input_signature=[
                tf.nest.map_structure(to_spec, stacked), tf.nest.map_structure(to_spec, states),
                tf.TensorSpec([], tf.float32)])
        return tf.nest.map_structure(lambda value: value.numpy(),
                                     self._policy(stacked, states, np.float32(epsilon)))

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode: every agent's state reset, the first observation in replay."""
        self._start_episode(timestep)
        if self._adder is not None:
            self._adder.add_first(self._stack_timestep(timestep), self._step_extras(extras))

    def _start_episode(self, timestep: dm_env.TimeStep) -> None:
        """Resets every state (`timestep` must be an episode's first) and refreshes the weights."""
        if not timestep.first():
            raise ValueError("observe_first needs an episode's first timestep (StepType.FIRST), "
                             f"got step type {timestep.step_type}")
        self.states.reset()
        self._sync_numpy_weights(new_episode=True)

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step in replay, the next observation with the state the agents act from
        there, and advances the exploration schedule."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep),
                            self._step_extras(extras))

    def _step_extras(self, environment_extras: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        extras = dict(environment_extras or {}) if self.observes_extras else {}
        extras["core_state"] = self.states.current
        return extras
