"""MADQN executors: epsilon-greedy over legal actions, one batched forward pass per network."""

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf

from mava_systems.components.stacking import AgentStacker
from mava_systems.madqn.networks import (MADQNNetworks, MLPQNetwork, NumpyMLPQNetwork,
                                         legal_action_mask, mask_illegal, observation_to_input)
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
    legal = legal_actions > 0
    legal |= ~legal.any(axis=-1, keepdims=True)
    greedy = np.where(legal, q_values, -np.inf).argmax(axis=-1)
    random = np.where(legal, rng.random(q_values.shape), -1.0).argmax(axis=-1)
    explore = rng.random(greedy.shape) < epsilon
    return np.where(explore, random, greedy).astype(np.int32)


def numpy_q_networks(networks: Any) -> Optional[Dict[str, NumpyMLPQNetwork]]:
    """NumPy twins of the online Q-networks when every one is an `MLPQNetwork`, else None."""
    q_networks = getattr(networks, "q_networks", None)
    if not q_networks or not all(isinstance(network, MLPQNetwork)
                                 for network in q_networks.values()):
        return None
    return {key: NumpyMLPQNetwork(network) for key, network in networks.q_networks.items()}


class MADQNExecutor:
    """Selects every agent's action, writes transitions to replay and keeps variables fresh.

    All agents sharing a network act in one batched forward pass. With the
    default `MLPQNetwork`s that pass runs in NumPy (see `NumpyMLPQNetwork`);
    other networks run in one compiled TensorFlow call per step for all
    networks. Replay receives the data stacked per network (see `AgentStacker`).
    """

    def __init__(
        self,
        networks: MADQNNetworks,
        exploration_schedule: ExplorationSchedule,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
    ):
        self._networks = networks
        self._stacker = AgentStacker(networks.agent_networks)
        self._schedule = exploration_schedule
        self._adder = adder
        self._variable_client = variable_client
        # Subclasses that act with a policy of their own keep to TensorFlow.
        uses_q_policy = type(self)._batched_policy is MADQNExecutor._batched_policy
        self._numpy_networks = numpy_q_networks(networks) if uses_q_policy else None
        self._weights_version = getattr(variable_client, "version", None)
        self._rng = np.random.default_rng(seed)
        self._generator = tf.random.Generator.from_seed(seed)
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

    @property
    def epsilon(self) -> float:
        """The exploration rate this executor uses at its current step."""
        return float(self._schedule(self.num_steps))

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action."""
        stacked = self._stack_observation(observations)
        if self._numpy_networks is not None:
            self._sync_numpy_weights()
            epsilon = self.epsilon
            return self._stacker.unstack({
                key: numpy_epsilon_greedy(self._numpy_networks[key](observation.observation),
                                          observation.legal_actions, epsilon, self._rng)
                for key, observation in stacked.items()})
        actions = self.run_policy(stacked, self.epsilon)
        return self._stacker.unstack({key: value.numpy() for key, value in actions.items()})

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

    def _sync_numpy_weights(self) -> None:
        """Re-reads the NumPy weights if the variable client copied new variables since."""
        if self._variable_client is None:
            return
        version = getattr(self._variable_client, "version", None)
        if version is None or version != self._weights_version:  # None: no version to tell.
            self.refresh_weights()
            self._weights_version = version

    def refresh_weights(self) -> None:
        """Makes the NumPy acting path use the networks' current variables.

        Done before acting whenever the variable client has copied new variables;
        call it yourself after assigning the networks' variables by other means.
        """
        if self._numpy_networks is not None:
            for numpy_network in self._numpy_networks.values():
                numpy_network.refresh()

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
