"""How long the command lines take to answer `--help` and to refuse an unknown id (environment,
system or run directory), for one or more source trees (e.g. this checkout and an older one),
in alternating rounds.

    python benchmarks/command_line.py --rounds=3 --tree=. --tree=/tmp/before
    python benchmarks/command_line.py --only=examples/mpe/run_qmix.py,evaluate

Every example (examples/*/run_*.py) and `python -m mava_systems.{evaluate,experiment,plot,
train}` is timed. Prints, per command and tree, the median wall time of `--rounds` runs (and
the ratio to the first tree); a tree is run with its own directory first on PYTHONPATH. The
last line is a JSON object, also written to benchmarks/results/command_line.json. State the
load (printed) beside the figures.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNKNOWN_ENV = "--env=mpe/not_an_env_v0"
MODULE_COMMANDS = {
    "evaluate --help": ["-m", "mava_systems.evaluate", "--help"],
    "evaluate unknown run_dir": ["-m", "mava_systems.evaluate", "--run_dir=/nonexistent/run"],
    "experiment --help": ["-m", "mava_systems.experiment", "--help"],
    "experiment unknown env": ["-m", "mava_systems.experiment", "--systems=qmix",
                               "--envs=mpe/not_an_env_v0", "--max_executor_steps=10",
                               "--out=/tmp/unused-experiment"],
    "plot --help": ["-m", "mava_systems.plot", "--help"],
    "plot unknown run_dir": ["-m", "mava_systems.plot", "/nonexistent/run",
                             "--out=/tmp/unused.png"],
    "train --help": ["-m", "mava_systems.train", "--help"],
    "train --system=qmix --help": ["-m", "mava_systems.train", "--system=qmix",
                                   "--env=mpe/simple_spread_v3", "--help"],
    "train unknown env": ["-m", "mava_systems.train", "--system=qmix", UNKNOWN_ENV],
}


def commands() -> Dict[str, List[str]]:
    """Every timed command by name: each example's `--help` and unknown environment, then the
    modules'."""
    timed = {}
    for script in sorted(glob.glob(os.path.join(ROOT, "examples", "*", "run_*.py"))):
        relative = os.path.relpath(script, ROOT)
        timed[f"{relative} --help"] = [relative, "--help"]
        timed[f"{relative} unknown env"] = [relative, UNKNOWN_ENV]
    timed.update(MODULE_COMMANDS)
    return timed


def time_command(tree: str, arguments: Sequence[str]) -> float:
    """Seconds one run of `python <arguments>` takes in `tree`."""
    environment = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    started = time.monotonic()
    subprocess.run([sys.executable, *arguments], cwd=tree, env=environment,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=False)
    return time.monotonic() - started


def main() -> None:
    """Times every command in every tree and prints the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[],
                        help="a source tree to time (repeatable; default: this checkout)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per command and tree")
    parser.add_argument("--only", default="",
                        help="comma-separated parts of command names to time (default: all)")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                      "command_line.json"))
    args = parser.parse_args()
    trees = args.tree or [ROOT]
    selected = {name: arguments for name, arguments in commands().items()
                if not args.only or any(part in name for part in args.only.split(","))}
    load_at_start = os.getloadavg()[0]
    times: Dict[str, Dict[str, List[float]]] = {name: {tree: [] for tree in trees}
                                                for name in selected}
    for _ in range(args.rounds):
        for name, arguments in selected.items():
            for tree in trees:  # Alternating, so that a change of load hits every tree alike.
                times[name][tree].append(time_command(tree, arguments))
    load = f"load {load_at_start:.1f} at start, {os.getloadavg()[0]:.1f} at end (1 min)"
    print(f"{load} on {os.cpu_count()} cores; median of {args.rounds}")
    medians = {name: {tree: statistics.median(values) for tree, values in by_tree.items()}
               for name, by_tree in times.items()}
    for name, by_tree in medians.items():
        first = by_tree[trees[0]]
        cells = [f"{tree}: {seconds:.2f} s ({seconds / first:.2f}x)"
                 for tree, seconds in by_tree.items()]
        print(f"{name:48s} " + " | ".join(cells))
    result = {"seconds_median": medians, "trees": trees, "rounds": args.rounds, "load": load}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
