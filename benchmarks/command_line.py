"""How long the command lines take to answer `--help` and to refuse an unknown environment id,
for one or more source trees (e.g. this checkout and an older one), in alternating rounds.

    python benchmarks/command_line.py --rounds=3 --tree=. --tree=/tmp/before

Prints, per command and tree, the median wall time of `--rounds` runs (and the ratio to the
first tree); a tree is run with its own directory first on PYTHONPATH. State the load
(`uptime`) beside the figures.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Sequence

COMMANDS = {
    "example --help (imports TensorFlow)": ["examples/mpe/run_qmix.py", "--help"],
    "example unknown env": ["examples/mpe/run_qmix.py", "--env=mpe/not_an_env_v0"],
    "experiment --help": ["-m", "mava_systems.experiment", "--help"],
    "experiment unknown env": ["-m", "mava_systems.experiment", "--systems=qmix",
                               "--envs=mpe/not_an_env_v0", "--max_executor_steps=10",
                               "--out=/tmp/unused-experiment"],
}


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
    args = parser.parse_args()
    trees = args.tree or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    times: Dict[str, Dict[str, List[float]]] = {name: {tree: [] for tree in trees}
                                                for name in COMMANDS}
    for _ in range(args.rounds):
        for name, arguments in COMMANDS.items():
            for tree in trees:  # Alternating, so that a change of load hits every tree alike.
                times[name][tree].append(time_command(tree, arguments))
    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; "
          f"median of {args.rounds}")
    for name in COMMANDS:
        first = statistics.median(times[name][trees[0]])
        cells = [f"{tree}: {statistics.median(times[name][tree]):.2f} s "
                 f"({statistics.median(times[name][tree]) / first:.2f}x)" for tree in trees]
        print(f"{name:24s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
