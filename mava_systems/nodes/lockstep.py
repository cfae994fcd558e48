"""Lockstep training and acting: what makes a deterministic run (`config.deterministic`) repeat
once training starts.

- **Data.** Replay becomes a queue read in insertion order (`queue_tables`), and the trainer's
  batches come from `LockstepBatches`: its step k waits until it has read `items_before(k)`
  items (an exact samples-per-insert schedule, `TrainingSchedule`); an off-policy trainer
  keeps them in a buffer of its own (of the replay's capacity) sampled by a seeded generator,
  uniformly or by priority; an on-policy one trains on them in order, each once.
- **Variables.** Every `variable_update_period` of its steps an executor flushes its writers and
  asks the trainer for its variables after every step the items it has inserted allow
  (`LockstepVariableClient` -> `TrainerLoop.lockstep_variables`), waiting for the trainer to
  take them; the trainer takes no step beyond what the executors' requests allow.
- **Evaluation.** The trainer keeps the variables it served (`ServedSnapshots`): the evaluator's
  snapshot of step m is what executor 0 acted with after its step m.

With one executor, every batch and every variable fetch is a function of the seed and the
flags only. With several, their items reach the queue in the order of the threads' timing
(docs/experiments.md, Deterministic runs).
"""

import collections
import fractions
import math
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import reverb
import tensorflow as tf

from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event
from mava_systems.nodes.replay import POLL_INTERVAL_MS

# Seconds between checks of the stop while a lockstep call waits.
WAIT_SLICE_S = 0.2


def queue_tables(tables: Sequence[reverb.Table]) -> List[reverb.Table]:
    """Each table as a queue of its name, capacity and signature (read in insertion order, each
    item once): the replay of a lockstep run."""
    queues = []
    for table in tables:
        info = table.info
        queues.append(reverb.Table.queue(name=table.name, max_size=max(1, int(info.max_size)),
                                         signature=info.signature))
    return queues


class TrainingSchedule:
    """How many items the trainer reads before each of its steps: `first` before step 1, then
    `items_per_step` more per step (a fraction: the exact samples-per-insert ratio)."""

    def __init__(self, first: int, items_per_step: Any):
        self.first = int(first)
        self.items_per_step = fractions.Fraction(items_per_step)
        if self.first < 1 or self.items_per_step <= 0:
            raise ValueError(f"a training schedule needs first >= 1 and items_per_step > 0, got "
                             f"{first}, {items_per_step}")

    def items_before(self, step: int) -> int:
        """Items read before trainer step `step` (1-based)."""
        return self.first + math.ceil((step - 1) * self.items_per_step)

    def steps_with(self, items: int) -> int:
        """The trainer steps `items` read items allow."""
        if items < self.first:
            return 0
        return 1 + math.floor((items - self.first) / self.items_per_step)


class _ItemBuffer:
    """The off-policy trainer's own replay: the last `capacity` items read, sampled uniformly
    or with probability priority ** `priority_exponent`, by a seeded generator."""

    def __init__(self, capacity: int, seed: int, priority_exponent: Optional[float]):
        self._capacity = capacity
        self._items: List[Any] = [None] * capacity
        self._keys = np.zeros(capacity, np.uint64)
        self._priorities = np.ones(capacity, np.float64)
        self._exponent = priority_exponent
        self._generator = np.random.default_rng(seed)
        self._added = 0

    def add(self, item: Any, priority: float) -> None:
        slot = self._added % self._capacity
        self._items[slot] = item
        self._keys[slot] = self._added
        self._priorities[slot] = priority
        self._added += 1

    @property
    def size(self) -> int:
        return min(self._added, self._capacity)

    def sample(self, batch_size: int) -> Tuple[List[Any], reverb.SampleInfo]:
        size = self.size
        if self._exponent is None:
            slots = self._generator.integers(size, size=batch_size)
            probability = np.full(batch_size, 1.0 / size)
        else:
            weights = self._priorities[:size] ** self._exponent
            weights = weights / weights.sum()
            slots = self._generator.choice(size, size=batch_size, p=weights)
            probability = weights[slots]
        info = reverb.SampleInfo(key=self._keys[slots], probability=probability,
                                 table_size=np.full(batch_size, size, np.int64),
                                 priority=self._priorities[slots])
        return [self._items[slot] for slot in slots], info

    def set_priorities(self, updates: Dict[Any, float]) -> None:
        for key, priority in updates.items():
            slot = int(key) % self._capacity
            if int(self._keys[slot]) == int(key) and int(key) < self._added:
                self._priorities[slot] = float(priority)


class LockstepBatches:
    """The trainer's batches in a lockstep run: step k's is a function of the items read so
    far (in insertion order) and the seed only (see the module's docstring).

    `make_stream(timeout_ms)` makes a `tf.data.Dataset` of single items in the queue's order
    (ending when none comes within the timeout); a thread reads them as they come. Step k
    waits until `items_before(k)` items were read and a request allowed it (`request`).
    `buffer_capacity` None: batches are the items in order (on-policy), else sampled from a
    buffer of that capacity (with priorities when `priority_exponent` is set).
    """

    def __init__(self, make_stream: Callable[[int], tf.data.Dataset], batch_size: int,
                 schedule: TrainingSchedule, buffer_capacity: Optional[int] = None,
                 seed: int = 0, priority_exponent: Optional[float] = None,
                 lanes_per_item: int = 1, stop_event: Optional[threading.Event] = None):
        self._make_stream = make_stream
        self._batch_size = batch_size
        self.schedule = schedule
        self._buffer = (None if buffer_capacity is None
                        else _ItemBuffer(buffer_capacity, seed, priority_exponent))
        self._lanes_per_item = lanes_per_item
        self._stop_event = stop_event or program_stop_event()
        self._changed = threading.Condition()
        self._read: collections.deque = collections.deque()  # Items read, not yet used.
        self._used = 0  # Items moved to the buffer (or trained on in order).
        self._handed_out = 0  # Batches given to the trainer.
        self._waiting = False  # The trainer waits for its next batch.
        self._allowed = 0  # Trainer steps the requests allow.
        self._inserted: Dict[int, int] = {}  # Items each executor said it has inserted.
        self._sampling_stopped = False
        self._error: Optional[BaseException] = None
        self._reader: Optional[threading.Thread] = None

    # The trainer's side.
    def __iter__(self) -> "LockstepBatches":
        return self

    def __next__(self) -> reverb.ReplaySample:
        self._start_reading()
        step = self._handed_out + 1
        needed = self.schedule.items_before(step)
        with self._changed:
            self._waiting = True
            self._changed.notify_all()
            try:
                while not (step <= self._allowed and self._used + len(self._read) >= needed):
                    self._check_running()
                    self._changed.wait(WAIT_SLICE_S)
                self._check_running()
            finally:
                self._waiting = False
            items, info = self._take(needed)
            self._handed_out = step
        data = tf.nest.map_structure(lambda *leaves: tf.convert_to_tensor(np.stack(leaves)),
                                     *items)
        return reverb.ReplaySample(info=reverb.SampleInfo(*map(tf.convert_to_tensor, info)),
                                   data=data)

    def _take(self, needed: int) -> Tuple[List[Any], reverb.SampleInfo]:
        if self._buffer is None:
            items = [self._read.popleft() for _ in range(needed - self._used)]
            self._used = needed
            count = len(items)
            return [data for data, _ in items], reverb.SampleInfo(
                key=np.arange(self._used - count, self._used, dtype=np.uint64),
                probability=np.ones(count), table_size=np.full(count, count, np.int64),
                priority=np.ones(count))
        while self._used < needed:
            data, priority = self._read.popleft()
            self._buffer.add(data, priority)
            self._used += 1
        return self._buffer.sample(self._batch_size)

    def _check_running(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"reading the replay queue failed: {self._error}") from self._error
        if self._sampling_stopped or self._stop_event.is_set():
            raise ProgramStopping()

    def stop_sampling(self) -> None:
        """The next batch (or the one awaited) raises `ProgramStopping` (as `ReplayIterator`'s)."""
        with self._changed:
            self._sampling_stopped = True
            self._changed.notify_all()

    def mutate_priorities(self, table: str, updates: Dict[Any, float]) -> None:
        """New priorities of sampled items (keys as the batches' info gave them)."""
        del table
        if self._buffer is not None:
            with self._changed:
                self._buffer.set_priorities(updates)

    # The executors' side (through the trainer's `lockstep_variables`).
    def request(self, executor_id: int, items: int) -> int:
        """Executor `executor_id` has inserted `items` items (all flushed): allows the steps all
        the executors' items allow; returns that step."""
        with self._changed:
            self._inserted[executor_id] = items * self._lanes_per_item
            self._allowed = max(self._allowed,
                                self.schedule.steps_with(sum(self._inserted.values())))
            self._changed.notify_all()
            return self._allowed

    @property
    def allowed_steps(self) -> int:
        """The trainer steps the executors' fetches have allowed so far."""
        with self._changed:
            return self._allowed

    def wait_idle(self, step: int, timeout_s: Optional[float] = None) -> None:
        """Returns once the trainer has taken `step` steps and waits for its next batch (its
        variables are those of step `step`), or has gone past it, or stopped (or `timeout_s`
        has passed, if given)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._changed:
            while not (self._handed_out > step or (self._handed_out == step and self._waiting)):
                if self._sampling_stopped or self._stop_event.is_set() or self._error:
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                self._changed.wait(WAIT_SLICE_S)

    # Reading the queue.
    def _start_reading(self) -> None:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_items, name="lockstep replay",
                                            daemon=True)
            self._reader.start()

    def _read_items(self) -> None:
        try:
            while not (self._stop_event.is_set() or self._sampling_stopped):
                for sample in self._make_stream(POLL_INTERVAL_MS):
                    data = tf.nest.map_structure(lambda tensor: tensor.numpy(), sample.data)
                    priority = float(sample.info.priority.numpy())
                    with self._changed:
                        self._read.append((data, priority))
                        self._changed.notify_all()
                    if self._stop_event.is_set():
                        return
        except Exception as error:  # pylint: disable=broad-except
            if not self._stop_event.is_set():
                with self._changed:
                    self._error = error
                    self._changed.notify_all()


class PrioritiesToBatches:
    """The trainer's replay client in a lockstep run: new priorities go to its batches' buffer;
    everything else (e.g. checkpoints) to replay."""

    def __init__(self, client: Any, batches: LockstepBatches):
        self._client = client
        self._batches = batches

    def mutate_priorities(self, table: str, updates: Dict[Any, float]) -> None:
        """Sets the priorities of items the trainer's buffer sampled."""
        self._batches.mutate_priorities(table, updates)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class ServedSnapshots:
    """The variables the trainer served executor 0 at its lockstep fetches, kept while an
    evaluation at a multiple of `every_steps` (None: none) may still ask for them."""

    def __init__(self, every_steps: Optional[int]):
        self._every_steps = every_steps
        self._snapshots: List[Tuple[int, Tuple[str, ...], Any]] = []  # (step, names, variables)
        self._asked = -1  # The last step the evaluator asked for.
        self._changed = threading.Condition()

    def add(self, step: int, names: Sequence[str], variables: Any) -> None:
        """Executor 0 acts with `variables` (of `names`) from its step `step`."""
        with self._changed:
            if self._snapshots and not self._asked_later(self._snapshots[-1][0], step):
                self._snapshots.pop()
            self._snapshots.append((step, tuple(names), variables))
            self._changed.notify_all()

    def _asked_later(self, since: int, until: int) -> bool:
        """Whether an evaluation not yet asked for falls in [since, until)."""
        if not self._every_steps:
            return False
        first = max(since, self._asked + 1)
        multiple = -(-first // self._every_steps) * self._every_steps
        return multiple < until

    def at(self, step: int, names: Sequence[str],
           stop_event: Optional[threading.Event] = None) -> Any:
        """The variables executor 0 acted with after its step `step` (asked once it has passed
        that step), waiting for its first fetch.

        Raises:
          ValueError: if those served were of other names.
          ProgramStopping: if the program stops first.
        """
        stop_event = stop_event or program_stop_event()
        with self._changed:
            self._asked = max(self._asked, step)
            while not (self._snapshots and self._snapshots[0][0] <= step):
                if stop_event.is_set():
                    raise ProgramStopping()
                self._changed.wait(WAIT_SLICE_S)
            earlier = [index for index, entry in enumerate(self._snapshots) if entry[0] <= step]
            del self._snapshots[:earlier[-1]]
            _, served_names, variables = self._snapshots[0]
        if tuple(names) != served_names:
            raise ValueError(f"variables {list(names)} asked for, {list(served_names)} served")
        return variables


class _CountingWriter:
    """A trajectory writer whose items its `InsertionTracker` counts."""

    def __init__(self, writer: Any, tracker: "InsertionTracker"):
        self._writer = writer
        self._tracker = tracker
        self.closed = False

    def create_item(self, *args: Any, **kwargs: Any) -> None:
        self._writer.create_item(*args, **kwargs)
        self._tracker.created(self)

    def close(self) -> None:
        self.closed = True
        self._writer.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


class InsertionTracker:
    """An executor's replay client counting the items its writers create (`items`), which
    `flush()` sends and waits for."""

    def __init__(self, client: Any, stop_event: Optional[threading.Event] = None):
        self._client = client
        self._stop_event = stop_event or program_stop_event()
        self._writers: "weakref.WeakSet[_CountingWriter]" = weakref.WeakSet()
        self.items = 0

    def trajectory_writer(self, *args: Any, **kwargs: Any) -> _CountingWriter:
        """A writer of the client, counted."""
        writer = _CountingWriter(self._client.trajectory_writer(*args, **kwargs), self)
        self._writers.add(writer)
        return writer

    def created(self, writer: _CountingWriter) -> None:
        """Counts an item `writer` has created. While other writers are open (an executor of
        several environments, an adder each), waits until the item is in replay: the writers'
        streams would otherwise reach the queue in the order of their timing, not of their
        items' creation.

        Raises:
          ProgramStopping: if the program stops meanwhile.
        """
        self.items += 1
        if sum(not other.closed for other in list(self._writers)) > 1:
            self._flush(writer)

    def flush(self) -> None:
        """Waits until every item created so far is in replay.

        Raises:
          ProgramStopping: if the program stops meanwhile.
        """
        for writer in list(self._writers):
            self._flush(writer)

    def _flush(self, writer: _CountingWriter) -> None:
        while not writer.closed:
            try:
                writer.flush(timeout_ms=POLL_INTERVAL_MS)
                return
            except reverb.errors.DeadlineExceededError:
                if self._stop_event.is_set():
                    raise ProgramStopping() from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class LockstepVariableClient:
    """An executor's variable client in a lockstep run: every `update_period` of its `update`
    calls (each `steps_per_update` environment steps) it flushes the executor's items and
    fetches the trainer's variables after every step they allow (see the module's docstring),
    synchronously. Wraps the builder's client (its keys, copies and `version`)."""

    def __init__(self, client: Any, source: Any, tracker: InsertionTracker, executor_id: int,
                 steps_per_update: int = 1):
        self._client = client
        self._source = source
        self._tracker = tracker
        self._executor_id = executor_id
        self._steps_per_update = steps_per_update
        self._updates = 0
        self.start_step = 0  # The executor's step count when it started (resumed runs).
        client._request = self._fetch  # pylint: disable=protected-access

    def update(self, wait: bool = False) -> None:
        """Counts a step; fetches at every `update_period`-th."""
        del wait
        self._updates += 1
        if self._updates % self._client._update_period == 0:  # pylint: disable=protected-access
            self._client.update_and_wait()

    def update_and_wait(self) -> None:
        """Fetches now."""
        self._client.update_and_wait()

    def _fetch(self) -> Any:
        self._tracker.flush()
        step = self.start_step + self._updates * self._steps_per_update
        return self._source.lockstep_variables(
            self._client._keys, self._executor_id, step,  # pylint: disable=protected-access
            self._tracker.items)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
