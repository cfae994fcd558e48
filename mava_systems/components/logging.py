"""Loggers for every node: terminal, CSV under <run_dir>/logs/<label>/, TensorBoard under <run_dir>/tensorboard/<label>/."""

import os
from typing import Optional

from acme.utils import loggers
from acme.utils.loggers import tf_summary


def make_logger(
    run_dir: str,
    label: str,
    terminal_interval_s: float = 10.0,
    steps_key: Optional[str] = None,
    csv_flush_every: int = 1,
) -> loggers.Logger:
    """A logger writing `label`'s rows to the terminal (throttled), CSV and TensorBoard.

    The CSV file is flushed every `csv_flush_every` rows, so a killed run's logs
    show how far it got.
    """
    destinations = [
        loggers.TerminalLogger(label=label, print_fn=print, time_delta=terminal_interval_s),
        loggers.CSVLogger(directory_or_file=run_dir, label=label, add_uid=False,
                          flush_every=csv_flush_every),
        tf_summary.TFSummaryLogger(
            logdir=os.path.join(run_dir, "tensorboard", label), label=label, steps_key=steps_key
        ),
    ]
    return loggers.NoneFilter(loggers.Dispatcher(destinations))
