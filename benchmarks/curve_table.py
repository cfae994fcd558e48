"""A run's evaluator returns per bin of executor steps, as a table and optionally a figure.

    .venv/bin/python -m benchmarks.curve_table benchmarks/results/mad4pg_multiwalker_1m \
        --bin_steps 100000 --divide_by 3 --reference "random policy=-99.5" \
        --reference "TF-era Mava, about 1M steps=40" --plot docs/img/mad4pg_multiwalker_1m.png

Reads the run directory's evaluator log (`logs/evaluator/logs.csv`, as `mava_systems.plot`
does) and prints, per bin of `--bin_steps` executor steps, the evaluator rounds in it, their
mean return and the best round. `--divide_by` divides every return (e.g. by the walkers, for a
per-walker return of a shared reward). `--plot` draws every round, a running mean and the
`--reference` lines. It made the MAD4PG multiwalker table and figure of docs/benchmarks.md.
"""

import argparse
import dataclasses
import os
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np

if __package__ in (None, ""):  # Run as a file: python benchmarks/curve_table.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mava_systems import plot  # pylint: disable=wrong-import-position


@dataclasses.dataclass(frozen=True)
class Bin:
    """The evaluator rounds logged within one bin of executor steps."""

    low: int  # The first executor step of the bin.
    high: int  # The first step of the next bin (the last bin also holds this step).
    rounds: int
    mean: float
    best: float


def bins(steps: np.ndarray, returns: np.ndarray, bin_steps: int,
         max_steps: Optional[int] = None) -> List[Bin]:
    """The rounds in each bin [low, low + bin_steps) up to `max_steps` (default: the last
    round's step); the last bin also holds a round at its upper end (the final step limit).
    Bins without rounds are left out."""
    if bin_steps <= 0:
        raise ValueError(f"bin_steps must be positive, got {bin_steps}")
    steps, returns = np.asarray(steps), np.asarray(returns)
    end = int(max_steps if max_steps is not None else steps.max())
    edges = list(range(0, end, bin_steps)) or [0]
    table = []
    for index, low in enumerate(edges):
        high = low + bin_steps
        last = index == len(edges) - 1
        inside = (steps >= low) & ((steps <= high) if last else (steps < high))
        if inside.any():
            table.append(Bin(low, high, int(inside.sum()), float(returns[inside].mean()),
                             float(returns[inside].max())))
    return table


def parse_reference(text: str) -> Tuple[str, float]:
    """"label=value" as (label, value); an argparse error names a malformed one."""
    label, separator, value = text.rpartition("=")
    try:
        if not (separator and label):
            raise ValueError
        return label, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a reference is label=value (e.g. 'random policy=-99.5'), got {text!r}") from None


def draw(curve: plot.LearningCurve, returns: np.ndarray, references: Sequence[Tuple[str, float]],
         title: str, out: str) -> str:
    """Every round, a running mean of 9 rounds and the reference lines, saved as a PNG."""
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    figure = Figure(figsize=(7, 4))
    axes = figure.subplots()
    axes.plot(curve.steps / 1e3, returns, ".", alpha=0.35, label="evaluator round")
    axes.plot(curve.steps / 1e3, plot.smooth(returns, 9), "-", label="running mean of 9 rounds")
    for index, (label, value) in enumerate(references):
        axes.axhline(value, color=f"C{index + 2}", ls="--", label=f"{label} ({value:g})")
    axes.set_xlabel("executor steps (thousands)")
    axes.set_ylabel("evaluator return")
    axes.set_title(title)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out, dpi=110)
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.curve_table",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a run directory (its logs/evaluator/logs.csv is read)")
    parser.add_argument("--bin_steps", type=int, default=100_000,
                        help="executor steps per bin (default 100,000)")
    parser.add_argument("--max_steps", type=int, default=None,
                        help="the last bin's end (default: the last round's step)")
    parser.add_argument("--divide_by", type=float, default=1.0,
                        help="divide every return by this (e.g. 3 walkers: per-walker returns)")
    parser.add_argument("--reference", type=parse_reference, action="append", default=[],
                        help="a horizontal line label=value on the figure (repeatable)")
    parser.add_argument("--title", default=None, help="the figure's title (default: the run's)")
    parser.add_argument("--plot", default=None, help="write the figure to this PNG")
    args = parser.parse_args(argv)
    if args.bin_steps <= 0 or args.divide_by == 0:
        parser.error("--bin_steps must be positive and --divide_by not zero")
    try:
        curve = plot.read_learning_curve(args.run_dir)
    except (FileNotFoundError, ValueError) as error:
        raise SystemExit(str(error)) from None
    returns = curve.returns / args.divide_by
    print("executor steps | rounds | mean return | best round")
    for row in bins(curve.steps, returns, args.bin_steps, args.max_steps):
        print(f"{row.low:,}-{row.high:,} | {row.rounds} | {row.mean:.1f} | "
              f"{row.best:.1f}")
    if args.plot:
        title = args.title or curve.label
        print(f"figure: {draw(curve, returns, args.reference, title, args.plot)}")


if __name__ == "__main__":
    main()
