"""Draws learning curves (evaluator return against executor steps) from runs' CSV logs.

    python -m mava_systems.plot runs/spread runs/spread-lr3e-4 --out curves.png

Each run gets its raw evaluator returns as a faint line, a smoothed line, and
a shaded band of plus or minus the (smoothed) standard deviation of the
returns within each evaluation round. Several runs share one figure.
"""

import argparse
import csv
import dataclasses
import os
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np

EVALUATOR_CSV = os.path.join("logs", "evaluator", "logs.csv")
STEPS_KEY = "executor_steps"
RETURN_KEY = "evaluation_return"
RETURN_STD_KEY = "evaluation_return_std"


@dataclasses.dataclass
class LearningCurve:
    """One run's evaluator returns, in executor-step order."""

    label: str
    steps: np.ndarray
    returns: np.ndarray
    return_stds: np.ndarray


def read_learning_curve(run_dir: str, label: Optional[str] = None) -> LearningCurve:
    """Reads `<run_dir>/logs/evaluator/logs.csv` into a curve in executor-step order.

    Rows with an empty return are skipped; repeated header rows (a log that a
    resumed run appended to) are ignored. A launch that resumed from an earlier
    checkpoint (or started afresh after a launch that saved none) appends rows
    whose steps go back: they supersede the earlier rows from that step on,
    which described a run that was abandoned.

    Raises:
      FileNotFoundError: if the run directory or its evaluator log does not exist.
      ValueError: if the log lacks the needed columns or holds no evaluation yet.
    """
    if not os.path.isdir(run_dir):
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    path = os.path.join(run_dir, EVALUATOR_CSV)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{run_dir} has no evaluator log ({EVALUATOR_CSV}): not a run directory, "
            "or its evaluator never logged")
    with open(path, newline="") as csv_file:
        rows = list(csv.DictReader(csv_file))
    if not rows:
        raise ValueError(f"{path} holds no evaluation yet")
    missing = [key for key in (STEPS_KEY, RETURN_KEY) if key not in rows[0]]
    if missing:
        raise ValueError(f"{path} has no column {', '.join(missing)}; columns: {sorted(rows[0])}")
    kept: List[Tuple[float, float, float]] = []  # (steps, return, std) in step order.
    for row in rows:
        if row[RETURN_KEY] in ("", None, RETURN_KEY):
            continue
        steps = float(row[STEPS_KEY])
        while kept and kept[-1][0] >= steps:
            kept.pop()
        kept.append((steps, float(row[RETURN_KEY]), float(row.get(RETURN_STD_KEY) or 0.0)))
    if not kept:
        raise ValueError(f"{path} holds no evaluation yet")
    steps, returns, stds = (np.asarray(column) for column in zip(*kept))
    return LearningCurve(label=label or os.path.basename(os.path.normpath(run_dir)),
                         steps=steps, returns=returns, return_stds=stds)


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average over `window` points, shrinking at the ends (same length out)."""
    values = np.asarray(values, dtype=np.float64)
    if window <= 1 or len(values) < 2:
        return values.copy()
    half = window // 2
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    indices = np.arange(len(values))
    low = np.maximum(indices - half, 0)
    high = np.minimum(indices + half + 1, len(values))
    return (cumulative[high] - cumulative[low]) / (high - low)


def default_window(num_points: int) -> int:
    """A smoothing window of about a tenth of the curve (odd, at least 1)."""
    return max(1, (num_points // 10) | 1)


def plot_learning_curves(curves: Sequence[LearningCurve], out: str, window: Optional[int] = None,
                         title: str = "Evaluator return", width_px: int = 1000,
                         height_px: int = 600, dpi: int = 100) -> str:
    """Draws `curves` on one figure and saves it as a `width_px` x `height_px` PNG at `out`."""
    # A Figure without pyplot: no global backend or figure registry is touched.
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    axes = figure.subplots()
    for index, curve in enumerate(curves):
        color = f"C{index % 10}"
        curve_window = window or default_window(len(curve.steps))
        mean = smooth(curve.returns, curve_window)
        spread = smooth(curve.return_stds, curve_window)
        axes.plot(curve.steps, curve.returns, color=color, alpha=0.25, linewidth=1)
        axes.fill_between(curve.steps, mean - spread, mean + spread, color=color, alpha=0.2,
                          linewidth=0)
        axes.plot(curve.steps, mean, color=color, linewidth=2,
                  label=f"{curve.label} ({len(curve.steps)} evaluations)")
    axes.set_xlabel("executor steps")
    axes.set_ylabel("evaluator return (mean ± std per round)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out, dpi=dpi, format="png")
    return out


def _unique_labels(run_dirs: Sequence[str]) -> List[str]:
    names = [os.path.basename(os.path.normpath(run_dir)) for run_dir in run_dirs]
    if len(set(names)) == len(names):
        return names
    return [os.path.normpath(run_dir) for run_dir in run_dirs]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line: reads every run directory and writes one figure."""
    parser = argparse.ArgumentParser(
        prog="python -m mava_systems.plot",
        description="Learning curves (evaluator return against executor steps) of runs.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories")
    parser.add_argument("--out", default="curves.png", help="PNG to write (default curves.png)")
    parser.add_argument("--smoothing", type=int, default=None,
                        help="moving-average window in evaluations (default: a tenth of a curve)")
    parser.add_argument("--title", default="Evaluator return")
    parser.add_argument("--width", type=int, default=1000, help="figure width in pixels")
    parser.add_argument("--height", type=int, default=600, help="figure height in pixels")
    parser.add_argument("--labels", default=None,
                        help="comma-separated legend labels, one per RUN_DIR in order "
                             "(default: the directories' names)")
    args = parser.parse_args(argv)
    if args.smoothing is not None and args.smoothing < 1:
        parser.error(f"--smoothing must be >= 1, got {args.smoothing}")
    labels = _unique_labels(args.run_dirs)
    if args.labels is not None:
        labels = [label.strip() for label in args.labels.split(",")]
        if len(labels) != len(args.run_dirs) or not all(labels):
            parser.error(f"--labels must give {len(args.run_dirs)} non-empty labels, one per "
                         f"run directory, got {args.labels!r}")
    try:
        curves = [read_learning_curve(run_dir, label)
                  for run_dir, label in zip(args.run_dirs, labels)]
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    plot_learning_curves(curves, args.out, args.smoothing, args.title, args.width, args.height)
    for curve in curves:
        print(f"{curve.label}: {len(curve.steps)} evaluations up to {int(curve.steps[-1])} "
              f"executor steps, last return {curve.returns[-1]:.3f}")
    print(f"Wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
