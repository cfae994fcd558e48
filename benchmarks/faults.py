"""Fault injection: each node group's process is SIGKILLed at random moments of local_mp runs.

    python -m benchmarks.faults                         # 10-minute runs, 3 kills per group
    python -m benchmarks.faults --minutes=3 --kills=2 --groups=executor,trainer
    python -m benchmarks.faults --flag=--env=debug/line_world_v0 --steps=60000

For each group (executor, evaluator, trainer, replay, counter) one run of the
MADQN example (simple_spread_v3, 2 executors) under local_mp, with a step
limit of `--steps`, gets `--kills` SIGKILLs of that group's node at random
moments of its first `--minutes` (of time spent running, across launches).
An executor or the evaluator is restarted in place by the launcher; a dead
trainer, replay or counter stops the run (exit status 1), and the benchmark
resumes it with the same command, as a user would. Per kill it reports:

- detect_s: from the kill to the launcher's line naming the node;
- recover_s: from the kill to the node (restarted) logging again, or, for a
  run that stopped, to the resumed run's executors logging again;
- steps_lost: executor steps the program had counted before the kill that
  the resumed run does not have (0 for a restart: executors count per
  episode, so at most the episode in progress is lost, uncounted);
- exit status of a stopped launch, and whether anything hung (no line within
  `DETECT_TIMEOUT_S`, or a launch that did not end within the notice).

Per run: whether it reached its step limit, whether the program's counts (the
counter's saved counts, sampled every second) never went down, and whether
its final checkpoint evaluates (`python -m mava_systems.evaluate`).
Kills only processes of the run's own process tree.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402
from mava_systems.runs.run_directory import read_status  # noqa: E402
from mava_systems.launching.node_processes import NODE_NAME_ENV, RESTARTED_GROUPS  # noqa: E402
from mava_systems.terminal.progress import read_snapshot  # noqa: E402

GROUPS = ("executor", "evaluator", "trainer", "replay", "counter")
DETECT_TIMEOUT_S = 60.0  # A fault not reported by then counts as a hang.
STOP_TIMEOUT_S = 180.0  # A stopped launch not ended by then (notice 60 s) counts as a hang.
FLAGS = ("--num_executors=2", "--progress_interval_s=0", "--checkpoint_interval_s=30")


def node_pid(tree: common.ProcessTree, node: str) -> Optional[int]:
    """The pid of `node`'s process ("trainer/0") in the run's tree, None if it has none now."""
    for process in tree.processes():
        try:
            if process.environ().get(NODE_NAME_ENV) == node and \
                    "python" in os.path.basename(process.cmdline()[0]):
                return process.pid
        except Exception:  # pylint: disable=broad-except
            continue
    return None


def rows(run_dir: str, log: str) -> int:
    return len(common.read_rows(common.node_csv(run_dir, log)))


def wait_for(condition, timeout_s: float, interval_s: float = 0.1) -> Optional[float]:
    """Polls `condition()`; the time it first held, None after `timeout_s`."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if condition():
            return time.time()
        time.sleep(interval_s)
    return None


class CountWatch:
    """Samples the counter's saved executor steps every second in a thread."""

    def __init__(self, run_dir: str):
        self.samples: List[int] = []
        self._run_dir = run_dir
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(1.0):
            try:
                self.samples.append(int(read_status(self._run_dir).counts.get("executor_steps", 0)))
            except Exception:  # pylint: disable=broad-except  (not saved yet, or mid-write)
                pass

    def stop(self) -> bool:
        """Stops sampling; whether the counts never went down."""
        self._done.set()
        self._thread.join()
        return all(later >= earlier for earlier, later in zip(self.samples, self.samples[1:]))


def output_has(path: str, fragment: str) -> bool:
    return fragment in common.tail_of(path, 200_000)


def run_group(group: str, args: argparse.Namespace, work_dir: str) -> Dict[str, Any]:
    """One run of the example with `args.kills` kills of `group`'s node; its figures."""
    node = f"{group}/0"
    log = {"executor": "executor_0", "evaluator": "evaluator"}.get(group, "executor_0")
    run_dir = os.path.join(work_dir, group)
    command = common.example_command(run_dir, "local_mp", args.steps, [*FLAGS, *args.flag])
    kill_at = sorted(random.uniform(0.15, 0.85) * args.minutes * 60 for _ in range(args.kills))
    counts = CountWatch(run_dir)
    kills: List[Dict[str, Any]] = []
    running_s, launches, hung, outcome = 0.0, 0, False, None
    while outcome is None:
        launches += 1
        output_path = os.path.join(work_dir, f"{group}-{launches}.log")
        process = common.start_example(command, output_path)
        tree = common.ProcessTree(process.pid)
        rows_at_start = rows(run_dir, log)
        common.progress(f"{group}: launch {launches}")
        if wait_for(lambda: rows(run_dir, log) > rows_at_start or process.poll() is not None,
                    600) is None:
            hung, outcome = True, "no progress after the launch"
            break
        if kills and kills[-1].get("stopped_run"):  # This launch resumes after a stop.
            kills[-1]["recover_s"] = round(time.time() - kills[-1]["at"], 2)
        resumed_at = time.time()
        stopped = False
        while len(kills) < len(kill_at) and process.poll() is None:
            if running_s + time.time() - resumed_at < kill_at[len(kills)]:
                time.sleep(0.2)
                continue
            pid = node_pid(tree, node)
            if pid is None or pid not in {p.pid for p in tree.processes()} or pid == os.getpid():
                time.sleep(0.2)
                continue
            snapshot = read_snapshot(run_dir)
            kill = {"at": time.time(), "steps_before": snapshot.executor_steps if snapshot else 0}
            rows_before = rows(run_dir, log)
            os.kill(pid, 9)
            marker = (f"{node} died (killed by SIGKILL)" if group in RESTARTED_GROUPS
                      else f"error: {node} killed by SIGKILL")
            detected = wait_for(lambda: output_has(output_path, marker), DETECT_TIMEOUT_S)
            kill["detect_s"] = None if detected is None else round(detected - kill["at"], 2)
            hung = hung or detected is None
            kills.append(kill)
            if group in RESTARTED_GROUPS:
                recovered = wait_for(lambda: rows(run_dir, log) > rows_before, 600)
                kill["recover_s"] = None if recovered is None else round(recovered - kill["at"], 2)
                kill["steps_lost"] = 0
                hung = hung or recovered is None
                continue
            kill["stopped_run"] = True
            ended = wait_for(lambda: process.poll() is not None, STOP_TIMEOUT_S)
            kill["stop_s"] = None if ended is None else round(ended - kill["at"], 2)
            if ended is None:
                hung = True
                tree.kill_leftovers()
            kill["exit_status"] = process.wait()
            kill["steps_lost"] = max(0, kill["steps_before"] - int(
                read_status(run_dir).counts.get("executor_steps", 0)))
            stopped = True
            break
        running_s += time.time() - resumed_at
        if stopped:
            tree.kill_leftovers()
            continue
        if wait_for(lambda: process.poll() is not None, args.minutes * 60 * 4 + 600) is None:
            hung, outcome = True, "did not reach its step limit in time"
            common.stop_example(process, tree)
        else:
            outcome = f"ended with exit status {process.wait()}"
        tree.kill_leftovers()
    monotone = counts.stop()
    final_steps = int(read_status(run_dir).counts.get("executor_steps", 0))
    evaluation = subprocess.run(
        [sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}", "--episodes=2"],
        cwd=common.ROOT, capture_output=True, text=True, check=False)
    for kill in kills:
        kill.pop("at")
    return {"group": group, "kills": kills, "launches": launches, "outcome": outcome,
            "hung": hung, "reached_limit": final_steps >= args.steps, "final_steps": final_steps,
            "monotone_counts": monotone, "count_samples": len(counts.samples),
            "final_checkpoint_evaluates": evaluation.returncode == 0,
            "evaluation": (evaluation.stdout or evaluation.stderr).strip().splitlines()[-1:]}


def summary_rows(results: List[Dict[str, Any]]) -> List[List[Any]]:
    table = []
    for result in results:
        kills = result["kills"]

        def worst(key):
            values = [kill.get(key) for kill in kills if kill.get(key) is not None]
            return max(values) if values else None

        table.append([result["group"], len(kills),
                      sum(kill.get("detect_s") is not None for kill in kills),
                      common.fmt(worst("detect_s"), 2), common.fmt(worst("recover_s"), 1),
                      worst("steps_lost"),
                      ",".join(str(kill["exit_status"]) for kill in kills if "exit_status" in kill)
                      or "-", result["hung"], result["reached_limit"], result["monotone_counts"],
                      result["final_checkpoint_evaluates"]])
    return table


def main() -> None:
    parser = common.make_parser("faults", __doc__.splitlines()[0], seconds=0, repeats=1,
                                warmup=None)
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help=f"node groups to kill, comma-separated (default {','.join(GROUPS)})")
    parser.add_argument("--kills", type=int, default=3, help="kills per group (default 3)")
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="minutes of running over which the kills are spread (default 10)")
    parser.add_argument("--steps", type=int, default=250_000,
                        help="the runs' step limit (default 250,000: about 10 minutes)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument("--flag", action="append", default=[],
                        help="a flag for the example (repeatable), e.g. --flag=--env=...")
    args = common.check_args(parser.parse_args())
    groups = [group for group in args.groups.split(",") if group]
    unknown = set(groups) - set(GROUPS)
    if unknown or args.kills < 1 or args.minutes <= 0 or args.steps < 1:
        raise SystemExit(f"bad arguments: groups {sorted(unknown) or 'ok'}, --kills >= 1, "
                         "--minutes > 0, --steps >= 1")
    random.seed(args.seed)
    work_dir = tempfile.mkdtemp(prefix="faults-")
    results = [run_group(group, args, work_dir) for group in groups]
    common.print_table(f"Fault injection ({args.kills} SIGKILLs per group over {args.minutes:g} "
                       f"min, step limit {args.steps:,})",
                       ["group", "kills", "detected", "detect s (max)", "recover s (max)",
                        "steps lost (max)", "exit status", "hung", "reached limit",
                        "monotone", "evaluates"], summary_rows(results))
    common.emit(args, {"groups": results, "work_dir": work_dir},
                {"kills": args.kills, "minutes": args.minutes, "steps": args.steps,
                 "flags": [*FLAGS, *args.flag], "seed": args.seed})


if __name__ == "__main__":
    main()
