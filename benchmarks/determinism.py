"""Deterministic runs: what they cost, and whether every shipped system repeats.

    nice python benchmarks/determinism.py --rounds=2 --steps=3000
    nice python benchmarks/determinism.py --check [--systems=vdn,qmix_recurrent,...]
        [--launch_type=local_mt]

Without `--check`: each round runs examples/classic/run_madqn.py (MADQN, one executor,
local_mt) once with `--deterministic` (lockstep training and acting, nodes/lockstep.py) and once
without, with the same flags, and reads the executor steps per second its summary prints (the
launch's steps over its wall time, start-up included: use enough steps). Prints each mode's
median over rounds and their ratio; the last line is a JSON object. State the load (printed)
beside the figures.

With `--check`: runs each case of `CHECKS` (every shipped system at a small step budget, with
small networks, on a debug or Gymnasium task; and vectorised MADQN and MAPPO) twice with
`--deterministic` (the two at once), and compares the two runs' executor rows and evaluator
rows (every column but times, rates and the counts of other nodes a row carries, see
`comparable_rows`) and final trainer weights. Prints a table (case, trainer steps, rows
compared, repeats or the first difference) and writes it as JSON to
benchmarks/results/determinism_check.json; exits non-zero if a case does not repeat.
docs/experiments.md ("Deterministic runs") holds the last result.
"""

import argparse
import csv
import dataclasses
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "determinism_check.json")
SUMMARY_RATE = re.compile(r"Finished\. .* ([0-9.]+) steps/s")
RUN_TIMEOUT_S = 600  # A lockstep run that waits for ever is a failure to repeat.
MODES = {"deterministic": ["--deterministic"], "usual": []}
# Columns that measure time or speed, which no run repeats.
TIMING = re.compile(r"per_second|time|_s$|wait")
# Counts of other nodes that a node's rows carry: where those nodes stood when the row was
# written, which no run repeats (docs/experiments.md, Deterministic runs).
OTHER_NODES = {"executor": ("evaluator_", "trainer_", "learner_"),
               "evaluator": ("trainer_", "learner_", "executor_episodes", "actor_episodes")}

# ---------------------------------------------------------------------------- comparing runs


def comparable_rows(run_dir: str, node: str) -> List[Dict[str, str]]:
    """Node `node`'s CSV rows of the run in `run_dir`, without the columns no run repeats (times,
    rates, other nodes' counts; `node` is "evaluator" or an executor's, e.g. "executor_0")."""
    other = OTHER_NODES["evaluator" if node == "evaluator" else "executor"]
    with open(os.path.join(run_dir, "logs", node, "logs.csv")) as rows:
        return [{name: value for name, value in row.items()
                 if not TIMING.search(name) and not name.startswith(other)}
                for row in csv.DictReader(rows)]


def trainer_checkpoint(run_dir: str) -> Dict[str, np.ndarray]:
    """Every tensor of the newest trainer (or learner) checkpoint of the run in `run_dir`."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel  (only when comparing)
    directories = [path for path in glob.glob(os.path.join(run_dir, "checkpoints", "*"))
                   if os.path.basename(path) in ("trainer", "learner")]
    if not directories:
        raise ValueError(f"{run_dir} has no trainer checkpoint")
    reader = tf.train.load_checkpoint(directories[0])
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def first_row_difference(first: Sequence[Mapping[str, str]],
                         second: Sequence[Mapping[str, str]]) -> Optional[str]:
    """Where two runs' rows first differ, in words (None if they are equal)."""
    for index, (one, other) in enumerate(zip(first, second)):
        if one != other:
            column = next(name for name in sorted(set(one) | set(other))
                          if one.get(name) != other.get(name))
            return (f"row {index}: {column} {one.get(column)!r} against "
                    f"{other.get(column)!r}")
    if len(first) != len(second):
        return f"{len(first)} rows against {len(second)}"
    return None


def first_weight_difference(first: Mapping[str, np.ndarray],
                            second: Mapping[str, np.ndarray]) -> Optional[str]:
    """The first checkpoint tensor that differs between two runs, in words (None if none)."""
    if first.keys() != second.keys():
        return f"different variables: {sorted(set(first) ^ set(second))[:3]}"
    for name in sorted(first):
        if not np.array_equal(first[name], second[name]):
            return f"{name} differs"
    return None


def repeat_report(first_dir: str, second_dir: str, executor_node: str) -> Dict[str, Any]:
    """What two runs of one seed and flags repeat: rows compared per node, the trainer's steps,
    and the first difference of each kind (None when they repeat)."""
    report: Dict[str, Any] = {"rows": {}, "differences": {}}
    for node in (executor_node, "evaluator"):
        first, second = (comparable_rows(first_dir, node), comparable_rows(second_dir, node))
        report["rows"][node] = len(first)
        report["differences"][node] = first_row_difference(first, second)
    first_weights, second_weights = trainer_checkpoint(first_dir), trainer_checkpoint(second_dir)
    steps = [value for name, value in first_weights.items()
             if name.startswith("num_steps/")]
    report["trainer_steps"] = int(steps[0]) if steps else None
    report["differences"]["weights"] = first_weight_difference(first_weights, second_weights)
    report["repeats"] = not any(report["differences"].values())
    return report

# ---------------------------------------------------------------------------- the cases

LINE = "debug/line_world_v0"  # 2 agents, discrete actions.
REACH = "debug/reach_v0"  # 2 agents, continuous actions, 10-step episodes.
LBF = "lbf/Foraging-8x8-2p-2f-coop-v3"  # Has a vectorised implementation (wrappers.vectorised).
# Every case: evaluation by steps, a few greedy episodes a round, trained variables fetched often.
COMMON = ("--evaluation_episodes=2", "--progress_interval_s=0", "--seed=5",
          "--terminal_log_interval_s=60")
VALUE = ("--min_replay_size=64", "--batch_size=32", "--variable_update_period=25",
         "--hidden_sizes=32,32", "--evaluation_every_steps=100")
RECURRENT_VALUE = ("--recurrent=true", "--rnn_hidden_size=16", "--sequence_length=10",
                   "--n_step=3", "--sequence_batch_size=8")
CONTINUOUS = ("--min_replay_size=64", "--batch_size=32", "--variable_update_period=25",
              "--policy_hidden_sizes=32,32", "--critic_hidden_sizes=32,32",
              "--evaluation_every_steps=100")
PPO = ("--batch_size=4", "--sequence_length=11", "--variable_update_period=10",
       "--hidden_sizes=32,32", "--evaluation_every_steps=100")
RECURRENT_PPO = ("--recurrent=true", "--rnn_hidden_size=16")


@dataclasses.dataclass(frozen=True)
class Check:
    """One case of `--check`: a system on an environment, with its flags and step budget."""

    name: str
    system: str
    env: str
    flags: Tuple[str, ...]
    steps: int = 300


CHECKS: Tuple[Check, ...] = (
    Check("madqn", "madqn", LINE, VALUE),
    Check("vdn", "vdn", LINE, VALUE),
    Check("qmix", "qmix", LINE, VALUE),
    Check("qmix_recurrent", "qmix", LINE, VALUE + RECURRENT_VALUE, 400),
    Check("maddpg", "maddpg", REACH, CONTINUOUS),
    Check("mad4pg", "mad4pg", REACH, CONTINUOUS + ("--vmin=-10", "--vmax=0", "--num_atoms=21")),
    Check("matd3", "matd3", REACH, CONTINUOUS),
    Check("masac", "masac", REACH, CONTINUOUS),
    Check("isac", "isac", REACH, CONTINUOUS),
    Check("ippo", "ippo", LINE, PPO),
    Check("mappo_recurrent", "mappo", LINE, PPO + RECURRENT_PPO),
    Check("happo", "happo", LINE, PPO),
    Check("dqn", "dqn", "gymnasium/CartPole-v1",
          ("--min_replay_size=64", "--batch_size=32", "--samples_per_insert=8",
           "--variable_update_period=25", "--hidden_sizes=32,32", "--evaluation_every_steps=200",
           "--num_caches=0"), 600),
    Check("r2d2", "r2d2", "gymnasium/CartPole-v1",
          ("--min_replay_size=20", "--batch_size=8", "--samples_per_insert=4",
           "--burn_in_length=4", "--trace_length=8", "--replay_period=4",
           "--variable_update_period=25", "--hidden_sizes=32", "--evaluation_every_steps=200"),
          600),
    Check("impala", "impala", "gymnasium/CartPole-v1",
          ("--batch_size=4", "--sequence_length=10", "--variable_update_period=10",
           "--hidden_sizes=32,32", "--evaluation_every_steps=200"), 600),
    Check("dmpo", "dmpo", "gymnasium/Pendulum-v1",
          ("--min_replay_size=64", "--batch_size=32", "--samples_per_insert=8",
           "--variable_update_period=25", "--policy_hidden_sizes=32,32",
           "--critic_hidden_sizes=32,32", "--num_samples=4", "--vmin=-1000", "--vmax=0",
           "--evaluation_every_steps=200"), 600),
    # Several environments per executor: on the line world an adder each
    # (acting/multi_environment.py); on LBF one vectorised environment, its steps unsplit
    # (acting/unsplit_loop.py, vectorised_loop.py).
    Check("madqn_envs4", "madqn", LINE, VALUE + ("--num_envs_per_executor=4",), 600),
    Check("mappo_envs4", "mappo", LINE, PPO + ("--num_envs_per_executor=4",), 600),
    Check("madqn_vectorised", "madqn", LBF, VALUE + ("--num_envs_per_executor=4",), 800),
    Check("mappo_vectorised", "mappo", LBF, PPO + ("--num_envs_per_executor=4",), 800),
)


def executor_node(system: str) -> str:
    """The log directory of a system's first executor (`actor_0` for single-agent systems)."""
    from mava_systems import registry  # pylint: disable=import-outside-toplevel
    path = registry.builtin_system_paths()[system]
    return f"{registry.declared_attribute(path, 'executors_group', 'executor')}_0"


def check_command(check: Check, run_dir: str, launch_type: str) -> List[str]:
    """The `python -m mava_systems.train` command of one run of `check`."""
    executor = executor_node(check.system).rpartition("_")[0]
    return [sys.executable, "-m", "mava_systems.train", f"--system={check.system}",
            f"--env={check.env}", f"--lp_launch_type={launch_type}", f"--run_dir={run_dir}",
            "--deterministic", f"--max_{executor}_steps={check.steps}", *COMMON, *check.flags]


def run_check(check: Check, root: str, launch_type: str) -> Dict[str, Any]:
    """Runs `check` twice at once (as two users of one machine might; the runs' timings differ)
    and compares them (`repeat_report`)."""
    start = time.monotonic()
    run_dirs = [os.path.join(root, check.name, name) for name in ("first", "second")]
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    runs = [subprocess.Popen(check_command(check, run_dir, launch_type), cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment)
            for run_dir in run_dirs]
    errors = []
    for run in runs:
        try:
            output, _ = run.communicate(timeout=max(1.0, start + RUN_TIMEOUT_S - time.monotonic()))
        except subprocess.TimeoutExpired:
            run.kill()
            run.communicate()
            errors.append(f"a run did not finish within {RUN_TIMEOUT_S} s")
            continue
        if run.returncode != 0:
            errors += output.strip().splitlines()[-3:]
    if errors:
        return {"repeats": False, "seconds": time.monotonic() - start, "error": errors}
    report = repeat_report(*run_dirs, executor_node(check.system))
    report["seconds"] = time.monotonic() - start
    return report


def describe_check(check: Check, report: Mapping[str, Any]) -> str:
    """One line of the check's table."""
    if "error" in report:
        return f"{check.name:18} FAILED TO RUN: {' | '.join(report['error'])}"
    rows = ", ".join(f"{node} {count}" for node, count in report["rows"].items())
    differences = [f"{kind}: {text}" for kind, text in report["differences"].items() if text]
    verdict = "repeats" if report["repeats"] else "DIFFERS (" + "; ".join(differences) + ")"
    return (f"{check.name:18} {check.system:7} {check.env:24} trainer steps "
            f"{report['trainer_steps']}, rows {rows}: {verdict} ({report['seconds']:.0f} s)")


def check_main(names: Optional[Sequence[str]], launch_type: str, out: str, keep: bool) -> int:
    """Runs the chosen checks (all without `names`); 0 if every one repeats, else 1."""
    by_name = {check.name: check for check in CHECKS}
    unknown = [name for name in names or () if name not in by_name]
    if unknown:
        raise SystemExit(f"error: unknown check(s) {', '.join(unknown)}; checks: "
                         f"{', '.join(by_name)}")
    chosen = [by_name[name] for name in names] if names else list(CHECKS)
    print(f"launch type {launch_type}; load before: {os.getloadavg()}", flush=True)
    root = tempfile.mkdtemp(prefix="determinism-check-")
    results = {}
    try:
        for check in chosen:
            results[check.name] = run_check(check, root, launch_type)
            print(describe_check(check, results[check.name]), flush=True)
    finally:
        if keep:
            print(f"run directories kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    repeating = sum(report["repeats"] for report in results.values())
    print(f"{repeating} of {len(results)} repeat; load after: {os.getloadavg()}")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as out_file:
        json.dump({"launch_type": launch_type, "load": os.getloadavg(),
                   "checks": {name: {**dataclasses.asdict(by_name[name]), **report}
                              for name, report in results.items()}}, out_file, indent=2)
    return 0 if repeating == len(results) else 1

# ---------------------------------------------------------------------------- what it costs


def run_once(flags: List[str], run_dir: str) -> float:
    """One run of the example with `flags`: the executor steps per second its summary says."""
    command = [sys.executable, os.path.join(ROOT, "examples", "classic", "run_madqn.py"),
               "--lp_launch_type=local_mt", f"--run_dir={run_dir}", *flags]
    result = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    return float(SUMMARY_RATE.search(result.stdout).group(1))


def cost_main(rounds: int, steps: int, env: str) -> None:
    """Runs the rounds of both modes and prints the rates."""
    flags = [f"--env={env}", f"--max_executor_steps={steps}", "--min_replay_size=256",
             "--progress_interval_s=0", "--seed=1"]
    print(f"load before: {os.getloadavg()}")
    rates: Dict[str, List[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as root:
        for round_index in range(rounds):
            for mode, extra in MODES.items():
                rate = run_once(flags + extra, os.path.join(root, f"{mode}-{round_index}"))
                rates[mode].append(rate)
                print(f"round {round_index} {mode}: {rate:.1f} executor steps/s", flush=True)
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    for mode, value in medians.items():
        print(f"{mode}: {value:.1f} executor steps/s (median of {rounds})")
    ratio = medians["deterministic"] / medians["usual"]
    print(f"deterministic / usual: {ratio:.2f}; load after: {os.getloadavg()}")
    print(json.dumps({"env": env, "steps": steps, "rounds": rounds,
                      "rates": rates, "ratio": ratio, "load": os.getloadavg()}))


def main() -> None:
    """Measures the cost of `--deterministic`, or (`--check`) whether every system repeats."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--env", default=LINE)
    parser.add_argument("--check", action="store_true",
                        help="run every case of CHECKS twice with --deterministic and compare")
    parser.add_argument("--systems", default=None,
                        help="with --check: comma-separated cases (default all: "
                             f"{', '.join(check.name for check in CHECKS)})")
    parser.add_argument("--launch_type", default="local_mt", choices=["local_mt", "local_mp"])
    parser.add_argument("--out", default=RESULTS, help="with --check: the JSON results")
    parser.add_argument("--keep", action="store_true",
                        help="with --check: keep the run directories")
    args = parser.parse_args()
    if args.check:
        names = [name for name in (args.systems or "").split(",") if name]
        sys.exit(check_main(names, args.launch_type, args.out, args.keep))
    cost_main(args.rounds, args.steps, args.env)


if __name__ == "__main__":
    main()
