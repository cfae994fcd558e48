"""What the executors of a batched environment share, whatever their family.

A batched executor (`acting.unsplit_loop.BatchedExecutor`: MAPPO's, MADQN's)
acts for the B environments of a `wrappers.vectorised.BatchedEnvironment` in
arrays: `BatchedActing` slices the batched arrays per network (agents side by
side, environments first), makes them the rows of the actor's one policy call
(environments' agents in turn, as a `MultiEnvironmentExecutor` concatenates its
streams' rows, so each environment's rows draw from its own generator), puts the
chosen actions back on the agent axis, counts each environment's steps (where
the exploration schedule stands) and keeps recurrent states as
`[B, agents, ...]` arrays.
"""

from typing import Any, Dict, Mapping, Sequence

import numpy as np
import tree

from wrappers import OLT


def masked(keep: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`values` ([B, ...]) where `keep` ([B]) is set, zeros of their dtype elsewhere."""
    values = np.asarray(values)
    return np.where(keep.reshape((-1,) + (1,) * (values.ndim - 1)), values,
                    np.zeros((), values.dtype))


def rows(values: np.ndarray) -> np.ndarray:
    """[B, agents, ...] -> [B * agents, ...]: environments' agents in turn, as a policy takes
    them."""
    return values.reshape((-1,) + values.shape[2:])


class BatchedActing:
    """The family-independent half of a batched executor (see the module's docstring).

    `actor` is the family's executor made with the B environments' seeds (it has a
    `stacker`, `policy_outputs` and `update`); `agents` are the batched environment's,
    in the order of its agent axis.
    """

    def __init__(self, actor: Any, agents: Sequence[str], num_envs: int):
        agents = list(agents)
        self.actor = actor
        self.num_environments = int(num_envs)
        self._columns = {key: np.array([agents.index(agent) for agent in names])
                         for key, names in actor.stacker.agents_by_network.items()}
        self._num_agents = len(agents)
        self._steps = np.zeros(self.num_environments, np.int64)
        self._stacked: Dict[str, OLT] = {}  # The last step's observations per network.

    @property
    def num_steps(self) -> int:
        """Steps each environment has taken (where an exploration schedule stands)."""
        return int(self._steps.max())

    @num_steps.setter
    def num_steps(self, steps: int) -> None:
        self._steps[:] = steps

    def update(self, wait: bool = False) -> None:
        """Fetches the source's latest variables for the actor."""
        self.actor.update(wait)

    def _slice(self, batched: Any) -> Dict[str, OLT]:
        """Keeps `batched`'s observations per network ([B, agents, ...] leaves) for the next
        policy call; returns them."""
        self._stacked = {key: OLT(batched.observation[:, columns],
                                  batched.legal_actions[:, columns],
                                  batched.terminal[:, columns])
                         for key, columns in self._columns.items()}
        return self._stacked

    def _policy_rows(self) -> Dict[str, OLT]:
        """The last observations as the policy's rows (see `rows`)."""
        return {key: OLT(*map(rows, observation)) for key, observation in self._stacked.items()}

    def _per_network(self, values: np.ndarray) -> Dict[str, np.ndarray]:
        """[B, agents, ...] values of the environment's agent axis, per network."""
        return {key: values[:, columns] for key, columns in self._columns.items()}

    def _agent_actions(self, chosen: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per-network actions ([B, agents of the network]) on the environment's agent axis:
        [B, num_agents]."""
        actions = np.empty((self.num_environments, self._num_agents),
                           next(iter(chosen.values())).dtype)
        for key, columns in self._columns.items():
            actions[:, columns] = chosen[key]
        return actions

    def _advanced(self, states: Mapping[str, Any], new_rows: Mapping[str, Any]
                  ) -> Dict[str, Any]:
        """`states` ([B, agents, ...] per network) taking `new_rows` ([B * agents, ...]) for the
        agents still in their episode at the last observed step (`RecurrentStates.advance`)."""
        advanced = dict(states)
        for key, new in new_rows.items():
            present = (1.0 - np.asarray(self._stacked[key].terminal)) > 0
            advanced[key] = tree.map_structure(
                lambda new, old, present=present: np.where(
                    present.reshape(present.shape + (1,) * (old.ndim - 2)),
                    np.asarray(new, np.float32).reshape(old.shape), old),
                new, states[key])
        return advanced

    def _tiled(self, initial: Mapping[str, Any]) -> Dict[str, Any]:
        """Every environment's copy of `initial` ([agents, ...] per network): [B, agents, ...]."""
        return {key: tree.map_structure(
                    lambda part: np.repeat(np.asarray(part, np.float32)[None],
                                           self.num_environments, axis=0), state)
                for key, state in initial.items()}

    def _reset(self, states: Mapping[str, Any], starting: np.ndarray,
               initial: Mapping[str, Any]) -> Dict[str, Any]:
        """`states` with the `starting` environments' rows back to `initial`."""
        return {key: tree.map_structure(
                    lambda old, first: np.where(
                        starting.reshape((-1,) + (1,) * (old.ndim - 1)),
                        np.asarray(first, np.float32)[None], old),
                    states[key], initial[key])
                for key in states}
