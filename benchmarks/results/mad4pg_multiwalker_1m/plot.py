"""MAD4PG on multiwalker_v9: prints the evaluator's mean per-walker return per 100k executor steps
and draws it against a random policy's and TF-era Mava's returns.

    python benchmarks/results/mad4pg_multiwalker_1m/plot.py <this directory> <out.png>
"""
import sys

import numpy as np

from mava_systems.plot import read_learning_curve, smooth

WALKERS = 3
RANDOM_PER_WALKER = -99.5
TF_MAVA_PER_WALKER = 40.0


def main(run_dir: str, out: str) -> None:
    """Prints the per-bin table and writes the figure to `out`."""
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    curve = read_learning_curve(run_dir)
    per_walker = curve.returns / WALKERS
    print("bin | rounds | mean per-walker return | best round")
    for low in np.arange(0, 1_000_000, 100_000):
        in_bin = (curve.steps >= low) & (curve.steps < low + 100_000 + (low == 900_000))
        if in_bin.any():
            print(f"{low // 1000:.0f}-{low // 1000 + 100:.0f}k | {in_bin.sum()} | "
                  f"{per_walker[in_bin].mean():.1f} | {per_walker[in_bin].max():.1f}")
    figure = Figure(figsize=(7, 4))
    axes = figure.subplots()
    axes.plot(curve.steps / 1e3, per_walker, ".", alpha=0.35,
              label="evaluator round (4 greedy episodes)")
    axes.plot(curve.steps / 1e3, smooth(per_walker, 9), "-", label="running mean of 9 rounds")
    axes.axhline(RANDOM_PER_WALKER, color="grey", ls="--", label="random policy (-99.5)")
    axes.axhline(TF_MAVA_PER_WALKER, color="green", ls=":",
                 label="TF-era Mava, about 1M steps (about 40)")
    axes.set_xlabel("executor steps (thousands)")
    axes.set_ylabel("return per walker")
    axes.set_title("MAD4PG on sisl/multiwalker_v9, 1 seed")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
