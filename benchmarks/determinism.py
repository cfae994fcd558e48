"""What a deterministic run costs: executor steps per second with `--deterministic` (lockstep
training and acting, nodes/lockstep.py) and without, in alternating rounds.

    nice python benchmarks/determinism.py --rounds=2 --steps=3000

Each round runs examples/classic/run_madqn.py (MADQN, one executor, local_mt) once per mode
with the same flags, and reads the executor steps per second its summary prints (the launch's
steps over its wall time, start-up included: use enough steps). Prints each mode's median over
rounds and their ratio; the last line is a JSON object. State the load (printed) beside the
figures.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY_RATE = re.compile(r"Finished\. .* ([0-9.]+) steps/s")
MODES = {"deterministic": ["--deterministic"], "usual": []}


def run_once(flags: List[str], run_dir: str) -> float:
    """One run of the example with `flags`: the executor steps per second its summary says."""
    command = [sys.executable, os.path.join(ROOT, "examples", "classic", "run_madqn.py"),
               "--lp_launch_type=local_mt", f"--run_dir={run_dir}", *flags]
    result = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    return float(SUMMARY_RATE.search(result.stdout).group(1))


def main() -> None:
    """Runs the rounds and prints the rates."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--env", default="debug/line_world_v0")
    args = parser.parse_args()
    flags = [f"--env={args.env}", f"--max_executor_steps={args.steps}", "--min_replay_size=256",
             "--progress_interval_s=0", "--seed=1"]
    print(f"load before: {os.getloadavg()}")
    rates: Dict[str, List[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as root:
        for round_index in range(args.rounds):
            for mode, extra in MODES.items():
                rate = run_once(flags + extra, os.path.join(root, f"{mode}-{round_index}"))
                rates[mode].append(rate)
                print(f"round {round_index} {mode}: {rate:.1f} executor steps/s", flush=True)
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    for mode, value in medians.items():
        print(f"{mode}: {value:.1f} executor steps/s (median of {args.rounds})")
    ratio = medians["deterministic"] / medians["usual"]
    print(f"deterministic / usual: {ratio:.2f}; load after: {os.getloadavg()}")
    print(json.dumps({"env": args.env, "steps": args.steps, "rounds": args.rounds,
                      "rates": rates, "ratio": ratio, "load": os.getloadavg()}))


if __name__ == "__main__":
    main()
