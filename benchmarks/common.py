"""What the benchmarks share: arguments, timing, medians, tables, JSON results, running the example.

Import this module before TensorFlow (it quiets TensorFlow and pygame through
environment variables that must be set before they load).
"""

import argparse
import csv
import dataclasses
import datetime
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set,
                    Tuple)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # every PettingZoo env imports pygame
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results")
EXAMPLE = os.path.join(ROOT, "examples", "mpe", "run_madqn.py")
ENV_NAME = "mpe/simple_spread_v3"

# --------------------------------------------------------------------------- arguments


def make_parser(name: str, description: str, seconds: float, repeats: int = 3,
                seconds_help: str = "seconds measured per run", warmup: Optional[float] = 2.0,
                in_process: bool = False) -> argparse.ArgumentParser:
    """The arguments every benchmark takes: --repeats, --seconds, --out, and --warmup
    unless `warmup` is None (benchmarks with no timing loop of their own); benchmarks
    that run the library `in_process` also take --tf_threads, and those of them with a
    timing loop --clock."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=description)
    parser.add_argument("--repeats", type=int, default=repeats,
                        help=f"runs per figure; the median is reported (default {repeats})")
    parser.add_argument("--seconds", type=float, default=seconds,
                        help=f"{seconds_help} (default {seconds:g})")
    if warmup is not None:
        parser.add_argument("--warmup", type=float, default=warmup,
                            help=f"seconds run before each timed run and not counted "
                                 f"(default {warmup:g})")
    if in_process:
        parser.add_argument("--tf_threads", type=int, default=1,
                            help="TensorFlow threads per op pool, as the examples' --tf_threads "
                                 "(default 1; 0: one per core)")
    if in_process and warmup is not None:  # Benchmarks with a timing loop of their own.
        parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                            help="wall: rates per second of wall time (default); cpu: per second "
                                 "of this process's CPU time, all threads (steadier than wall "
                                 "time on a machine busy with other work)")
    parser.add_argument("--out", default=os.path.join(RESULTS_DIR, f"{name}.json"),
                        help="where the JSON results go (default benchmarks/results/%(prog)s.json)"
                        .replace("%(prog)s", name))
    return parser


def check_args(args: argparse.Namespace) -> argparse.Namespace:
    """Rejects counts and durations that cannot give a result."""
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, got {args.repeats}")
    if args.seconds < 0 or getattr(args, "warmup", 0) < 0:
        raise SystemExit("--seconds and --warmup must not be negative")
    return args


# --------------------------------------------------------------------------- timing


# The clocks rates can be measured against (`--clock`).
CLOCKS: Dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def measure_rate(step: Callable[[], int], seconds: float, warmup_s: float = 0.0,
                 clock: Callable[[], float] = time.perf_counter) -> float:
    """Units per second of `clock` of `step()`, which does some units of work and returns how many.

    `step` runs for `warmup_s` seconds (at least once) uncounted, then for at
    least `seconds` counted; the clock is read between calls only, so one call
    should take much less than `seconds`.
    """
    deadline = clock() + warmup_s
    step()
    while clock() < deadline:
        step()
    units = 0
    start = clock()
    end = start + seconds
    while True:
        units += step()
        now = clock()
        if now >= end:
            return units / (now - start)


def one_call(step: Callable[[], Any]) -> Callable[[], int]:
    """`step` as a timing step that counts each call as one unit (for `measure_rate`)."""
    def timed() -> int:
        step()
        return 1
    return timed


def measure_interleaved(variants: Mapping[str, Callable[[], int]], repeats: int, seconds: float,
                        warmup_s: float, clock: str = "wall") -> Dict[str, List[float]]:
    """Rates of every variant, `repeats` times, in turns (a, b, c, a, b, c, ...), per second of
    the `clock` named (see `CLOCKS`).

    Taking turns spreads slow phases of a shared machine over all variants,
    which keeps their ratios fair.
    """
    rates: Dict[str, List[float]] = {name: [] for name in variants}
    for repeat in range(repeats):
        for name, step in variants.items():
            rate = measure_rate(step, seconds, warmup_s, CLOCKS[clock])
            rates[name].append(rate)
            progress(f"repeat {repeat + 1}/{repeats}  {name}: {rate:,.1f}/s")
    return rates


def median(values: Sequence[float]) -> Optional[float]:
    """The median of `values`, None when there are none."""
    values = [value for value in values if value is not None]
    return float(statistics.median(values)) if values else None


def ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def progress(message: str) -> None:
    """A progress line (stderr, so that stdout ends with the table and the JSON)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- output


def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: numbers with thousands separators, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain-text table; the first column is left-aligned, the others right-aligned."""
    cells = [[str(header) for header in headers]] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                         for i, cell in enumerate(row))

    print(f"\n{title}")
    print(line(cells[0]))
    print("  ".join("-" * width for width in widths))
    for row in cells[1:]:
        print(line(row))
    print(flush=True)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info() -> Dict[str, Any]:
    """What the numbers were measured on and against which code."""
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu_model = next((line.split(":", 1)[1].strip() for line in cpuinfo
                              if line.startswith("model name")), "")
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo") as meminfo:
            kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
            mem_gb = round(kb / 1024 ** 2, 1)
    except (OSError, StopIteration):
        pass
    dirty = _git("status", "--porcelain", "--", "mava_systems", "wrappers", "examples")
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "library_uncommitted_changes": bool(dirty),
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model,
        "mem_gb": mem_gb,
        "python": sys.version.split()[0],
        "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
    }


def display_path(path: str) -> str:
    """`path` relative to the repository when it is inside it, else absolute."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def emit(args: argparse.Namespace, figures: Dict[str, Any], meta: Dict[str, Any]) -> None:
    """Writes `figures` (plus "meta": settings and machine) to `args.out`, then prints it as JSON.

    The JSON object is the last line of stdout.
    """
    result = dict(figures)
    result["meta"] = {**meta, "repeats": args.repeats, "seconds": args.seconds,
                      **({"clock": args.clock} if hasattr(args, "clock") else {}),
                      **({"warmup": args.warmup} if hasattr(args, "warmup") else {}),
                      **({"tf_threads": args.tf_threads} if hasattr(args, "tf_threads") else {}),
                      **machine_info()}
    directory = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(directory, exist_ok=True)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2)
        out.write("\n")
    print(f"Results written to {display_path(args.out)}", flush=True)
    print(json.dumps(result), flush=True)


# --------------------------------------------------------------------------- in-process components


def prepare_in_process(tf_threads: int) -> None:
    """Sets TensorFlow's thread pools as a program's processes have them (`--tf_threads`), and
    lets library code that reads absl flags (Launchpad, Reverb logging) run outside `app.run`."""
    from absl import flags

    from mava_systems.launching import launch  # pylint: disable=import-outside-toplevel

    launch.configure_tensorflow_threads(tf_threads)
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


# --------------------------------------------------------------------------- the example as a subprocess


# Systems for continuous actions only: they run on ENV_NAME with these arguments (as their MPE
# examples do).
SYSTEM_ENV_KWARGS: Dict[str, Dict[str, Any]] = {"maddpg": {"continuous_actions": True},
                                               "mad4pg": {"continuous_actions": True}}


def config_fields(system_name: str) -> Set[str]:
    """The names of the fields of registered system `system_name`'s config."""
    from mava_systems import registry  # pylint: disable=import-outside-toplevel

    return {field.name for field in
            dataclasses.fields(registry.system_class(system_name).config_class)}


def keeping_items(table: Any) -> Any:
    """A table with `table`'s name, size and signature whose items stay when sampled (drawn
    uniformly, the oldest removed when full): a queue (`max_times_sampled` > 0) that a
    benchmark's trainer samples from for as long as it is timed, without draining it."""
    import reverb  # pylint: disable=import-outside-toplevel

    info = table.info
    return reverb.Table(name=info.name, sampler=reverb.selectors.Uniform(),
                        remover=reverb.selectors.Fifo(), max_size=info.max_size,
                        rate_limiter=reverb.rate_limiters.MinSize(1), signature=info.signature)


def local_madqn(label: str, system_name: str = "madqn", keep_items: bool = False,
                env: Optional[str] = None, **config_kwargs: Any) -> Any:
    """A MADQN system (or one of another registered name, e.g. "vdn", "qmix", "mappo" or
    "maddpg") on ENV_NAME (with `SYSTEM_ENV_KWARGS`), with no rate limit and its own
    in-process Reverb server.

    With `env`, on that environment instead (no `SYSTEM_ENV_KWARGS`). With `keep_items`,
    queue tables (MAPPO's) are served as `keeping_items` makes them.
    Returns (system, server, client); the system's run_dir is a fresh temporary directory.
    """
    import tempfile  # pylint: disable=import-outside-toplevel

    import reverb  # pylint: disable=import-outside-toplevel

    from mava_systems import registry  # pylint: disable=import-outside-toplevel
    import wrappers  # pylint: disable=import-outside-toplevel

    system_class = registry.system_class(system_name)
    fields = config_fields(system_name)
    # No rate limit: the benchmarks drive inserts and samples themselves (a queue, as
    # MAPPO's, gets room for everything a benchmark inserts).
    if "samples_per_insert" in fields:
        config_kwargs.setdefault("samples_per_insert", None)
    if "max_queue_size" in fields:
        config_kwargs.setdefault("max_queue_size", 1_000_000)
    if "critic" in fields and hasattr(system_class, "critic"):  # IPPO's config: its own critic.
        config_kwargs.setdefault("critic", system_class.critic)
    config = system_class.config_class(**config_kwargs)
    factory = (wrappers.make_environment_factory(env) if env is not None else
               wrappers.make_environment_factory(ENV_NAME,
                                                 **SYSTEM_ENV_KWARGS.get(system_name, {})))
    system = system_class(factory, config=config,
                          run_dir=tempfile.mkdtemp(prefix=f"bench-{label}-{system_name}-"))
    tables = system.replay()
    if keep_items:
        tables = [keeping_items(table) if table.info.max_times_sampled > 0 else table
                  for table in tables]
    server = reverb.Server(tables)
    return system, server, reverb.Client(f"localhost:{server.port}")


def exploration_arguments(system: Any, epsilon: float) -> Dict[str, Any]:
    """`system`'s builder's exploration arguments of `make_executor`: a constant `epsilon` (or
    noise scale) for systems that explore by a schedule, none for the others (MAPPO samples)."""
    from mava_systems.acting.exploration import ConstantEpsilon

    return ({"exploration_schedule": ConstantEpsilon(epsilon)}
            if getattr(system, "explores_by_schedule", False) else {})


def acting_executor(system: Any, epsilon: float, adder: Any = None, seed: int = 0) -> Any:
    """An acting executor of `system`'s builder, exploring as `exploration_arguments` says."""
    builder = system.builder
    return builder.make_executor(builder.make_networks(), adder=adder, seed=seed,
                                 **exploration_arguments(system, epsilon))


def system_names(text: str) -> List[str]:
    """"vdn,qmix" -> ["vdn", "qmix"] ("" -> []).

    Raises:
      SystemExit: naming the registered systems, if a name is not one of them.
    """
    from mava_systems import registry  # pylint: disable=import-outside-toplevel

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in registry.system_names()]
    if unknown:
        raise SystemExit(f"unknown system(s) {', '.join(unknown)}; registered systems: "
                         f"{', '.join(sorted(registry.system_names()))}")
    return names


def stop_local(systems: Iterable[Tuple[Any, Any, Any]]) -> None:
    """Stops the Reverb server of each (system, server, client) `local_madqn` made and removes
    the system's run directory."""
    import shutil  # pylint: disable=import-outside-toplevel

    for system, server, _ in systems:
        server.stop()
        shutil.rmtree(system.run_dir, ignore_errors=True)


def mpe_example(system_name: str, root: str = ROOT) -> str:
    """The path of examples/mpe/run_<system_name>.py (in the repository at `root`).

    Raises:
      SystemExit: naming the systems that have one, if `system_name` has none.
    """
    path = os.path.join(root, "examples", "mpe", f"run_{system_name}.py")
    if not os.path.exists(path):
        available = sorted(name[len("run_"):-len(".py")]
                           for name in os.listdir(os.path.dirname(EXAMPLE))
                           if name.startswith("run_") and name.endswith(".py"))
        raise SystemExit(f"no MPE example for system {system_name!r}; systems with one: "
                         f"{', '.join(available)}")
    return path


def example_command(run_dir: str, launch_type: str, max_executor_steps: int,
                    flags: Sequence[str] = (), system_name: str = "madqn",
                    root: str = ROOT) -> List[str]:
    """The command running examples/mpe/run_<system_name>.py (of the repository at `root`) on
    simple_spread_v3.

    With `--verbose`: the benchmarks read the libraries' messages (the coordinator's stop,
    Launchpad's termination) from the program's own output.
    """
    return [sys.executable, mpe_example(system_name, root), f"--env={ENV_NAME}",
            f"--lp_launch_type={launch_type}", f"--max_executor_steps={max_executor_steps}",
            f"--run_dir={run_dir}", "--verbose", *flags]


def start_example(command: Sequence[str], output_path: str, root: str = ROOT
                  ) -> subprocess.Popen:
    """Starts `command` in its own session (its own process group), output to `output_path`,
    in the repository at `root` (whose library comes first on the Python path)."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if root != ROOT:
        env["PYTHONPATH"] = os.pathsep.join([root, *[path for path in env.get(
            "PYTHONPATH", "").split(os.pathsep) if path and os.path.abspath(path) != ROOT]])
    with open(output_path, "w") as output:
        return subprocess.Popen(list(command), cwd=root, env=env, stdin=subprocess.DEVNULL,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


class ProcessTree:
    """A process and its descendants: their summed memory, and cleaning up every one of them."""

    def __init__(self, pid: int):
        import psutil

        self._psutil = psutil
        self.root = psutil.Process(pid)
        self._seen: Dict[int, Any] = {pid: self.root}  # pid -> psutil.Process (create time kept)
        self.peak_rss_bytes = 0
        self.peak_pss_bytes = 0
        self.max_processes = 0

    def processes(self) -> List[Any]:
        """The live processes of the tree (remembering every one seen)."""
        psutil = self._psutil
        try:
            found = [self.root] + self.root.children(recursive=True)
        except psutil.NoSuchProcess:
            found = []
        for process in found:
            self._seen.setdefault(process.pid, process)
        return found

    def sample_memory(self, with_pss: bool = True) -> Tuple[int, int]:
        """The tree's current summed RSS and PSS in bytes (PSS 0 without `with_pss`); updates
        the peaks.

        PSS (proportional set size) shares each page among the processes mapping
        it, so unlike RSS it does not count TensorFlow's shared pages once per
        process. It is read from `/proc/<pid>/smaps_rollup` (psutil's full
        `smaps` where there is none): the kernel walks every mapping of the
        process for it, which for a TensorFlow process costs milliseconds of CPU,
        so a benchmark samples it less often than RSS. It is 0 where unavailable.
        """
        rss, pss, count = 0, 0, 0
        for process in self.processes():
            try:
                rss += process.memory_info().rss
                if with_pss:
                    pss += self._pss_bytes(process)
                count += 1
            except (self._psutil.NoSuchProcess, self._psutil.ZombieProcess,
                    self._psutil.AccessDenied):
                pass
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        self.peak_pss_bytes = max(self.peak_pss_bytes, pss)
        self.max_processes = max(self.max_processes, count)
        return rss, pss

    def _pss_bytes(self, process: Any) -> int:
        """A process's proportional set size in bytes (see `sample_memory`)."""
        try:
            with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Pss:"):
                        return int(line.split()[1]) * 1024  # In kB.
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{process.pid}"):
                raise self._psutil.NoSuchProcess(process.pid) from None
            return getattr(process.memory_full_info(), "pss", 0)  # No smaps_rollup here.
        except (PermissionError, ProcessLookupError):
            raise self._psutil.NoSuchProcess(process.pid) from None
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the tree's live processes have used (with their reaped
        children's)."""
        total = 0.0
        for process in self.processes():
            try:
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
            except (self._psutil.NoSuchProcess, self._psutil.ZombieProcess,
                    self._psutil.AccessDenied):
                pass
        return total

    def node_label(self, process: Any) -> Optional[str]:
        """The node label ("trainer/0") a `local_mp` node process runs, else None.

        The launcher names each node process's node in its environment
        (`node_processes.NODE_NAME_ENV`); the `sed` that prefixes a node's output
        lines inherits nothing of it and is not a node.
        """
        from mava_systems.launching.node_processes import NODE_NAME_ENV  # pylint: disable=import-outside-toplevel

        try:
            command = process.cmdline()
            label = process.environ().get(NODE_NAME_ENV)
        except (self._psutil.NoSuchProcess, self._psutil.ZombieProcess,
                self._psutil.AccessDenied):
            return None
        if label and command and "python" in os.path.basename(command[0]):
            return label
        return None

    def cpu_by_group(self, node_pids: Optional[Mapping[int, str]] = None) -> Dict[str, float]:
        """User + system CPU seconds of the tree's live processes, summed per node group.

        Groups: each Launchpad node group of a `local_mp` program ("executor",
        "trainer", "replay", ...), or of a Ray program's node actors given by
        `node_pids` ({pid: "trainer/0"}, from the launcher's `ray_nodes.json`);
        "launcher" (the root process: the launcher, its progress line and log
        watcher); "node_output" (the per-node `sed` that prefixes every line a
        node prints); "ray" (Ray's own processes: GCS, raylet, agents, idle
        workers, the launcher's controller actor); "other" (anything else, e.g. a
        `local_mt` program's threads are all "launcher").
        """
        node_pids = node_pids or {}
        groups: Dict[str, float] = {}
        for process in self.processes():
            try:
                times = process.cpu_times()
                name = process.name()
                command = " ".join(process.cmdline()[:2])
            except (self._psutil.NoSuchProcess, self._psutil.ZombieProcess,
                    self._psutil.AccessDenied):
                continue
            label = node_pids.get(process.pid) or self.node_label(process)
            if process.pid == self.root.pid:
                group = "launcher"
            elif label is not None:
                group = label.split("/")[0]
            elif name in ("bash", "sed", "decorate_output"):
                group = "node_output"
            elif name.startswith("ray::") or "/ray/" in command or name in ("raylet",
                                                                             "gcs_server"):
                group = "ray"
            else:
                group = "other"
            groups[group] = groups.get(group, 0.0) + (times.user + times.system
                                                      + times.children_user
                                                      + times.children_system)
        return groups

    def kill_leftovers(self) -> List[int]:
        """SIGKILLs every process of the tree that is still alive; returns their pids."""
        psutil = self._psutil
        self.processes()
        killed = []
        for pid, process in list(self._seen.items()):
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    process.kill()  # is_running() checks the create time: never a reused pid.
                    killed.append(pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        try:
            os.killpg(self.root.pid, signal.SIGKILL)  # Anything left in its process group.
        except (ProcessLookupError, PermissionError):
            pass
        return killed


# How a launcher stopped by SIGINT exits when its stop was clean: 130 (`launch.STOPPED_EXIT_CODE`,
# stopped before its step limit), or 0 (at its limit; or a checkout from before that code).
CLEAN_STOP_CODES = (0, 130)


def stop_example(process: subprocess.Popen, tree: ProcessTree, timeout_s: float = 60.0
                 ) -> Dict[str, Any]:
    """Stops a running example as Ctrl-C would (SIGINT to the launcher), then cleans up.

    Launchpad asks every node to stop and kills those still running after
    `--lp_termination_notice_secs` (10 s). If the launcher has not exited after
    `timeout_s`, the whole tree is killed. Returns how the stop went (`clean`: within
    `timeout_s`, with an exit status of `CLEAN_STOP_CODES`).
    """
    start = time.monotonic()
    try:
        process.send_signal(signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        returncode = process.wait(timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        returncode = None
    stop_s = time.monotonic() - start
    leftovers = tree.kill_leftovers()
    if timed_out:
        returncode = process.wait(10)
    return {"stop_s": round(stop_s, 2), "returncode": returncode, "timed_out": timed_out,
            "killed_leftovers": len(leftovers),
            "clean": not timed_out and returncode in CLEAN_STOP_CODES}


def tail_of(path: str, limit: int = 2000) -> str:
    """The last `limit` characters of a text file ('' if missing)."""
    try:
        with open(path, errors="replace") as text:
            return text.read()[-limit:]
    except OSError:
        return ""


# --------------------------------------------------------------------------- CSV logs


def node_csv(run_dir: str, node: str) -> str:
    """The CSV log of `node` ("trainer", "evaluator", "executor_0", ...) in a run directory."""
    return os.path.join(run_dir, "logs", node, "logs.csv")


def read_rows(path: str) -> List[Dict[str, str]]:
    """Every complete row of a CSV log ([] if it does not exist yet)."""
    try:
        with open(path, newline="") as csv_file:
            text = csv_file.read()
    except OSError:
        return []
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines = lines[:-1]  # A row still being written.
    return list(csv.DictReader(io.StringIO("".join(lines))))


def first_row(path: str) -> Optional[Dict[str, str]]:
    """The first complete data row of a CSV log, None if there is none yet."""
    try:
        with open(path, newline="") as csv_file:
            header, row = csv_file.readline(), csv_file.readline()
    except OSError:
        return None
    if not header.endswith("\n") or not row.endswith("\n"):
        return None
    return next(csv.DictReader(io.StringIO(header + row)), None)


def last_row(path: str, tail_bytes: int = 65536) -> Optional[Dict[str, str]]:
    """The last complete data row of a CSV log (reading only its end), None if there is none."""
    try:
        with open(path, "rb") as csv_file:
            raw_header = csv_file.readline()
            size = csv_file.seek(0, os.SEEK_END)
            start = max(len(raw_header), size - tail_bytes)
            csv_file.seek(start)
            lines = csv_file.read().decode(errors="replace").split("\n")
    except OSError:
        return None
    header = raw_header.decode(errors="replace")
    # lines[-1] is unfinished (or empty); lines[0] is partial unless reading began right after the header.
    complete = [line for line in lines[(0 if start == len(raw_header) else 1):-1] if line]
    if not header.endswith("\n") or not complete:
        return None
    return next(csv.DictReader(io.StringIO(header + complete[-1] + "\n")), None)


def count(row: Optional[Mapping[str, str]], key: str) -> int:
    """An integer column of a row (0 for a missing row or cell)."""
    if not row or not row.get(key):
        return 0
    return int(float(row[key]))
