"""One replay stream for the B environments of a vectorised executor: sequences written in blocks.

An executor stepping B environments together (`acting/vectorised_loop.py`)
would otherwise write through B adders, one Reverb `append` per environment
step, and those appends took most of its time. `BatchedSequenceWriter` gives
each environment a lane (`SequenceLane`, an adder with the `add_first`/`add`
interface of Acme's `ReverbAdder`) and appends one step holding every lane's
row, stacked, to a single trajectory writer: one `append` per batched step,
and one item per sequence period holding the B environments' sequences as a
`[T, B, ...]` block (`batched_signature`). `lane_major_sequences` turns sampled
blocks back into B sequences each, as the per-environment adders would have
written them.

It writes exactly what B of Acme's `SequenceAdder`s with
`EndBehavior.CONTINUE` write (sequences of `sequence_length` rows every
`period` rows, crossing episodes; an episode's final observation a row of its
own with zero action, reward, discount and extras), provided each lane gets one
row per batched step on average, as the vectorised loop's do: a lane's episode
end makes two rows (its last step and its final observation) and the batched
reset step that follows none. A block is appended once every lane has a row,
so once a lane stops (its environment finished at the step limit) the others'
rows after that are not written: the last episodes of a run, at most one per
environment, are not trained on.
"""

import collections
import math
import operator
import time
from typing import Any, Deque, List, Optional, Sized

from acme.adders.reverb import base as acme_base
import dm_env
import numpy as np
import tensorflow as tf
import tree

from mava_systems.data.stacking import stack_arrays


def batched_signature(signature: Any, num_lanes: int) -> Any:
    """A sequence table's signature (leaves `[T, ...]`) for blocks of `num_lanes` sequences:
    leaves `[T, num_lanes, ...]`."""
    return tree.map_structure(
        lambda spec: tf.TensorSpec([spec.shape[0], num_lanes, *spec.shape[1:]], spec.dtype,
                                   name=spec.name), signature)


def items_holding(sequences: int, num_lanes: int) -> int:
    """Blocks of `num_lanes` sequences holding at least `sequences` of them (at least one)."""
    return max(1, math.ceil(sequences / num_lanes))


def lane_major_sequences(sample: Any, num_lanes: int) -> Any:
    """A sampled block (`reverb.ReplaySample` whose data leaves are `[T, num_lanes, ...]`) as
    `num_lanes` samples along a new leading axis: data `[num_lanes, T, ...]`, the item's info
    repeated. `unbatch()` after it yields one sequence per lane."""
    data = tree.map_structure(
        lambda leaf: tf.transpose(leaf, [1, 0] + list(range(2, len(leaf.shape)))), sample.data)
    info = tree.map_structure(lambda leaf: tf.repeat(leaf[None], num_lanes, axis=0), sample.info)
    return sample._replace(info=info, data=data)


def stack_rows(rows: List[Any]) -> Any:
    """Rows of one structure as one nest, each leaf the rows' leaves stacked (leading axis)."""
    columns = zip(*[tree.flatten(row) for row in rows], strict=True)
    return tree.unflatten_as(rows[0], [stack_arrays(column) for column in columns])


class BatchedSequenceWriter:
    """Writes the rows of `num_lanes` environments' streams as one stream of stacked rows, and
    every `period` rows (from the `sequence_length`-th on) an item of the last
    `sequence_length`, leaves `[sequence_length, num_lanes, ...]` (see the module's docstring).

    `lanes[i]` is environment i's adder. Items stream to the server without a
    round trip each: the writer waits only when more than `max_in_flight_items`
    are unconfirmed (where a full queue holds executors back); `wait_s` adds up
    those waits.
    """

    def __init__(self, client: Any, table: str, num_lanes: int, sequence_length: int,
                 period: int, max_in_flight_items: int = 2, priority: float = 1.0):
        if num_lanes < 1:
            raise ValueError(f"num_lanes must be at least 1, got {num_lanes}")
        if not 1 <= period <= sequence_length:
            raise ValueError(f"period must be in [1, sequence_length={sequence_length}], "
                             f"got {period}")
        self._client = client
        self._table = table
        self._sequence_length = sequence_length
        self._period = period
        self._max_in_flight_items = max_in_flight_items
        self._priority = priority
        self._writer: Optional[Any] = None
        self._rows: List[Deque[Any]] = [collections.deque() for _ in range(num_lanes)]
        self._lanes_with_rows = 0
        self.rows_written = 0  # Stacked rows appended (each one row of every lane).
        self.wait_s = 0.0  # Seconds spent waiting for items to be confirmed (see the class).
        self.lanes = [SequenceLane(self, index) for index in range(num_lanes)]

    def push(self, lane: int, row: Any) -> None:
        """Queues lane `lane`'s next row; appends stacked rows while every lane has one."""
        queue = self._rows[lane]
        queue.append(row)
        if len(queue) == 1:
            self._lanes_with_rows += 1
            while self._lanes_with_rows == len(self._rows):
                self._append(stack_rows([self._pop(index) for index in range(len(self._rows))]))

    def append_block(self, step: Any) -> None:
        """Appends one stacked row holding every lane's (leaves `[num_lanes, ...]`), as `push`
        would once each lane had pushed its row: for a writer fed by blocks only (no lane may
        hold queued rows)."""
        if self._lanes_with_rows:
            raise ValueError("append_block with lanes' rows queued: feed a writer either by "
                             "lanes or by blocks")
        self._append(step)

    def flush(self) -> None:
        """Waits until every item written so far is in replay."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Closes the stream (items not yet confirmed are dropped)."""
        if self._writer is not None:
            self._writer.close()

    def _pop(self, lane: int) -> Any:
        queue = self._rows[lane]
        row = queue.popleft()
        if not queue:
            self._lanes_with_rows -= 1
        return row

    def _append(self, step: Any) -> None:
        if self._writer is None:
            self._writer = self._client.trajectory_writer(
                num_keep_alive_refs=self._sequence_length)
        self._writer.append(step)
        self.rows_written += 1
        beyond = self.rows_written - self._sequence_length
        if beyond >= 0 and beyond % self._period == 0:
            last = operator.itemgetter(slice(-self._sequence_length, None))
            history = self._writer.history
            trajectory = acme_base.Trajectory(
                **{field: tree.map_structure(last, history[field]) if field in history else ()
                   for field in acme_base.Trajectory._fields})
            self._writer.create_item(self._table, self._priority, trajectory)
            started = time.monotonic()
            self._writer.flush(self._max_in_flight_items)
            self.wait_s += time.monotonic() - started


class SequenceLane:
    """One environment's adder into a `BatchedSequenceWriter`: the rows Acme's `ReverbAdder`
    appends (observation and its start-of-episode flag with the action taken there, its reward,
    discount and extras; an episode's final observation with zeros), handed to the writer."""

    def __init__(self, writer: BatchedSequenceWriter, index: int):
        self._writer = writer
        self._index = index
        self._observation: Optional[tuple] = None  # (observation, start_of_episode) awaiting its action.

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode with its first observation."""
        if not timestep.first():
            raise ValueError(f"add_first needs the first timestep of an episode, got step type "
                             f"{timestep.step_type}")
        self._observation = (timestep.observation, True)

    def add(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        """Completes the pending observation's row with `action`, its reward, discount and
        `extras`; at an episode's end also the final observation's row (zeros beside it)."""
        if self._observation is None:
            raise ValueError("add_first must be called before add")
        step = dict(action=action, reward=next_timestep.reward, discount=next_timestep.discount)
        if len(extras) > 0 if isinstance(extras, Sized) else extras is not None:  # Acme's test.
            step["extras"] = extras
        observation, start = self._observation
        self._writer.push(self._index, dict(observation=observation, start_of_episode=start,
                                            **step))
        if next_timestep.last():
            self._writer.push(self._index, dict(
                observation=next_timestep.observation, start_of_episode=next_timestep.first(),
                **tree.map_structure(np.zeros_like, step)))
            self._observation = None
        else:
            self._observation = (next_timestep.observation, next_timestep.first())

    def reset(self) -> None:
        """Forgets the pending observation (its rows already handed over stay written)."""
        self._observation = None

    def flush(self) -> None:
        """Waits until every item the writer wrote so far is in replay."""
        self._writer.flush()
