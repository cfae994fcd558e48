"""Loggers for every node: terminal, CSV under `<run_dir>/logs/<label>/`, TensorBoard under `<run_dir>/tensorboard/<label>/`."""

import atexit
import math
import os
import sys
import time
from typing import Callable, Dict, Optional, Sequence

from acme.utils import loggers
import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.scalar import summary_v2 as scalar_summary
from tensorboard.summary.writer import event_file_writer

from mava_systems.progress import CLEAR_LINE, CountRate

# Program-wide counts whose rates every row carries, as `<count>_per_second`.
RATE_KEYS = ("executor_steps", "trainer_steps")


def print_log_line(text: str) -> None:
    """Prints one terminal log line; on a terminal it first clears the live progress line.

    The launcher's progress line (`mava_systems.progress`) leaves the cursor at
    its end, so without the clear a log line would continue it.
    """
    print((CLEAR_LINE if sys.stdout.isatty() else "") + text, flush=True)


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
    megabytes an hour (see the soak results in docs/benchmarks.md).
    """

    def __init__(self, logdir: str, label: str, steps_key: Optional[str] = None):
        self._writer = event_file_writer.EventFileWriter(logdir)
        # Its writer thread is a daemon: at exit, write what is still queued.
        atexit.register(self.close)
        self._label = label
        self._steps_key = steps_key
        self._rows = 0

    def write(self, values: loggers.LoggingData) -> None:
        step = values.get(self._steps_key, self._rows) if self._steps_key else self._rows
        summary = summary_pb2.Summary()
        for key, value in values.items():
            if key != self._steps_key:
                add_scalar(summary, f"{self._label}/{key}", value)
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                               summary=summary))
        self._rows += 1

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
    read these files, and a killed run's logs show how far it got.
    """
    destinations = [
        loggers.TerminalLogger(label=label, print_fn=print_log_line, time_delta=terminal_interval_s),
        loggers.CSVLogger(directory_or_file=run_dir, label=label, add_uid=False, flush_every=1),
        TensorBoardLogger(os.path.join(run_dir, "tensorboard", label), label, steps_key),
    ]
    logger = CountRateLogger(loggers.NoneFilter(loggers.Dispatcher(destinations)))
    return loggers.TimeFilter(logger, time_delta) if time_delta > 0 else logger
