"""Loggers for every node: terminal, CSV under `<run_dir>/logs/<label>/`, TensorBoard under `<run_dir>/tensorboard/<label>/`."""

import atexit
import itertools
import math
import os
import socket
import sys
import time
from typing import Callable, Dict, Optional, Sequence

from absl import logging
from acme.utils import loggers
import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.scalar import summary_v2 as scalar_summary

from mava_systems.runs.disk_space import is_disk_full, stop_for_full_disk
from mava_systems.runs.event_records import RecordWriter
from mava_systems.terminal.progress import CLEAR_LINE, CountRate

# Program-wide counts whose rates every row carries, as `<count>_per_second`.
RATE_KEYS = ("executor_steps", "trainer_steps")


def print_log_line(text: str) -> None:
    """Prints one terminal log line; on a terminal it first clears the live progress line.

    The launcher's progress line (`mava_systems.terminal.progress`) leaves the cursor at
    its end, so without the clear a log line would continue it.
    """
    print((CLEAR_LINE if sys.stdout.isatty() else "") + text, flush=True)


# Numbers the event files one process opens within a second (as TensorBoard's writer does).
_EVENT_FILES = itertools.count()


class EventFile:
    """A TensorBoard event file written in the calling thread, flushed every `flush_s` seconds.

    TensorBoard's own `EventFileWriter` writes from a background thread through a
    bounded queue: when a write fails (a full disk) that thread dies, and the
    next writes and `close()` wait on the queue forever. Here a failed write
    raises in the writer's thread, and `close()` never raises or waits.
    """

    def __init__(self, logdir: str, flush_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        os.makedirs(logdir, exist_ok=True)
        self.path = os.path.join(logdir, f"events.out.tfevents.{int(time.time()):010d}."
                                         f"{socket.gethostname()}.{os.getpid()}.{next(_EVENT_FILES)}")
        self._file = open(self.path, "wb")  # pylint: disable=consider-using-with
        self._records = RecordWriter(self._file)
        self._flush_s = flush_s
        self._clock = clock
        self._flushed_at = clock()
        self.add_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))
        self.flush()

    def add_event(self, event: event_pb2.Event) -> None:
        """Writes `event` (flushing if `flush_s` has passed since the last flush).

        Raises:
          OSError: if the file cannot be written (e.g. the disk is full).
        """
        self._records.write(event.SerializeToString())
        if self._clock() - self._flushed_at >= self._flush_s:
            self.flush()

    def flush(self) -> None:
        """Writes what is buffered to the file."""
        self._flushed_at = self._clock()
        self._file.flush()

    def close(self) -> None:
        """Flushes and closes the file; what cannot be written then is dropped, with a warning."""
        if self._file.closed:
            return
        try:
            self._file.close()
        except OSError as error:
            logging.warning("The end of %s was not written: %s", self.path, error)


# What every scalar summary carries: TensorBoard's scalar plugin metadata, made once.
_SCALAR_METADATA = scalar_metadata.create_summary_metadata(display_name=None, description=None)
_SCALAR_SHAPE = tensor_shape_pb2.TensorShapeProto()


def add_scalar(summary: summary_pb2.Summary, tag: str, value: float) -> None:
    """Adds to `summary` what TensorBoard's `scalar_pb(tag, value)` holds (the same bytes),
    at a fifth of its cost: that function converts each value through NumPy and a
    general tensor builder, which made the TensorBoard row most of a log write."""
    array = np.asarray(value)
    if array.shape != () or array.dtype.kind not in "biuf":
        summary.value.extend(scalar_summary.scalar_pb(tag, value).value)  # Raises its error.
        return
    summary.value.add(tag=tag, metadata=_SCALAR_METADATA, tensor=tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, tensor_shape=_SCALAR_SHAPE, float_val=[float(array)]))


class TensorBoardLogger(loggers.Logger):
    """Writes each row's values as TensorBoard scalars tagged `<label>/<key>`.

    The tags are the CSV's column names (Acme's `TFSummaryLogger` title-cases
    them: `q_value/agent_0` would become `QValue/Agent0`). The step is the row's
    `steps_key` value, or the row's index without one.

    Rows are written as TensorBoard's own scalar summaries (protocol buffers, as
    `tf.summary.scalar` writes them) by TensorBoard's event file writer, without
    TensorFlow ops: `tf.summary.scalar` in eager mode kept about 2 KB of native
    memory per row of 15 values, so an executor logging every episode grew by
    megabytes an hour (see the soak results in docs/benchmarks.md). They are written
    in the logging thread (see `EventFile`).
    """

    def __init__(self, logdir: str, label: str, steps_key: Optional[str] = None):
        self._writer = EventFile(logdir)
        atexit.register(self.close)  # Write what is still buffered.
        self._label = label
        self._steps_key = steps_key
        self._rows = 0

    def write(self, values: loggers.LoggingData) -> None:
        step = values.get(self._steps_key, self._rows) if self._steps_key else self._rows
        if self._rows == 0:
            # A session start at the first step: TensorBoard drops what the directory's older
            # event files hold beyond it (a run resumed from counts older than its last rows).
            self._writer.add_event(event_pb2.Event(
                wall_time=time.time(), step=int(step),
                session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))
        summary = summary_pb2.Summary()
        for key, value in values.items():
            if key != self._steps_key:
                add_scalar(summary, f"{self._label}/{key}", value)
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                               summary=summary))
        self._rows += 1

    def write_image(self, key: str, encoded: bytes, height: int, width: int, step: int) -> None:
        """Writes an encoded image tagged `<label>/<key>`: a PNG, or an animated GIF, which
        TensorBoard's images dashboard plays."""
        image = summary_pb2.Summary.Image(height=height, width=width, colorspace=3,
                                          encoded_image_string=encoded)
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=f"{self._label}/{key}", image=image)])
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                               summary=summary))
        self._writer.flush()  # Rare and large: on disk at once.

    def close(self) -> None:
        self._writer.close()


class CountRateLogger(loggers.Logger):
    """Adds `<count>_per_second` for each of `keys` to every row, over the last `window_s` seconds.

    The rate is NaN until two rows were written (never missing: CSV columns are
    fixed by the first row). With the program-wide counts every row carries,
    `executor_steps_per_second` is also replay's insert rate (one n-step
    transition per executor step) and `trainer_steps_per_second` times the batch
    size its sample rate.
    """

    def __init__(self, to: loggers.Logger, keys: Sequence[str] = RATE_KEYS,
                 window_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self._to = to
        self._rates: Dict[str, CountRate] = {key: CountRate(window_s) for key in keys}
        self._clock = clock

    def write(self, values: loggers.LoggingData) -> None:
        now = self._clock()
        rates = {}
        for key, rate in self._rates.items():
            if key in values:
                per_second = rate.observe(now, values[key])
                rates[f"{key}_per_second"] = math.nan if per_second is None else per_second
        self._to.write({**values, **rates})

    def close(self) -> None:
        self._to.close()


class StopsProgramIfDiskFull(loggers.Logger):
    """Passes rows to `to` until a write finds the run directory's disk full; then stops the
    program (see `disk_space`) and drops every later row, so that no node waits on the disk.

    Other write errors are raised as they are.
    """

    def __init__(self, to: loggers.Logger, run_dir: str, label: str):
        self._to = to
        self._run_dir = run_dir
        self._label = label
        self._disk_full = False

    def write(self, values: loggers.LoggingData) -> None:
        if self._disk_full:
            return
        try:
            self._to.write(values)
        except OSError as error:
            if not is_disk_full(error):
                raise
            self._disk_full = True
            stop_for_full_disk(f"{self._label} logger", self._run_dir,
                               getattr(error, "filename", None) or
                               os.path.join(self._run_dir, "logs", self._label), error)

    def close(self) -> None:
        try:
            self._to.close()
        except OSError as error:
            if not is_disk_full(error):
                raise


def make_logger(
    run_dir: str,
    label: str,
    terminal_interval_s: float = 10.0,
    steps_key: Optional[str] = None,
    time_delta: float = 0.0,
) -> loggers.Logger:
    """A logger writing `label`'s rows to the terminal (throttled), CSV and TensorBoard.

    With `time_delta`, rows come `time_delta` seconds apart at most (the first
    is always written): a trainer takes hundreds of steps a second, and writing
    each would cost as much as the step.

    CSV columns and TensorBoard tags (after `<label>/`) are the row's keys; every row
    also gets the program-wide rates of `RATE_KEYS` (see `CountRateLogger`). The
    CSV file is flushed on every row: the launcher's progress line and live plots
    read these files, and a killed run's logs show how far it got. A full disk stops
    the program (see `StopsProgramIfDiskFull`).
    """
    destinations = [
        loggers.TerminalLogger(label=label, print_fn=print_log_line, time_delta=terminal_interval_s),
        loggers.CSVLogger(directory_or_file=run_dir, label=label, add_uid=False, flush_every=1),
        TensorBoardLogger(os.path.join(run_dir, "tensorboard", label), label, steps_key),
    ]
    logger = CountRateLogger(StopsProgramIfDiskFull(
        loggers.NoneFilter(loggers.Dispatcher(destinations)), run_dir, label))
    return loggers.TimeFilter(logger, time_delta) if time_delta > 0 else logger
