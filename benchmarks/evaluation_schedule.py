"""Evaluation by executor steps under load: one configuration run twice, once as the machine is and
once beside CPU hogs; the evaluator's rows must fall at the same executor steps.

    .venv/bin/python benchmarks/evaluation_schedule.py --hogs=2 --max_executor_steps=10000

Prints both runs' evaluator rows side by side (executor step, mean return of the round, trainer
steps of the evaluated variables), the load average during each run and their wall times.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "mpe", "run_madqn.py")


def run(run_dir: str, flags: List[str]) -> Dict[str, object]:
    """Runs the example to its limit in `run_dir`; its evaluator rows, wall time and load."""
    started = time.monotonic()
    loads = []
    process = subprocess.Popen([sys.executable, EXAMPLE, "--lp_launch_type=local_mt",
                                f"--run_dir={run_dir}", "--progress_interval_s=0", *flags],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    while process.poll() is None:
        loads.append(os.getloadavg()[0])
        time.sleep(5)
    if process.returncode:
        raise SystemExit(f"the run in {run_dir} failed (exit {process.returncode})")
    with open(os.path.join(run_dir, "logs", "evaluator", "logs.csv")) as log:
        rows = list(csv.DictReader(log))
    return {"rows": rows, "wall_s": time.monotonic() - started,
            "load": sum(loads) / max(1, len(loads))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2, help="busy-loop processes beside run 2")
    parser.add_argument("--max_executor_steps", type=int, default=10_000)
    parser.add_argument("--evaluation_every_steps", type=int, default=2_000)
    parser.add_argument("--env", default="mpe/simple_spread_v3")
    args = parser.parse_args()
    flags = [f"--env={args.env}", f"--max_executor_steps={args.max_executor_steps}",
             f"--evaluation_every_steps={args.evaluation_every_steps}", "--num_executors=2",
             "--seed=0"]
    with tempfile.TemporaryDirectory() as directory:
        quiet = run(os.path.join(directory, "quiet"), flags)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.hogs)]
        try:
            loaded = run(os.path.join(directory, "loaded"), flags)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    print(f"Run 1 (as the machine is): {quiet['wall_s']:.0f} s, mean 1-min load "
          f"{quiet['load']:.1f} on {os.cpu_count()} cores")
    print(f"Run 2 (beside {args.hogs} busy loops): {loaded['wall_s']:.0f} s, mean 1-min load "
          f"{loaded['load']:.1f}")
    print(f"{'executor step':>14} | {'return 1':>9} {'trainer 1':>9} | {'return 2':>9} "
          f"{'trainer 2':>9}")
    for first, second in zip(quiet["rows"], loaded["rows"]):
        print(f"{first['executor_steps']:>14} | {float(first['evaluation_return']):9.2f} "
              f"{first['trainer_steps']:>9} | {float(second['evaluation_return']):9.2f} "
              f"{second['trainer_steps']:>9}  "
              + ("" if first["executor_steps"] == second["executor_steps"] else "STEPS DIFFER"))
    same = ([row["executor_steps"] for row in quiet["rows"]]
            == [row["executor_steps"] for row in loaded["rows"]])
    print(f"Rows at identical executor steps: {same} ({len(quiet['rows'])} and "
          f"{len(loaded['rows'])} rows)")


if __name__ == "__main__":
    main()
