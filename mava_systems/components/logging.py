"""Loggers for every node: terminal, CSV under <run_dir>/logs/<label>/, TensorBoard under <run_dir>/tensorboard/<label>/."""

import os
import sys
from typing import Optional

from acme.utils import loggers
from acme.utils.loggers import tf_summary

from mava_systems.progress import CLEAR_LINE


def print_log_line(text: str) -> None:
    """Prints one terminal log line; on a terminal it first clears the live progress line.

    The launcher's progress line (`mava_systems.progress`) leaves the cursor at
    its end, so without the clear a log line would continue it.
    """
    print((CLEAR_LINE if sys.stdout.isatty() else "") + text, flush=True)


def make_logger(
    run_dir: str,
    label: str,
    terminal_interval_s: float = 10.0,
    steps_key: Optional[str] = None,
) -> loggers.Logger:
    """A logger writing `label`'s rows to the terminal (throttled), CSV and TensorBoard."""
    destinations = [
        loggers.TerminalLogger(label=label, print_fn=print_log_line, time_delta=terminal_interval_s),
        # Flushed on every row: the launcher's progress line and live plots read these files.
        loggers.CSVLogger(directory_or_file=run_dir, label=label, add_uid=False, flush_every=1),
        tf_summary.TFSummaryLogger(
            logdir=os.path.join(run_dir, "tensorboard", label), label=label, steps_key=steps_key
        ),
    ]
    return loggers.NoneFilter(loggers.Dispatcher(destinations))
