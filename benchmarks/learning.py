"""Learning benchmark: MADQN (or VDN, QMIX) on mpe/simple_spread_v3 for a fixed number of steps.

    .venv/bin/python -m benchmarks.learning [--repeats 3 --env_steps 50000 --system qmix]

Runs examples/mpe/run_<system>.py (default run_madqn.py) with
--max_executor_steps=<env_steps> (once per repeat, with seeds --seed,
--seed+1, ...) and reads the greedy evaluator's log:
each evaluation round is the mean return (summed over the 3 agents) of 4
greedy episodes of 25 steps, logged against the executor steps counted so far.
Writes the curves to benchmarks/results/learning.csv and learning.png (beside
--out) and reports:

  env_steps      executor (joint environment) steps taken when the program stopped
  final_return   mean return of the last --final_rounds evaluation rounds logged within
                 --env_steps executor steps
  wall_s         wall time from launch to exit
  steps_to_target  executor steps at which the mean of the last --final_rounds rounds first
                 exceeded --target (None if never)
  random_return  mean return of a uniformly random policy, measured here
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

RANDOM_EPISODES = 200


def random_policy_return(seed: int, episodes: int = RANDOM_EPISODES) -> float:
    """The mean episode return (summed over agents) of uniformly random actions."""
    from mava_systems.acting.random_policy import random_policy_return as measure
    import wrappers

    return measure(wrappers.make_environment_factory(common.ENV_NAME), episodes, seed).mean_return


def running_mean_crossing(rows: List[Dict[str, float]], window: int, target: float) -> Optional[int]:
    """The executor steps at which the mean of the last `window` returns first exceeds `target`."""
    for index in range(window - 1, len(rows)):
        recent = [row["evaluation_return"] for row in rows[index - window + 1:index + 1]]
        if sum(recent) / window > target:
            return int(rows[index]["executor_steps"])
    return None


def run_once(seed: int, args: Any) -> Dict[str, Any]:
    """One training run; its evaluation curve and figures."""
    run_dir = tempfile.mkdtemp(prefix="bench-learning-")
    output_path = os.path.join(run_dir, "output.log")
    command = common.example_command(
        os.path.join(run_dir, "run"), args.launch_type, args.env_steps,
        [f"--seed={seed}", *args.flag], system_name=args.system)
    start = time.monotonic()
    process = common.start_example(command, output_path)
    tree = common.ProcessTree(process.pid)
    result: Dict[str, Any] = {"seed": seed}
    try:
        try:
            process.wait(args.seconds or None)
            result["stop"] = {"returncode": process.returncode,
                              "killed_leftovers": len(tree.kill_leftovers()),
                              "clean": process.returncode == 0}
        except subprocess.TimeoutExpired:  # The wall-time cap: stop the program as Ctrl-C would.
            result["truncated_at_s"] = time.monotonic() - start
            result["stop"] = common.stop_example(process, tree)
        except BaseException:  # Ctrl-C here: leave nothing running.
            common.stop_example(process, tree)
            raise
        result["wall_s"] = time.monotonic() - start
        result["truncated"] = "truncated_at_s" in result
        output = common.tail_of(output_path, 1_000_000)
        rows = [{key: float(row[key]) for key in
                 ("executor_steps", "trainer_steps", "evaluation_return", "evaluation_return_std")}
                for row in common.read_rows(common.node_csv(os.path.join(run_dir, "run"),
                                                             "evaluator"))]
        match = re.search(r"Coordinator: executor_steps=(\d+) reached", output)
        result["env_steps"] = (int(match.group(1)) if match else
                               max([int(row["executor_steps"]) for row in rows], default=0))
        if not result["stop"]["clean"] or not rows:
            result["error"] = (f"exit code {result['stop']['returncode']}, "
                               f"{len(rows)} evaluation rounds")
            result["output_tail"] = output[-2000:]
        # Rounds logged after the requested steps (while the program stops) do not count.
        budget = [row for row in rows if row["executor_steps"] <= args.env_steps]
        recent = [row["evaluation_return"] for row in budget[-args.final_rounds:]]
        result["final_return"] = sum(recent) / len(recent) if recent else None
        result["best_return"] = max((row["evaluation_return"] for row in rows), default=None)
        result["steps_to_target"] = running_mean_crossing(rows, args.final_rounds, args.target)
        result["evaluation_rounds"] = len(rows)
        result["curve"] = rows
        return result
    finally:
        if args.keep_run_dirs:
            result["run_dir"] = run_dir
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def write_curves(path: str, runs: List[Dict[str, Any]]) -> None:
    """Every evaluation round of every run as CSV."""
    import csv

    with open(path, "w", newline="") as csv_file:
        writer = csv.writer(csv_file)
        writer.writerow(["run", "seed", "executor_steps", "trainer_steps", "evaluation_return",
                         "evaluation_return_std"])
        for index, run in enumerate(runs):
            for row in run.get("curve", []):
                writer.writerow([index, run["seed"], int(row["executor_steps"]),
                                 int(row["trainer_steps"]), row["evaluation_return"],
                                 row["evaluation_return_std"]])


def plot_curves(path: str, runs: List[Dict[str, Any]], random_return: float, target: float,
                title: str) -> None:
    """Evaluation return against executor steps, one line per run, with the baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    for run in runs:
        curve = run.get("curve", [])
        if curve:
            axes.plot([row["executor_steps"] for row in curve],
                      [row["evaluation_return"] for row in curve],
                      marker=".", linewidth=1, label=f"seed {run['seed']}")
    axes.axhline(random_return, color="grey", linestyle="--",
                 label=f"random policy ({random_return:.1f})")
    axes.axhline(target, color="green", linestyle=":", label=f"target ({target:g})")
    axes.set_xlabel("executor (joint environment) steps")
    axes.set_ylabel("greedy evaluation return (sum over agents)")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main() -> None:
    parser = common.make_parser(
        "learning", __doc__.split("\n\n")[0], seconds=0.0,
        seconds_help="wall-time cap per run, after which the run is stopped and reported as "
                     "truncated; 0: none", warmup=None)
    parser.add_argument("--env_steps", type=int, default=50_000,
                        help="executor steps per run (--max_executor_steps; default 50000)")
    parser.add_argument("--launch_type", default="local_mt", choices=["local_mt", "local_mp"])
    parser.add_argument("--system", default="madqn",
                        help="the registered system to train, by its examples/mpe/run_<system>.py "
                             "(default madqn; e.g. vdn, qmix)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first run (default 0)")
    parser.add_argument("--final_rounds", type=int, default=3,
                        help="evaluation rounds averaged into final_return (default 3)")
    parser.add_argument("--target", type=float, default=-55.0,
                        help="the return to beat (default -55)")
    parser.add_argument("--flag", action="append", default=[],
                        help="a flag passed on to the example, e.g. --flag=--num_executors=2 "
                             "(repeatable)")
    parser.add_argument("--keep_run_dirs", action="store_true",
                        help="keep the temporary run directories (logs, checkpoints, output.log)")
    args = common.check_args(parser.parse_args())
    if args.env_steps < 1 or args.final_rounds < 1:
        raise SystemExit("--env_steps and --final_rounds must be at least 1")
    common.mpe_example(args.system)  # An unknown system stops here, before any run.
    system_label = args.system.upper()

    random_return = random_policy_return(args.seed)
    common.progress(f"random policy: {random_return:.1f} over {RANDOM_EPISODES} episodes")
    runs = []
    for repeat in range(args.repeats):
        seed = args.seed + repeat
        common.progress(f"run {repeat + 1}/{args.repeats} (seed {seed}): {args.env_steps:,} "
                        f"executor steps, {args.launch_type}")
        result = run_once(seed, args)
        runs.append(result)
        common.progress(
            f"run {repeat + 1}/{args.repeats}: "
            + (f"FAILED ({result['error']}); " if "error" in result else "")
            + f"{result['env_steps']:,} steps in {result['wall_s']:.0f} s, final return "
              f"{common.fmt(result['final_return'])} over {result['evaluation_rounds']} rounds")

    good = [run for run in runs if "error" not in run]
    figures: Dict[str, Any] = {
        name: common.median([run[name] for run in good])
        for name in ("env_steps", "final_return", "wall_s", "best_return")}
    if figures["env_steps"] is not None:
        figures["env_steps"] = int(round(figures["env_steps"]))
    reached = [run["steps_to_target"] for run in good]
    figures["steps_to_target"] = (common.median(reached) if reached and None not in reached
                                  else None)
    figures["runs_reaching_target"] = sum(step is not None for step in reached)
    figures["random_return"] = random_return
    figures["env_steps_per_s"] = common.ratio(figures["env_steps"], figures["wall_s"])
    figures["failed_runs"] = len(runs) - len(good)
    figures["runs"] = [{key: value for key, value in run.items() if key != "curve"}
                       for run in runs]

    stem = os.path.splitext(args.out)[0]
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    write_curves(stem + ".csv", runs)
    meta = common.machine_info()
    plot_curves(stem + ".png", runs, random_return, args.target,
                f"{system_label} on {common.ENV_NAME}: greedy evaluation return ({args.launch_type}"
                f"{' ' + ' '.join(args.flag) if args.flag else ''})\n"
                f"{meta['date'][:10]}, commit {meta['commit']}")

    rows = [(run["seed"], common.fmt(run["env_steps"]), common.fmt(run["wall_s"], 0),
             common.fmt(run["final_return"]), common.fmt(run["best_return"]),
             common.fmt(run["steps_to_target"]),
             run.get("error") or ("truncated" if run["truncated"] else "ok"))
            for run in runs]
    rows.append(("median", common.fmt(figures["env_steps"]), common.fmt(figures["wall_s"], 0),
                 common.fmt(figures["final_return"]), common.fmt(figures["best_return"]),
                 common.fmt(figures["steps_to_target"]), f"{len(good)}/{len(runs)} ok"))
    common.print_table(
        f"Learning: {system_label} on {common.ENV_NAME}, {args.env_steps:,} executor steps per run "
        f"(random policy {random_return:.1f}, target {args.target:g})",
        ["seed", "env steps", "wall s", "final return", "best return", "steps to target",
         "status"], rows)
    print(f"Curves: {common.display_path(stem + '.csv')}, plot: "
          f"{common.display_path(stem + '.png')}")
    final = figures["final_return"]
    met = final is not None and final > args.target and args.env_steps <= 1_000_000
    print(f"Target: better than {args.target:g} within 1M env steps: "
          f"{'met' if met else 'NOT met'} (final return {common.fmt(final)} from the last "
          f"{args.final_rounds} rounds within {args.env_steps:,} steps)")
    figures["target_met"] = met
    common.emit(args, figures, {
        "benchmark": "learning", "system": args.system, "env": common.ENV_NAME,
        "launch_type": args.launch_type,
        "example_flags": args.flag, "requested_env_steps": args.env_steps,
        "final_rounds": args.final_rounds, "target": args.target,
        "csv": common.display_path(stem + ".csv"), "png": common.display_path(stem + ".png")})


if __name__ == "__main__":
    main()
