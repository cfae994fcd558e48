"""Wall-clock to a solved task: an example runs until its greedy evaluation return reaches a target.

    .venv/bin/python -m benchmarks.time_to_solve [--seeds 1 --target 0.9 --timeout_min 30]
    .venv/bin/python -m benchmarks.time_to_solve --example lbf/run_mappo.py \
        --flag=--critic=decentralised --flag=--num_envs_per_executor=16

Runs examples/<--example> (default lbf/run_mappo.py on its default
lbf/Foraging-8x8-2p-2f-coop-v3, IPPO with --critic=decentralised unless
--flag gives others) with `--lp_launch_type=local_mp` and no step limit, once
per seed, and polls the evaluator's CSV. The protocol is the example's
evaluation by executor steps (`--evaluation_every_steps`, `--evaluation_episodes`
greedy episodes a round, the return summed over agents). At the first round
whose mean return reaches `--target` the program is stopped as Ctrl-C would stop
it. Reported per seed:

  minutes_to_target      wall-clock from launch to that round's row (None: not within
                         --timeout_min)
  cpu_minutes_to_target  CPU minutes the program's processes used by then (all nodes)
  steps_to_target        the executor steps of that round
  best_return            the best round's mean return (and its executor steps)
  load_average           the 1-minute load average, sampled while it ran (median)
"""

import os
import sys
import tempfile
import time
from typing import Any, Dict, List

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

POLL_S = 1.0


def run_once(seed: int, args: Any) -> Dict[str, Any]:
    """One run until the target or the timeout; its figures."""
    run_dir = tempfile.mkdtemp(prefix="bench-solve-")
    output_path = os.path.join(run_dir, "output.log")
    command = [sys.executable, os.path.join(common.ROOT, "examples", args.example),
               "--lp_launch_type=local_mp", f"--run_dir={os.path.join(run_dir, 'run')}",
               f"--seed={seed}", *args.flag]
    launched = time.monotonic()
    process = common.start_example(command, output_path)
    tree = common.ProcessTree(process.pid)
    evaluator_csv = common.node_csv(os.path.join(run_dir, "run"), "evaluator")
    result: Dict[str, Any] = {"seed": seed, "minutes_to_target": None,
                              "cpu_minutes_to_target": None, "steps_to_target": None}
    loads: List[float] = []
    best = (float("-inf"), None)
    rows_seen = 0
    try:
        while time.monotonic() - launched < args.timeout_min * 60:
            time.sleep(POLL_S)
            tree.processes()
            cpu_s = tree.cpu_seconds()
            loads.append(os.getloadavg()[0])
            if process.poll() is not None:
                result["error"] = f"the program exited ({process.returncode})"
                break
            rows = common.read_rows(evaluator_csv)
            for row in rows[rows_seen:]:
                value = float(row["evaluation_return"])
                if value > best[0]:
                    best = (value, common.count(row, "executor_steps"))
                common.progress(f"seed {seed}: {common.count(row, 'executor_steps')} steps, "
                                f"return {value:.3f}, {(time.monotonic() - launched) / 60:.1f} "
                                "min")
                if value >= args.target and result["minutes_to_target"] is None:
                    result.update(minutes_to_target=(time.monotonic() - launched) / 60,
                                  cpu_minutes_to_target=cpu_s / 60,
                                  steps_to_target=common.count(row, "executor_steps"))
            rows_seen = len(rows)
            if result["minutes_to_target"] is not None:
                break
    finally:
        result["stop"] = common.stop_example(process, tree)
    result.update(best_return=best[0], best_return_steps=best[1],
                  load_average=common.median(loads))
    if "error" in result:
        result["output_tail"] = common.tail_of(output_path)
    return result


def main() -> None:
    parser = common.make_parser("time_to_solve", __doc__.split("\n\n")[0], seconds=0.0,
                                repeats=1, warmup=None)
    parser.add_argument("--example", default=os.path.join("lbf", "run_mappo.py"),
                        help="the example under examples/ (default lbf/run_mappo.py)")
    parser.add_argument("--flag", action="append", default=None,
                        help="a flag for the example (repeatable; default "
                             "--critic=decentralised --num_envs_per_executor=16; the example's "
                             "own step limit holds unless a --max_executor_steps flag is given)")
    parser.add_argument("--seeds", type=int, default=1, help="runs, seeds --first_seed, ...")
    parser.add_argument("--first_seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.9,
                        help="the greedy evaluation return to reach")
    parser.add_argument("--timeout_min", type=float, default=30.0,
                        help="minutes a run may take before it is given up")
    args = parser.parse_args()
    if args.flag is None:
        args.flag = ["--critic=decentralised", "--num_envs_per_executor=16"]
    runs = [run_once(seed, args)
            for seed in range(args.first_seed, args.first_seed + args.seeds)]
    rows = [(run["seed"], common.fmt(run["minutes_to_target"], 2),
             common.fmt(run["cpu_minutes_to_target"], 2), run["steps_to_target"],
             common.fmt(run["best_return"], 3), run["best_return_steps"],
             common.fmt(run["load_average"], 1)) for run in runs]
    common.print_table(f"{args.example} {' '.join(args.flag)}: to a greedy return of "
                       f"{args.target}", ["seed", "minutes", "CPU minutes", "executor steps",
                                          "best return", "at steps", "load"], rows)
    common.emit(args, {"runs": runs}, {"example": args.example, "flags": args.flag,
                                       "target": args.target})


if __name__ == "__main__":
    main()
