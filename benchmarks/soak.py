"""Soak test: MADQN on simple_spread_v3 under local_mp for an hour, watching what grows.

    python -m benchmarks.soak                       # 60 minutes, a sample every minute
    python -m benchmarks.soak --minutes=15 --warmup_minutes=3 --sample_s=30
    python -m benchmarks.soak --flag=--trainer_steps_per_call=4   # a flag for the example

Every `--sample_s` it records, per node process (replay, counter, trainer,
evaluator, executor/0, executor/1, ...): RSS, open file descriptors and
threads; and the replay size (the trainer's last logged `replay_size`), the
executor and trainer steps, and the size of the checkpoint directory with its
file count. At the end it stops the program as Ctrl-C would and reports the
growth from minute `--warmup_minutes` (default 10) to the end: RSS growth in
percent per node between the two samples and as a least-squares trend (MB per
minute, % per hour, KB per trainer step; target under 5 %), file-descriptor
and thread count changes (target 0),
and the checkpoint directory's largest size (bounded: Checkpointing keeps
`max_checkpoints_to_keep` per node, Reverb keeps one replay checkpoint).
Numbers measured while other work runs on the machine are noisy.
"""

import os
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional

from benchmarks import common

DEFAULT_FLAGS = ("--num_executors=2", "--progress_interval_s=0", "--checkpoint_interval_s=60")


def node_processes(tree: common.ProcessTree) -> Dict[str, Any]:
    """{node label: its Python process} (see `ProcessTree.node_label`)."""
    nodes = {}
    for process in tree.processes():
        label = tree.node_label(process)
        if label is not None:
            nodes[label] = process
    return nodes


def directory_size(path: str) -> Dict[str, int]:
    """Bytes and files under `path`."""
    total, files = 0, 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(directory, name))
                files += 1
            except OSError:
                pass
    return {"bytes": total, "files": files}


def sample(tree: common.ProcessTree, run_dir: str, start: float) -> Dict[str, Any]:
    """One sample of every node's resources and of the run directory."""
    nodes = {}
    for label, process in node_processes(tree).items():
        try:
            with process.oneshot():
                nodes[label] = {"rss_mb": process.memory_info().rss / 2**20,
                                "fds": process.num_fds(), "threads": process.num_threads()}
        except Exception:  # pylint: disable=broad-except
            continue
    trainer = common.last_row(common.node_csv(run_dir, "trainer"))
    checkpoints = directory_size(os.path.join(run_dir, "checkpoints"))
    return {"minute": round((time.monotonic() - start) / 60, 2), "nodes": nodes,
            "replay_size": common.count(trainer, "replay_size"),
            "executor_steps": common.count(trainer, "executor_steps"),
            "trainer_steps": common.count(trainer, "trainer_steps"),
            "checkpoint_mb": round(checkpoints["bytes"] / 2**20, 2),
            "checkpoint_files": checkpoints["files"]}


def rss_slope(samples: List[Dict[str, Any]], label: str) -> float:
    """Node `label`'s RSS trend over `samples` in MB per minute (least squares): steadier
    than the change between two samples, which a save in progress can move."""
    points = [(entry["minute"], entry["nodes"][label]["rss_mb"]) for entry in samples
              if label in entry["nodes"]]
    if len(points) < 2:
        return 0.0
    return statistics.linear_regression(*zip(*points)).slope


def growth(samples: List[Dict[str, Any]], warmup_minutes: float) -> Dict[str, Any]:
    """Per node, the change from the first sample at or after `warmup_minutes` to the last."""
    later = [entry for entry in samples if entry["minute"] >= warmup_minutes]
    if len(later) < 2:
        return {}
    first, last = later[0], later[-1]
    trainer_steps = [(entry["minute"], entry["trainer_steps"]) for entry in later]
    trainer_steps_per_minute = statistics.linear_regression(*zip(*trainer_steps)).slope
    result = {}
    for label, end in last["nodes"].items():
        begin = first["nodes"].get(label)
        if not begin:
            continue
        slope = rss_slope(later, label)
        result[label] = {
            "rss_mb_from": round(begin["rss_mb"], 1), "rss_mb_to": round(end["rss_mb"], 1),
            "rss_growth_percent": round(100 * (end["rss_mb"] / begin["rss_mb"] - 1), 2),
            "rss_mb_per_minute": round(slope, 4),
            "rss_percent_per_hour": round(100 * 60 * slope / begin["rss_mb"], 2),
            "rss_kb_per_trainer_step": (round(1024 * slope / trainer_steps_per_minute, 3)
                                        if trainer_steps_per_minute > 0 else None),
            "fds_change": end["fds"] - begin["fds"],
            "threads_change": end["threads"] - begin["threads"]}
    return {"from_minute": first["minute"], "to_minute": last["minute"], "nodes": result,
            "trainer_steps_per_minute": round(trainer_steps_per_minute, 1),
            "replay_size_from": first["replay_size"], "replay_size_to": last["replay_size"],
            "checkpoint_mb_max": max(entry["checkpoint_mb"] for entry in later),
            "checkpoint_mb_from": first["checkpoint_mb"], "checkpoint_mb_to": last["checkpoint_mb"],
            "checkpoint_files_max": max(entry["checkpoint_files"] for entry in later)}


def main() -> None:
    parser = common.make_parser("soak", __doc__.splitlines()[0], seconds=0.0, repeats=1,
                                warmup=None)
    parser.add_argument("--minutes", type=float, default=60.0, help="how long to run (default 60)")
    parser.add_argument("--warmup_minutes", type=float, default=10.0,
                        help="growth is measured from this minute on (default 10)")
    parser.add_argument("--sample_s", type=float, default=60.0,
                        help="seconds between samples (default 60)")
    parser.add_argument("--run_dir", default=None, help="run directory (default: a temporary one)")
    parser.add_argument("--flag", action="append", default=[],
                        help="a further flag passed on to the example, e.g. "
                             "--flag=--trainer_steps_per_call=4 (repeatable)")
    args = common.check_args(parser.parse_args())
    if args.minutes <= args.warmup_minutes or args.sample_s <= 0:
        raise SystemExit("--minutes must exceed --warmup_minutes, and --sample_s be positive")
    run_dir = args.run_dir or os.path.join(tempfile.mkdtemp(prefix="soak-"), "run")
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    output_path = os.path.join(os.path.dirname(run_dir), "soak-output.log")
    process = common.start_example(common.example_command(run_dir, "local_mp", 0,
                                                          [*DEFAULT_FLAGS, *args.flag]),
                                   output_path)
    tree = common.ProcessTree(process.pid)
    start = time.monotonic()
    samples: List[Dict[str, Any]] = []
    stop: Optional[Dict[str, Any]] = None
    try:
        while time.monotonic() - start < args.minutes * 60:
            time.sleep(min(args.sample_s, max(0.0, args.minutes * 60 - (time.monotonic() - start))))
            if process.poll() is not None:
                raise SystemExit(f"the program ended early:\n{common.tail_of(output_path)}")
            samples.append(sample(tree, run_dir, start))
            latest = samples[-1]
            common.progress(f"minute {latest['minute']:.1f}: {latest['executor_steps']} executor "
                            f"steps, replay {latest['replay_size']}, checkpoints "
                            f"{latest['checkpoint_mb']} MB, RSS MB " + ", ".join(
                                f"{label} {node['rss_mb']:.0f}"
                                for label, node in sorted(latest["nodes"].items())))
    finally:
        stop = common.stop_example(process, tree)
    result = growth(samples, args.warmup_minutes)
    rows = [(label, node["rss_mb_from"], node["rss_mb_to"], node["rss_growth_percent"],
             node["rss_mb_per_minute"], node["rss_percent_per_hour"],
             common.fmt(node["rss_kb_per_trainer_step"], 3),
             node["fds_change"], node["threads_change"])
            for label, node in sorted(result.get("nodes", {}).items())]
    common.print_table(f"Growth from minute {result.get('from_minute')} to "
                       f"{result.get('to_minute')} ("
                       f"{common.fmt(result.get('trainer_steps_per_minute'), 0)} trainer "
                       f"steps/min, fit)",
                       ["node", "RSS MB from", "RSS MB to", "RSS growth %", "MB/min (fit)",
                        "% per hour (fit)", "KB per trainer step (fit)", "fds change",
                        "threads change"], rows)
    common.emit(args, {"growth": result, "samples": samples, "stop": stop},
                {"minutes": args.minutes, "warmup_minutes": args.warmup_minutes,
                 "sample_s": args.sample_s, "environment": common.ENV_NAME,
                 "flags": [*DEFAULT_FLAGS, *args.flag], "run_dir": run_dir})


if __name__ == "__main__":
    main()
