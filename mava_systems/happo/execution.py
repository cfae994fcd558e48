"""HAPPO's recurrent executor: MAPPO's, carrying the one team critic's state."""

from typing import Any, Dict, Mapping, Optional

import numpy as np

from mava_systems.happo.training import TEAM
from mava_systems.mappo.execution import RecurrentMAPPOExecutor
from wrappers import OLT


class RecurrentHAPPOExecutor(RecurrentMAPPOExecutor):
    """`RecurrentMAPPOExecutor` for HAPPO's networks: every agent's policy state as there, and
    one state of the team critic (`critics["team"]`), stepped on the global state at every
    observation of the episode (the trainer unrolls it the same way, see
    `RecurrentHAPPOTrainer`)."""

    def initial_critic_states(self) -> Dict[str, Any]:
        """The team critic's initial state: one row."""
        return {TEAM: self._networks.critics[TEAM].initial_state(1)}

    def critic_inputs(self, stacked: Mapping[str, OLT], global_state: Optional[np.ndarray]
                      ) -> Dict[str, np.ndarray]:
        """The team critic sees the global state, flattened: [1, S]."""
        del stacked
        return {TEAM: np.asarray(global_state, np.float32).reshape(1, -1)}

    def critic_present_rows(self, stacked: Mapping[str, OLT]) -> Dict[str, np.ndarray]:
        """The team critic's state advances at every observation of the episode."""
        del stacked
        return {TEAM: np.ones(1, np.float32)}
