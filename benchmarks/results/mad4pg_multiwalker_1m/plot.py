"""MAD4PG on multiwalker_v9: the evaluator's mean per-walker return against executor steps."""
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

log, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(log)))
steps = np.array([float(r["executor_steps"]) for r in rows])
per_walker = np.array([float(r["evaluation_return"]) / 3 for r in rows])
order = np.argsort(steps, kind="stable")
steps, per_walker = steps[order], per_walker[order]
bins = [0, 100e3, 200e3, 300e3, 400e3, 500e3, 600e3, 700e3, 800e3, 900e3, 1000e3 + 1]
print("bin | rounds | mean per-walker return | max")
for lo, hi in zip(bins[:-1], bins[1:]):
    sel = (steps >= lo) & (steps < hi)
    if sel.any():
        print(f"{lo/1e3:.0f}-{hi/1e3:.0f}k | {sel.sum()} | {per_walker[sel].mean():.1f} | {per_walker[sel].max():.1f}")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(steps / 1e3, per_walker, ".", alpha=0.35, label="evaluator round (4 greedy episodes)")
window = 9
if len(per_walker) >= window:
    smooth = np.convolve(per_walker, np.ones(window) / window, mode="valid")
    ax.plot(steps[window // 2: len(steps) - window // 2] / 1e3, smooth, "-", label=f"running mean of {window} rounds")
ax.axhline(-99.5, color="grey", ls="--", label="random policy (-99.5)")
ax.axhline(40, color="green", ls=":", label="TF-era Mava, about 1M steps (about 40)")
ax.set_xlabel("executor steps (thousands)")
ax.set_ylabel("return per walker")
ax.set_title("MAD4PG on sisl/multiwalker_v9, 1 seed")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=110)
