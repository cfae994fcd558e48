"""The value-based family's executor for the B environments of a batched environment, in arrays.

`BatchedMADQNExecutor` is what a `MultiEnvironmentExecutor` of B MADQN (VDN,
QMIX) streams is, without the split into environments: the batched
environment's arrays are sliced per network, go to the actor's one policy call
(epsilon-greedy over legal actions, each environment's rows drawing from its own
generator, every environment at the actor's schedule at its own step count), and
each step goes to a batched adder for all B environments at once
(`data/batched_transitions.BatchedNStepAdder`, or with recurrent agents
`data/batched_episode_sequences.BatchedEpisodeSequenceAdder`), which writes the
items the streams' own adders would. Recurrent agents' states are
`[B, agents, ...]` arrays, reset for the environments whose episode starts, and
stored with each observation (`core_state`).
"""

from typing import Any, Dict, Optional, Sequence

import numpy as np
import tree

from mava_systems.acting.batched_acting import BatchedActing, rows
from mava_systems.acting.unsplit_loop import LAST
from mava_systems.madqn.execution import MADQNExecutor, RecurrentMADQNExecutor

CORE_STATE = "core_state"


class BatchedMADQNExecutor(BatchedActing):
    """Acts for B environments in one epsilon-greedy policy call and writes their steps through
    one batched adder (see the module's docstring).

    `actor` is a `MADQNExecutor` (or `RecurrentMADQNExecutor`) made with the B
    environments' seeds and their exploration schedule, and no adder; `adder` gets the
    steps (None: nothing is written); `stores_state`: replay stores the environment's
    global state (`env_state`) with each observation.
    """

    def __init__(self, actor: MADQNExecutor, adder: Optional[Any], agents: Sequence[str],
                 num_envs: int, stores_state: bool = False):
        super().__init__(actor, agents, num_envs)
        self._adder = adder
        self._stores_state = stores_state
        self._recurrent = isinstance(actor, RecurrentMADQNExecutor)
        self._chosen: Dict[str, np.ndarray] = {}
        if self._recurrent:
            self._states = self._tiled(actor.initial_states())

    @property
    def epsilon(self) -> float:
        """The exploration rate every environment uses at its current step."""
        self.actor.num_steps = self.num_steps
        return self.actor.epsilon

    def select_actions(self, batched: Any) -> np.ndarray:
        """Every environment's agents' actions ([B, agents]) from one policy call on the last
        observed step (whose observations `observe` sliced)."""
        del batched  # Sliced by `observe`.
        policy_rows = self._policy_rows()
        if self._recurrent:
            chosen, new_states = self.actor.policy_outputs(
                policy_rows, self.epsilon, tree.map_structure(rows, self._states))
            self._states = self._advanced(self._states, new_states)
        else:
            chosen = self.actor.policy_outputs(policy_rows, self.epsilon)
        self._chosen = {key: np.asarray(action).reshape(self.num_environments, -1)
                        for key, action in chosen.items()}
        return self._agent_actions(self._chosen)

    def observe(self, actions: Optional[np.ndarray], batched: Any, stepped: np.ndarray,
                starting: np.ndarray, write: bool) -> None:
        """Gives the adder the `stepped` environments' step (with `write`) and the `starting`
        ones' first observations, counts the steps and keeps `batched`'s observations."""
        del actions  # `select_actions` kept them per network.
        self._steps += stepped
        observation = self._slice(batched)
        if self._recurrent and starting.any():
            self._states = self._reset(self._states, starting, self.actor.initial_states())
        if self._adder is None:
            return
        extras = self._extras(batched)
        if write and stepped.any():
            self._adder.add(stepped, self._chosen, self._per_network(batched.reward),
                            self._per_network(batched.discount), observation,
                            batched.step_type == LAST, extras)
        if starting.any():
            self._adder.add_first(starting, observation, extras)

    def _extras(self, batched: Any) -> Optional[Dict[str, Any]]:
        """What the adder stores with each observation besides it: the environment's state
        when replay stores it, the agents' recurrent states."""
        extras: Dict[str, Any] = {}
        if self._stores_state:
            extras["env_state"] = batched.state
        if self._recurrent:
            extras[CORE_STATE] = self._states
        return extras if extras or self._stores_state else None
