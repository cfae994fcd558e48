"""Where a running program's CPU goes, thread by thread (Linux).

    .venv/bin/python -m benchmarks.threads --system madqn --launch_type local_mp \
        --num_executors 1 --seconds 15

Starts `examples/mpe/run_<system>.py` on `mpe/simple_spread_v3` with a step limit it does not
reach, waits for the trainer's first step and `--settle_s` more, then reads every thread of the
program's processes (`/proc/<pid>/task/<tid>/stat` and `schedstat`) at the start and at the end
of a `--seconds` window, and stops the program as Ctrl-C would. Prints, per node process (a Ray
program's node actors named from its `ray_nodes.json`), the cores it kept busy, its CPU per
executor step, and its busiest threads with their wait for a core (run-queue wait) and time
slices a second. The last line is one JSON object, also written to `--out`.

It is the tool behind the per-thread accounts of docs/program_cpu.md (the executor's loop
thread against Reverb's and Ray's threads, the shared core's occupants).
"""

import dataclasses
import os
import sys
import tempfile
import time
from typing import Dict, List, Mapping, Optional, Sequence

if __package__ in (None, ""):  # Run as a file: python benchmarks/threads.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # pylint: disable=wrong-import-position
from benchmarks import program as program_lib  # pylint: disable=wrong-import-position

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class ThreadTimes:
    """One thread's counters at one moment."""

    name: str
    cpu_s: float  # User + system CPU time.
    wait_s: float  # Time spent runnable, waiting for a core.
    slices: int  # Time slices run so far.


@dataclasses.dataclass(frozen=True)
class ThreadUsage:
    """One thread's use of the machine over a window."""

    tid: int
    name: str
    cores: float  # CPU seconds per second of the window.
    wait_cores: float  # Seconds waiting for a core per second of the window.
    slices_per_s: float


def parse_stat(stat: str) -> Dict[str, float]:
    """The thread's name and user + system CPU seconds from one `/proc/.../stat` line."""
    name = stat[stat.index("(") + 1:stat.rindex(")")]  # The name may hold spaces and ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return {"name": name, "cpu_s": (int(fields[11]) + int(fields[12])) / CLOCK_TICKS}


def thread_times(pid: int) -> Dict[int, ThreadTimes]:
    """Every live thread of process `pid` with its counters ({} if the process has gone)."""
    times = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat_file:
                stat = parse_stat(stat_file.read())
            with open(f"/proc/{pid}/task/{tid}/schedstat") as schedstat_file:
                _, wait_ns, slices = schedstat_file.read().split()[:3]
        except (OSError, ValueError):
            continue  # The thread ended meanwhile.
        times[int(tid)] = ThreadTimes(stat["name"], stat["cpu_s"], int(wait_ns) / 1e9,
                                      int(slices))
    return times


def usage(before: Mapping[int, ThreadTimes], after: Mapping[int, ThreadTimes],
          seconds: float) -> List[ThreadUsage]:
    """Each thread's use over `seconds` between two readings, busiest first.

    A thread started within the window counts from zero; one that ended is left out.
    """
    used = []
    for tid, end in after.items():
        start = before.get(tid, ThreadTimes(end.name, 0.0, 0.0, 0))
        used.append(ThreadUsage(tid, end.name, (end.cpu_s - start.cpu_s) / seconds,
                                (end.wait_s - start.wait_s) / seconds,
                                (end.slices - start.slices) / seconds))
    return sorted(used, key=lambda thread: thread.cores, reverse=True)


def process_label(tree: common.ProcessTree, process, node_pids: Mapping[int, str]) -> str:
    """A node's label ("executor/0"), else the process's name and pid."""
    label = node_pids.get(process.pid) or tree.node_label(process)
    if label:
        return label
    try:
        return f"{process.name()}[{process.pid}]"
    except Exception:  # pylint: disable=broad-except
        return f"[{process.pid}]"


def wait_for_first_trainer_step(csv_path: str, timeout_s: float) -> None:
    """Returns once the trainer has logged a row; SystemExit after `timeout_s`."""
    start = time.monotonic()
    while not (os.path.exists(csv_path) and os.path.getsize(csv_path) > 0):
        if time.monotonic() - start > timeout_s:
            raise SystemExit(f"no trainer step within {timeout_s:.0f} s ({csv_path})")
        time.sleep(0.5)


def account(args) -> Dict[str, object]:
    """Runs the program and returns its per-process, per-thread account."""
    run_dir = tempfile.mkdtemp(prefix="threads-")
    run = os.path.join(run_dir, "run")
    command = common.example_command(
        run, args.launch_type, 100_000_000, [f"--num_executors={args.num_executors}",
                                             *args.flag], system_name=args.system)
    process = common.start_example(command, os.path.join(run_dir, "output.log"))
    tree = common.ProcessTree(process.pid)
    try:
        trainer_csv = common.node_csv(run, "trainer")
        wait_for_first_trainer_step(trainer_csv, args.start_timeout_s)
        time.sleep(args.settle_s)
        node_pids = program_lib.ray_node_pids(run)
        processes = {proc.pid: process_label(tree, proc, node_pids)
                     for proc in tree.processes()}
        steps_before = common.count(common.last_row(trainer_csv), "executor_steps")
        before = {pid: thread_times(pid) for pid in processes}
        started = time.monotonic()
        time.sleep(args.seconds)
        after = {pid: thread_times(pid) for pid in processes}
        seconds = time.monotonic() - started
        steps = common.count(common.last_row(trainer_csv), "executor_steps") - steps_before
    finally:
        stop = common.stop_example(process, tree)
    per_process = {}
    for pid, label in processes.items():
        threads = usage(before[pid], after[pid], seconds)
        cores = sum(thread.cores for thread in threads)
        per_process[label] = {
            "pid": pid, "cores": round(cores, 3),
            "ms_per_executor_step": round(1000 * cores * seconds / steps, 4) if steps else None,
            "threads": [dataclasses.asdict(thread) for thread in threads[:args.threads]]}
    return {"executor_steps_per_s": round(steps / seconds, 1), "window_s": round(seconds, 1),
            "processes": per_process, "stop": stop}


def print_account(figures: Mapping[str, object], threads: int) -> None:
    """The account as text: processes by cores, each with its busiest threads."""
    processes = figures["processes"]
    print(f"{figures['executor_steps_per_s']} executor steps/s over {figures['window_s']} s, "
          f"{sum(entry['cores'] for entry in processes.values()):.2f} cores")
    for label, entry in sorted(processes.items(), key=lambda item: -item[1]["cores"]):
        if entry["cores"] < 0.005:
            continue
        print(f"{label}: {entry['cores']:.3f} cores, "
              f"{common.fmt(entry['ms_per_executor_step'], 4)} ms per executor step")
        for thread in entry["threads"][:threads]:
            if thread["cores"] >= 0.005:
                print(f"    {thread['name']:<24} {thread['cores']:.3f} cores, waits "
                      f"{thread['wait_cores']:.3f}, {thread['slices_per_s']:.0f} slices/s")


def main(argv: Optional[Sequence[str]] = None) -> None:
    """The command line."""
    parser = common.make_parser("threads", __doc__.split("\n\n")[0], seconds=15.0, repeats=1,
                                seconds_help="seconds of the window measured", warmup=None)
    parser.add_argument("--system", default="madqn",
                        help="the system whose examples/mpe/run_<system>.py runs")
    parser.add_argument("--launch_type", default="local_mp", choices=["local_mp", "ray"],
                        help="the launch type (local_mt's nodes are threads of one process)")
    parser.add_argument("--num_executors", type=int, default=1)
    parser.add_argument("--flag", action="append", default=[],
                        help="a further flag for the example, e.g. --flag=--cpu_placement=none")
    parser.add_argument("--settle_s", type=float, default=10.0,
                        help="seconds from the first trainer step to the window's start")
    parser.add_argument("--start_timeout_s", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=5, help="threads shown per process")
    args = common.check_args(parser.parse_args(argv))
    common.mpe_example(args.system)  # A clear error before anything starts.
    if not os.path.isdir("/proc/self/task"):
        raise SystemExit("benchmarks.threads reads /proc: Linux only")
    figures = account(args)
    print_account(figures, args.threads)
    common.emit(args, figures, {"benchmark": "threads", "env": common.ENV_NAME,
                                "system": args.system, "launch_type": args.launch_type,
                                "num_executors": args.num_executors, "flags": args.flag})


if __name__ == "__main__":
    main()
