"""R2D2 executors: epsilon-greedy over a recurrent Q-network, recording the LSTM state with each step."""

from typing import Any, Dict, Optional

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf
import tree

from mava_systems.madqn.execution import ExplorationSchedule, MADQNExecutor, epsilon_greedy
from mava_systems.madqn.networks import observation_to_input
from mava_systems.r2d2.networks import R2D2Networks
from wrappers import OLT


class R2D2Executor(MADQNExecutor):
    """MADQN's executor with a recurrent Q-network whose state carries over within an episode.

    Replay receives, with each step, the state the network had before acting
    (`extras["core_state"]`), so the learner can start its unrolls from it.
    """

    def __init__(
        self,
        networks: R2D2Networks,
        exploration_schedule: ExplorationSchedule,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
    ):
        super().__init__(networks, exploration_schedule, adder, variable_client, seed)
        self._states: Optional[Dict[str, Any]] = None
        self._previous_states: Dict[str, Any] = {}

    def initial_states(self) -> Dict[str, Any]:
        """Every network's zero state, one row per agent using it."""
        return {key: self._networks.q_networks[key].initial_state(len(agents))
                for key, agents in self._stacker.agents_by_network.items()}

    def _batched_recurrent_policy(self, observations: Dict[str, OLT], states: Dict[str, Any],
                                  epsilon: tf.Tensor):
        actions, new_states = {}, {}
        for key, observation in observations.items():
            q_values, new_states[key] = self._networks.q_networks[key](
                observation_to_input(observation.observation), states[key])
            actions[key] = epsilon_greedy(q_values, observation.legal_actions, epsilon,
                                          self._generator)
        return actions, new_states

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action, advancing the recurrent state."""
        stacked = self._stack_observation(observations)
        if self._states is None:
            self._states = self.initial_states()
        if self._policy is None:
            to_spec = lambda value: tf.TensorSpec(value.shape, tf.as_dtype(value.dtype))
            self._policy = tf.function(self._batched_recurrent_policy, input_signature=[
                tree.map_structure(to_spec, stacked), tree.map_structure(to_spec, self._states),
                tf.TensorSpec([], tf.float32)])
        actions, new_states = self._policy(stacked, self._states, np.float32(self.epsilon))
        self._previous_states, self._states = self._states, new_states
        return self._stacker.unstack({key: value.numpy() for key, value in actions.items()})

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode: a zero recurrent state, and a new episode in replay."""
        self._states = None
        super().observe_first(timestep)

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None:
        """Records a step and the recurrent state it was chosen in."""
        self.num_steps += 1
        if self._adder is not None:
            core_state = tree.map_structure(lambda value: np.asarray(value),
                                            self._previous_states)
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep),
                            extras={"core_state": core_state})
