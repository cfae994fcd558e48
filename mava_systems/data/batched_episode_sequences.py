"""Recurrent value-based agents' sequences of B environments, kept in arrays, one stream for all.

`BatchedEpisodeSequenceAdder` writes the items B `ObservationExtrasSequenceAdder`s
(one per environment: Acme's `SequenceAdder` with zero padding at episode ends,
each step's extras written with its observation) write, taking each batched
step's arrays at once. Every environment's last rows are kept in rings
(`RowRings`); when a sequence is due (every `period` rows from the
`sequence_length`-th of an episode on, and at an episode's end, zero-padded up
to the next period), its `sequence_length` rows are gathered and appended as
one step, an item of its own: each item is one environment's sequence, sampled
on its own, as the per-environment adders' are. (`data/batched_sequences.py`'s
blocks of B sequences crossing episodes are the on-policy queue's layout, not
this one's.)
"""

from typing import Any, List, Mapping, Optional

from acme.adders.reverb import base as acme_base
import numpy as np
import tree

from mava_systems.data.row_rings import RowRings, ragged_ranges, rows_of
from mava_systems.data.sequence_adder import STEP_MASK


class BatchedEpisodeSequenceAdder:
    """The sequence items of B environments (see the module's docstring).

    `add_first(starting, observation, extras)` starts the episodes of the
    environments `starting` ([B] bool) marks; `add(stepped, action, reward, discount,
    next_observation, last, next_extras)` records the step the environments `stepped`
    marks took (`last`: their episode ended there). Leaves are `[B, ...]`, structured as
    one environment's stacked data; `extras` are what each observation's row stores
    besides it (the agents' `core_state`, the environment's `env_state` when replay
    stores it); the step mask is added here.
    """

    def __init__(self, client: Any, table: str, num_envs: int, sequence_length: int,
                 period: int, stores_environment_extras: bool = False,
                 max_in_flight_items: int = 2, priority: float = 1.0):
        if not 1 <= period <= sequence_length:
            raise ValueError(f"period must be in [1, sequence_length={sequence_length}], "
                             f"got {period}")
        self._client = client
        self._table = table
        self._num_envs = int(num_envs)
        self._length = sequence_length
        self._period = period
        self.stores_environment_extras = stores_environment_extras
        self._max_in_flight_items = max_in_flight_items
        self._priority = priority
        self._writer: Optional[Any] = None
        # Row t of an episode: its observation, start flag and extras; the action taken there
        # with the reward and discount that followed (zeros at the final observation).
        self._observations = RowRings(num_envs, sequence_length + 1)
        self._actions = RowRings(num_envs, sequence_length + 1)
        self._structures: Any = (None, None)  # Of an observation's row, of an action's.
        self._rows = np.zeros(num_envs, np.int64)  # Rows with an action, per running episode.

    def add_first(self, starting: np.ndarray, observation: Any,
                  extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts the episodes of the environments `starting` marks at `observation`."""
        envs = np.flatnonzero(starting)
        if not len(envs):
            return
        self._rows[envs] = 0
        self._observations.put(envs, self._rows[envs],
                               self._observation_row(observation, extras, envs, True, 1.0))

    def add(self, stepped: np.ndarray, action: Any, reward: Any, discount: Any,
            next_observation: Any, last: np.ndarray,
            next_extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records the environments' step (see the class) and writes the sequences it
        completes."""
        envs = np.flatnonzero(stepped)
        if not len(envs):
            return
        step = (action, reward, discount)
        self._structures = (self._structures[0], step)
        self._actions.put(envs, self._rows[envs], rows_of(tree.flatten(step), envs))
        rows = self._rows[envs] + 1
        self._rows[envs] = rows
        ending = np.asarray(last)[envs]
        self._observations.put(envs, rows, self._observation_row(
            next_observation, next_extras, envs, False, np.where(last, 0.0, 1.0)))
        length, period = self._length, self._period
        due = (rows == length) | ((rows > length) & ((rows - length) % period == 0))
        self._write(envs[due], rows[due])
        if ending.any():
            ended, final = envs[ending], rows[ending]
            self._actions.zero(ended, final)  # The final observation's row: no action.
            rows = final + 1
            padding = length - rows
            padding = np.where(padding < 0, (period + padding) % period, padding)
            for ring in (self._observations, self._actions):
                ring.zero(*ragged_ranges(ended, rows, rows + padding))
            self._write(ended, rows + padding)
        if self._writer is not None:
            self._writer.flush(self._max_in_flight_items * self._num_envs)

    def flush(self) -> None:
        """Waits until every item written so far is in replay."""
        if self._writer is not None:
            self._writer.flush()

    def _observation_row(self, observation: Any, extras: Optional[Mapping[str, Any]],
                         envs: np.ndarray, start: bool, mask: Any) -> List[np.ndarray]:
        """The leaves of the rows `envs` of an observation's row: `observation`, the start flag,
        `extras` with the step mask `mask` (a number, or one per environment)."""
        row_extras = dict(extras or {})
        row_extras[STEP_MASK] = np.broadcast_to(np.asarray(mask, np.float32), (self._num_envs,))
        row = (observation, np.full(self._num_envs, start), row_extras)
        self._structures = (row, self._structures[1])
        return rows_of(tree.flatten(row), envs)

    def _write(self, envs: np.ndarray, ends: np.ndarray) -> None:
        """Appends and makes an item of rows `ends[i] - sequence_length` to `ends[i] - 1` of each
        environment `envs[i]`."""
        if not len(envs):
            return
        of_env, rows = ragged_ranges(envs, ends - self._length, ends)
        row_structure, step_structure = self._structures
        observation, start, extras = tree.unflatten_as(
            row_structure, self._observations.take(of_env, rows))
        action, reward, discount = tree.unflatten_as(
            step_structure, self._actions.take(of_env, rows))
        sequences = tree.map_structure(
            lambda leaf: leaf.reshape((len(envs), self._length) + leaf.shape[1:]),
            acme_base.Trajectory(observation=observation, action=action, reward=reward,
                                 discount=discount, start_of_episode=start, extras=extras))
        if self._writer is None:
            self._writer = self._client.trajectory_writer(num_keep_alive_refs=1)
        for index in range(len(envs)):
            self._writer.append(tree.map_structure(lambda leaf: leaf[index], sequences))
            self._writer.create_item(self._table, self._priority, tree.map_structure(
                lambda column: column[-1], self._writer.history))
