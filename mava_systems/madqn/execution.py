"""MADQN executors: epsilon-greedy over legal actions, one batched forward pass per network."""

from typing import Any, Callable, Dict, Optional

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.madqn.networks import MADQNNetworks, observation_to_input

ExplorationSchedule = Callable[[int], float]


def epsilon_greedy(q_values: tf.Tensor, legal_actions: tf.Tensor, epsilon: tf.Tensor,
                   generator: tf.random.Generator) -> tf.Tensor:
    """Greedy legal action with probability 1 - epsilon, else a uniformly random legal one.

    Rows with no legal action (an agent that is not to move, or has left) treat
    every action as legal.
    """
    legal = legal_actions > 0
    legal = tf.logical_or(legal, tf.logical_not(tf.reduce_any(legal, axis=-1, keepdims=True)))
    masked_q = tf.where(legal, q_values, q_values.dtype.min)
    greedy = tf.argmax(masked_q, axis=-1, output_type=tf.int32)
    # Uniform over legal actions: random scores, illegal ones pushed below every legal one.
    scores = tf.where(legal, generator.uniform(tf.shape(q_values)), -1.0)
    random = tf.argmax(scores, axis=-1, output_type=tf.int32)
    explore = generator.uniform(tf.shape(greedy)) < epsilon
    return tf.where(explore, random, greedy)


class MADQNExecutor:
    """Selects every agent's action, writes transitions to replay and keeps variables fresh."""

    def __init__(
        self,
        networks: MADQNNetworks,
        exploration_schedule: ExplorationSchedule,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
    ):
        self._networks = networks
        self._agents_by_network = networks.agents_by_network
        self._schedule = exploration_schedule
        self._adder = adder
        self._variable_client = variable_client
        self._generator = tf.random.Generator.from_seed(seed)
        self._policies = {key: self._make_policy(network)
                          for key, network in networks.q_networks.items()}
        self.num_steps = 0

    def _make_policy(self, network: snt.Module) -> Callable[..., tf.Tensor]:
        @tf.function
        def policy(observation, legal_actions, epsilon):
            q_values = network(observation_to_input(observation))
            return epsilon_greedy(q_values, legal_actions, epsilon, self._generator)
        return policy

    @property
    def epsilon(self) -> float:
        """The exploration rate this executor uses at its current step."""
        return float(self._schedule(self.num_steps))

    def select_actions(self, observations: Dict[str, Any]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action."""
        epsilon = np.float32(self.epsilon)
        actions = {}
        for key, agents in self._agents_by_network.items():
            batch = np.stack([observations[agent].observation for agent in agents])
            legal = np.stack([observations[agent].legal_actions for agent in agents])
            chosen = self._policies[key](batch, legal, epsilon).numpy()
            for agent, action in zip(agents, chosen):
                actions[agent] = action
        return actions

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode in replay."""
        if self._adder is not None:
            self._adder.add_first(timestep)

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None:
        """Records a step in replay and advances the exploration schedule."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(actions, next_timestep)

    def update(self, wait: bool = False) -> None:
        """Fetches the source's latest online variables every few steps (in the background)."""
        if self._variable_client is not None:
            self._variable_client.update(wait)
