"""Logger memory: how much a node process's RSS grows per logged row.

    .venv/bin/python -m benchmarks.logger_memory [--rows 10000]

An executor logs a row of about 15 values per episode (hundreds a minute), so
a few KB kept per row is megabytes an hour (see the soak, `benchmarks/soak.py`).
Each variant writes `--rows` executor-like rows after 2,000 warm-up rows, in its
own subprocess (RSS is per process), and reports the RSS growth per row:

  node_logger        the node logger every node has (`make_logger`: terminal, CSV, TensorBoard)
  tensorboard        our `TensorBoardLogger` alone (TensorBoard's event file writer)
  tf_summary_scalar  (reference) the same rows through eager `tf.summary.scalar`, as the
                     TensorBoard logger wrote them before
  csv                Acme's CSV logger alone
"""

import gc
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

VARIANTS = {
    "node_logger": "node logger (terminal, CSV, TensorBoard)",
    "tensorboard": "TensorBoardLogger (event file writer)",
    "tf_summary_scalar": "(reference) eager tf.summary.scalar",
    "csv": "Acme CSVLogger",
}
WARMUP_ROWS = 2000


def executor_row(index: int) -> Dict[str, Any]:
    """A row like an executor's (3 agents): returns, lengths, counts, rates, epsilon."""
    return {"episode_length": 25, "episode_return": -80.0 - index % 7, "steps_per_second": 600.0,
            **{f"episode_return/agent_{agent}": -27.0 for agent in range(3)},
            **{f"episode_length/agent_{agent}": 25 for agent in range(3)},
            "executor_steps": 25 * index, "executor_episodes": index, "trainer_steps": 0,
            "evaluator_steps": 0, "evaluator_episodes": 0, "epsilon": 0.3}


def make_writer(variant: str, directory: str) -> Callable[[Dict[str, Any]], None]:
    """The `write(row)` of `variant`."""
    from acme.utils import loggers  # pylint: disable=import-outside-toplevel

    from mava_systems.runs import logging as node_logging  # pylint: disable=import-outside-toplevel

    if variant == "node_logger":
        return node_logging.make_logger(directory, "executor_0", 10.0, "executor_steps").write
    if variant == "tensorboard":
        return node_logging.TensorBoardLogger(directory, "executor_0", "executor_steps").write
    if variant == "csv":
        return loggers.CSVLogger(directory_or_file=directory, label="executor_0", add_uid=False,
                                 flush_every=1).write
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    summary = tf.summary.create_file_writer(directory)

    def write(row: Dict[str, Any]) -> None:
        with summary.as_default():
            for key, value in row.items():
                if key != "executor_steps":
                    tf.summary.scalar(f"executor_0/{key}", value, step=int(row["executor_steps"]))

    return write


def measure(variant: str, rows: int) -> float:
    """Bytes of RSS growth per row of `variant` in this process."""
    import psutil  # pylint: disable=import-outside-toplevel

    write = make_writer(variant, tempfile.mkdtemp(prefix=f"bench-logger-{variant}-"))
    for index in range(WARMUP_ROWS):
        write(executor_row(index))
    gc.collect()
    before = psutil.Process().memory_info().rss
    for index in range(WARMUP_ROWS, WARMUP_ROWS + rows):
        write(executor_row(index))
    gc.collect()
    return (psutil.Process().memory_info().rss - before) / rows


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":  # One variant, in its own process.
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
        return
    parser = common.make_parser("logger_memory", __doc__.splitlines()[0], seconds=0.0, repeats=1,
                                warmup=None)
    parser.add_argument("--rows", type=int, default=10_000, help="rows measured (default 10000)")
    args = common.check_args(parser.parse_args())
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    per_row: Dict[str, Any] = {}
    for variant in VARIANTS:
        common.progress(f"{variant}: {args.rows:,} rows")
        result = subprocess.run([sys.executable, "-m", "benchmarks.logger_memory", "--child",
                                 variant, str(args.rows)], capture_output=True, text=True,
                                env=env, cwd=os.path.dirname(os.path.dirname(
                                    os.path.abspath(__file__))), check=True)
        per_row[variant] = json.loads(result.stdout.strip().splitlines()[-1])
    common.print_table(f"RSS growth per logged row ({args.rows:,} rows after {WARMUP_ROWS:,})",
                       ["variant", "bytes per row", "MB per 10,000 rows"],
                       [(VARIANTS[name], common.fmt(value, 0), common.fmt(value * 1e4 / 2**20, 2))
                        for name, value in per_row.items()])
    common.emit(args, {f"{name}_bytes_per_row": value for name, value in per_row.items()},
                {"benchmark": "logger_memory", "rows": args.rows, "warmup_rows": WARMUP_ROWS})


if __name__ == "__main__":
    main()
