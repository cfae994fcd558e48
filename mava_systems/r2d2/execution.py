"""R2D2 executors: epsilon-greedy over a recurrent Q-network, recording the LSTM state with each step."""

from typing import Any, Dict, Mapping, Optional

import dm_env
import numpy as np

from mava_systems.madqn.execution import RecurrentMADQNExecutor
from wrappers import OLT


class R2D2Executor(RecurrentMADQNExecutor):
    """The recurrent MADQN executor (state carried within an episode, reset at its start), writing
    to Acme's `SequenceAdder`: with each step (its action), the state the network had before
    acting (`extras["core_state"]`), so the learner can start its unrolls from it.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._acting_states: Dict[str, Any] = self.states.current

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action, advancing the recurrent state."""
        self._acting_states = self.states.current
        return super().select_actions(observations)

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode: a zero recurrent state, and a new episode in replay."""
        self._start_episode(timestep)
        if self._adder is not None:
            self._adder.add_first(self._stack_timestep(timestep))

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step and the recurrent state it was chosen in."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep),
                            extras={"core_state": self._acting_states})
