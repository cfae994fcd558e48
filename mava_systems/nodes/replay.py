"""Replay plumbing that lets a program stop.

A Reverb insert blocked by the rate limiter, or a sample waiting for data,
never returns by itself, and stopping the server under them can hang too. So
every blocking replay call here waits in short slices and raises
`ProgramStopping` once the program's stop event is set; writers close their
streams when they see it, and a loop that ends at the stop closes the ones it
left idle (`close_this_threads_writers`): a server stops at once when no
stream is open, but waits 5 s for each one that is.
"""

import threading
import weakref
from typing import Any, Callable, Iterator, Optional, TypeVar

from absl import logging
import reverb
import tensorflow as tf

from mava_systems.data.batched_sequences import items_holding, lane_major_sequences
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event

POLL_INTERVAL_MS = 1000

T = TypeVar("T")

# The writers made in each thread (by the loop that writes with them), to close at its end.
_threads_writers = threading.local()


class _StopAwareWriter:
    """A `reverb.TrajectoryWriter` that closes itself and raises `ProgramStopping` at program stop.

    Calls without a timeout (which could block forever on the rate limiter)
    wait in slices of `POLL_INTERVAL_MS`, checking the stop event in between.
    Calls with a timeout (e.g. Acme's final flush) return quietly at stop.
    """

    def __init__(self, writer: reverb.TrajectoryWriter, stop_event: threading.Event):
        self._writer = writer
        self._stop_event = stop_event
        self._closed = False

    def flush(self, block_until_num_items: int = 0, timeout_ms: Optional[int] = None) -> None:
        while not self._stopped(timeout_ms):
            try:
                return self._writer.flush(
                    block_until_num_items,
                    timeout_ms=POLL_INTERVAL_MS if timeout_ms is None else timeout_ms)
            except reverb.errors.DeadlineExceededError:
                if timeout_ms is not None:
                    raise

    def end_episode(self, clear_buffers: bool = True, timeout_ms: Optional[int] = None) -> None:
        if self._stopped(timeout_ms):
            return
        if timeout_ms is None:
            # Wait for pending items here, stop-aware, so that end_episode cannot block.
            # (A timed-out end_episode leaves the Python-side history inconsistent.)
            self.flush()
        self._writer.end_episode(clear_buffers, timeout_ms=timeout_ms)

    def close(self) -> None:
        """Closes the stream; pending items are dropped."""
        if not self._closed:
            self._closed = True
            self._writer.close()

    def _stopped(self, timeout_ms: Optional[int]) -> bool:
        """True when closed; at program stop closes, then raises unless the caller set a timeout."""
        if not self._closed and self._stop_event.is_set():
            self.close()
            if timeout_ms is None:
                raise ProgramStopping()
        return self._closed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


class StopAwareClient:
    """A `reverb.Client` whose trajectory writers stop blocking when the program stops."""

    def __init__(self, client: reverb.Client, stop_event: Optional[threading.Event] = None):
        self._client = client
        self._stop_event = stop_event or program_stop_event()

    def trajectory_writer(self, *args, **kwargs) -> _StopAwareWriter:
        """A writer; waits (until the program stops) for a server too busy to answer, e.g. one
        restoring a large checkpoint, whose table signatures do not come within 3 s."""
        attempts = 0
        while True:
            try:
                made = self._client.trajectory_writer(*args, **kwargs)
                break
            except RuntimeError as error:
                if "Deadline Exceeded" not in str(error):
                    raise
                attempts += 1
                logging.warning("Replay did not answer a new writer in time (attempt %d): %s; "
                                "trying again", attempts, error)
                if self._stop_event.wait(POLL_INTERVAL_MS / 1000):
                    raise ProgramStopping() from error
        writer = _StopAwareWriter(made, self._stop_event)
        if not hasattr(_threads_writers, "writers"):
            _threads_writers.writers = weakref.WeakSet()
        _threads_writers.writers.add(writer)
        return writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def close_this_threads_writers() -> None:
    """Closes every stop-aware writer made in the calling thread (pending items are dropped).

    For a loop ending at the program's stop: a writer it left idle (e.g.
    waiting for the stop at the step limit) would keep its stream open, and
    the replay server's stop then waits 5 s for it.
    """
    for writer in list(getattr(_threads_writers, "writers", ())):
        writer.close()


class ReplayIterator:
    """Iterates a Reverb dataset whose samples time out, remaking it until the program stops.

    `make_dataset(rate_limiter_timeout_ms)` must return a `tf.data.Dataset` of
    samples that ends when sampling waits longer than the timeout. Once the
    program stops (or `stop_sampling` was called), a dataset that ends raises
    `ProgramStopping` instead of being remade.
    """

    def __init__(self, make_dataset: Callable[[int], tf.data.Dataset],
                 stop_event: Optional[threading.Event] = None):
        self._make_dataset = make_dataset
        self._stop_event = stop_event or program_stop_event()
        self._sampling_stopped = threading.Event()
        self._iterator: Optional[Iterator[reverb.ReplaySample]] = None

    def stop_sampling(self) -> None:
        """Ends the iteration as the program's stop does: what was sampled is still served,
        then the next sampling timeout raises `ProgramStopping` (a caller waiting for a
        batch returns within one timeout)."""
        self._sampling_stopped.set()

    def _stopped(self) -> bool:
        return self._stop_event.is_set() or self._sampling_stopped.is_set()

    def __iter__(self) -> "ReplayIterator":
        return self

    def __next__(self) -> reverb.ReplaySample:
        return self.apply(next)

    def apply(self, function: Callable[[Iterator[Any]], T]) -> T:
        """`function(iterator)` on the current `tf.data` iterator (e.g. a compiled step that
        samples inside its graph), remade and retried when it runs out."""
        while True:
            if self._iterator is None:
                if self._stopped():  # Building a dataset takes a while: not at stop.
                    raise ProgramStopping()
                self._iterator = iter(self._make_dataset(POLL_INTERVAL_MS))
            try:
                return function(self._iterator)
            except (StopIteration, tf.errors.OutOfRangeError):
                self._iterator = None
                if self._stopped():
                    raise ProgramStopping() from None


def make_trajectory_dataset(server_address: str, table: str, batch_size: int,
                            prefetch_size: int, num_parallel_calls: int,
                            rate_limiter_timeout_ms: int = -1,
                            lanes_per_item: int = 1) -> tf.data.Dataset:
    """Batches of items as stored in `table`, sampled through `num_parallel_calls` streams, prefetched.

    With `lanes_per_item` B > 1, each item is a time-major block of B sequences
    (data/batched_sequences.py) and the batches are of sequences: each block is
    split into its B sequences (its info repeated) before batching.

    The dataset runs no function of its own: consumers unpack items inside
    their compiled step. A `map` here would run in TensorFlow's inter-op pool,
    queued behind the train step's operations (one thread by default, see
    `--tf_threads`), and yield many more tensors to convert in Python.
    """

    def make_stream(_: Any = None) -> tf.data.Dataset:
        return item_stream(server_address, table, rate_limiter_timeout_ms, lanes_per_item,
                           items_holding(batch_size, lanes_per_item)
                           ).batch(batch_size, drop_remainder=True)

    if num_parallel_calls == 1:
        dataset = make_stream()
    else:
        dataset = tf.data.Dataset.range(num_parallel_calls).interleave(
            make_stream, cycle_length=num_parallel_calls, num_parallel_calls=num_parallel_calls,
            deterministic=False)
    return dataset.prefetch(prefetch_size) if prefetch_size else dataset


def item_stream(server_address: str, table: str, rate_limiter_timeout_ms: int = -1,
                lanes_per_item: int = 1, max_in_flight: Optional[int] = None) -> tf.data.Dataset:
    """Single items as stored in `table` (sequences: each block of `lanes_per_item` split into
    its sequences), ending when sampling waits longer than the timeout. Without
    `max_in_flight`, one worker with one sample in flight: a queue's items in insertion order."""
    ordered = max_in_flight is None
    stream = reverb.TrajectoryDataset.from_table_signature(
        server_address=server_address, table=table,
        max_in_flight_samples_per_worker=1 if ordered else max_in_flight,
        num_workers_per_iterator=1 if ordered else -1,
        rate_limiter_timeout_ms=rate_limiter_timeout_ms)
    if lanes_per_item > 1:
        stream = stream.map(lambda sample: lane_major_sequences(sample, lanes_per_item)
                            ).unbatch()
    return stream
