"""Whole-program benchmark: MADQN on mpe/simple_spread_v3 as a Launchpad program.

    .venv/bin/python -m benchmarks.program [--repeats 3 --seconds 60]
    .venv/bin/python -m benchmarks.program --systems madqn,mappo --configs local_mp:1,local_mp:2
    .venv/bin/python -m benchmarks.program --configs local_mp:1,local_mp:2 --baseline ../base
    .venv/bin/python -m benchmarks.program --systems mappo --configs local_mp:1 \
        --flag=--env=lbf/Foraging-8x8-2p-2f-coop-v3 \
        --variant "B16=--num_envs_per_executor=16" \
        --variant "B16-reference=--num_envs_per_executor=16 --vectorised=false"
    .venv/bin/python -m benchmarks.program --systems mappo --recurrent mappo --configs local_mp:1

For each system (`--systems`, default MADQN; any with an examples/mpe/run_<system>.py)
and configuration (launch type x executors; default local_mt and local_mp
with 1 and 2 executors; `--configs ray:1,ray:2,...` adds the Ray launcher) examples/mpe/run_<system>.py runs as a subprocess with
--max_executor_steps=0 in a temporary run directory. From the moment the
trainer's CSV log gets its first row (the first trainer step) the program runs
--seconds more, and is then stopped as Ctrl-C would (SIGINT to the launcher);
whatever is left of its process tree afterwards is killed. Reported per
configuration (medians over repeats):

  executor_sps                    executor steps/s (all executors, as the central counter counts
                                  them) between the first trainer step and the trainer's last
                                  logged progress before the stop
  trainer_sps                     trainer steps/s over the same window
  peak_rss_mb                     peak of the summed RSS of the launcher and all its descendants
                                  (sampled every 0.5 s, launch to stop)
  peak_pss_mb                     the same for the proportional set size (shared pages divided
                                  among the processes that map them: comparable across launch
                                  types, and with original Mava's ~2.6 GB)
  seconds_to_first_trainer_step   from launch to the first trainer step's CSV row

Where the CPU went (`local_mp`): the CPU time of every process of the
program, from the first trainer step to the stop, summed per node group
(executor, trainer, replay, evaluator, counter, cacher, coordinator; the
launcher; node_output, Launchpad's per-node output prefixing), as CPU
milliseconds per executor step and cores busy (table "CPU account"), with the
share of the trainer's time its steps waited for sampled batches (its CSV's
`batch_wait_s`: the rate limiter or replay held them back) and the 1-minute
load average during the runs. `--baseline DIR` runs the same configurations
of another checkout (e.g. a worktree of an earlier commit) in turn with this
one's, for ratios measured side by side (`--baseline_flag` gives its runs their
own example flags, e.g. without a lever it lacks); each `--variant NAME=FLAGS` instead of
the plain run runs every configuration with FLAGS added to --flag's (e.g. environments per
executor, or their implementation: issue 45), keyed "NAME/<configuration>"; `--flag=--env=ID`
runs another environment than simple_spread_v3 (the last --env wins); `--max_executor_steps N` gives the
examples a step limit (adding the coordinator, and the executors' count at
every episode). `--recurrent mappo,qmix` also runs those systems' examples with
`--recurrent=true` (keyed "recurrent_<system>/..."), each beside its
feedforward run in the same turn, with the ratios of its figures to the
feedforward ones (the time to the first trainer step among them).

The counts come from the trainer's CSV rows, read each time the file grows
(see TrainerLog), so they do not depend on the program exiting cleanly.
Systems and configurations take turns within each repeat; the other systems'
figures are also given as ratios of MADQN's in the same configuration, when it
ran too. Results are keyed "<launch type>:<executors>" for MADQN (as before)
and "<system>/<launch type>:<executors>" for the others.
"""

import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

DEFAULT_CONFIGS = "local_mt:1,local_mt:2,local_mp:1,local_mp:2"
# `ray` runs the program on a local Ray started by the launcher (docs/cluster.md).
LAUNCH_TYPES = ("local_mt", "local_mp", "ray")
RAY_RECORD_FILE = "ray_nodes.json"  # mava_systems.ray_launch.RECORD_FILE, without importing Ray.
RSS_INTERVAL_S = 0.5
# Every this many memory samples also reads PSS (a kernel walk of every mapping of every node
# process: tens of milliseconds of CPU a sample for a Ray program's 17 processes).
PSS_EVERY_SAMPLES = 10
POLL_INTERVAL_S = 0.1
# Figures other systems also get as a ratio of MADQN's in the same configuration.
RATIO_FIGURES = ("executor_sps", "trainer_sps", "peak_pss_mb")
# The key prefix of the `--baseline` checkout's figures.
BASELINE_PREFIX = "baseline/"
# The name of a system's recurrent runs (`--recurrent`): its example with --recurrent=true.
RECURRENT_PREFIX = "recurrent_"
# Figures recurrent runs also get as a ratio of their feedforward system's.
RECURRENT_RATIO_FIGURES = (*RATIO_FIGURES, "seconds_to_first_trainer_step")


def example_system(name: str) -> Tuple[str, List[str]]:
    """The system whose example a run named `name` launches, and the flags the name adds:
    "recurrent_mappo" -> ("mappo", ["--recurrent=true"])."""
    if name.startswith(RECURRENT_PREFIX):
        return name[len(RECURRENT_PREFIX):], ["--recurrent=true"]
    return name, []


def parse_configs(text: str) -> List[Tuple[str, int]]:
    """"local_mt:1,local_mp:2" -> [("local_mt", 1), ("local_mp", 2)]."""
    configs = []
    for item in text.split(","):
        launch_type, _, executors = item.strip().partition(":")
        if launch_type not in LAUNCH_TYPES or not executors.isdigit() or int(executors) < 1:
            raise SystemExit(f"bad configuration {item!r}: expected "
                             f"<{'|'.join(LAUNCH_TYPES)}>:<executors>")
        configs.append((launch_type, int(executors)))
    return configs


def config_key(launch_type: str, executors: int, system: str = "madqn") -> str:
    """The results' key of a run: "local_mp:2" for MADQN, "mappo/local_mp:2" for others."""
    key = f"{launch_type}:{executors}"
    return key if system == "madqn" else f"{system}/{key}"


class TrainerLog:
    """Follows the trainer's CSV log: the counts of its latest row each time the file grows.

    The trainer's CSV logger writes (and flushes) its first row at the first
    trainer step, then a row at most once a second (`trainer_log_interval_s`),
    so each growth of the file shows the counts of that moment (to within the
    polling interval). Rates computed
    between such moments do not depend on the logs being complete when the
    program ends (a node that does not stop in time is killed, and its last
    rows are lost).
    """

    def __init__(self, path: str, executor_path: Optional[str] = None):
        self.path = path
        # (time, executor 0's latest `queue_wait_s`) at each record, where it logs one.
        self.executor_path = executor_path
        self.queue_waits: List[Tuple[float, float]] = []
        # (time, trainer_steps, executor_steps, batch_wait_s or None where not logged)
        self.records: List[Tuple[float, int, int, Optional[float]]] = []
        self.policy_lags: List[float] = []  # The rows' mean policy lag (trainer steps), as read.
        self._size = 0

    def poll(self, now: float) -> bool:
        """Records the latest row if the file grew; True on the first row."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return False
        if size == self._size:
            return False
        self._size = size
        # The first record is trainer step 1, flushed as soon as it was written.
        row = common.first_row(self.path) if not self.records else common.last_row(self.path)
        if row is None:
            return False
        record = (now, common.count(row, "trainer_steps"), common.count(row, "executor_steps"),
                  float(row["batch_wait_s"]) if row.get("batch_wait_s") else None)
        if self.records and record[1] == self.records[-1][1]:
            return False
        self.records.append(record)
        executor_row = common.last_row(self.executor_path) if self.executor_path else None
        if executor_row and executor_row.get("queue_wait_s"):
            self.queue_waits.append((now, float(executor_row["queue_wait_s"])))
        if row.get("policy_lag"):
            self.policy_lags.append(float(row["policy_lag"]))
        return len(self.records) == 1

    def record_at(self, moment: float) -> Tuple[float, int, int, Optional[float]]:
        """The first record at or after `moment` (the last one if none)."""
        return next((record for record in self.records if record[0] >= moment), self.records[-1])


def _ray_record(run_dir: str) -> Dict[str, Any]:
    """The Ray launcher's record of a run ({} if there is none, or none yet)."""
    try:
        with open(os.path.join(run_dir, RAY_RECORD_FILE)) as record_file:
            return json.load(record_file)
    except (OSError, ValueError):
        return {}


def served_calls(run_dir: str) -> Optional[Dict[str, Dict[str, int]]]:
    """{node: {method: calls}} the nodes of a Ray run served one another (None otherwise)."""
    return _ray_record(run_dir).get("served_calls")


def ray_node_pids(run_dir: str) -> Dict[int, str]:
    """{pid: node} of every incarnation of a Ray run's node actors ({} for other launchers)."""
    return {incarnation["pid"]: node
            for node, incarnations in (_ray_record(run_dir).get("nodes") or {}).items()
            for incarnation in incarnations if "pid" in incarnation}


def parse_variant(text: str) -> Tuple[str, List[str]]:
    """"B16=--num_envs_per_executor=16 --vectorised=false" -> ("B16/", [the two flags])."""
    name, sep, flags = text.partition("=")
    name = name.strip()
    if not sep or not name or "/" in name or not flags.split():
        raise SystemExit(f"bad variant {text!r}: expected NAME=FLAGS (NAME without '/')")
    return f"{name}/", flags.split()


def run_once(launch_type: str, executors: int, args: Any,
             cpu_tree: Optional[common.ProcessTree] = None, system: str = "madqn",
             root: str = common.ROOT, label: str = "",
             extra_flags: Sequence[str] = ()) -> Dict[str, Any]:
    """One run of system `system`'s MPE example (of the repository at `root`), with
    `extra_flags` after --flag's; its figures.

    `cpu_tree`: the processes whose CPU time the run is charged (default: the
    launcher's tree; a simulated Ray cluster's nodes live outside it).
    """
    key = label + config_key(launch_type, executors, system)
    run_dir = tempfile.mkdtemp(prefix=f"bench-program-{system}-{launch_type}-{executors}-")
    output_path = os.path.join(run_dir, "output.log")
    flags = args.flag
    if label == BASELINE_PREFIX and getattr(args, "baseline_flag", None) is not None:
        flags = args.baseline_flag
    flags = [*flags, *extra_flags]
    example, system_flags = example_system(system)
    command = common.example_command(
        os.path.join(run_dir, "run"), launch_type, args.max_executor_steps,
        [f"--num_executors={executors}", *system_flags, *flags], system_name=example, root=root)
    log = TrainerLog(common.node_csv(os.path.join(run_dir, "run"), "trainer"),
                     common.node_csv(os.path.join(run_dir, "run"), "executor_0"))
    launched = time.monotonic()
    process = common.start_example(command, output_path, root)
    tree = common.ProcessTree(process.pid)
    cpu_tree = cpu_tree or tree
    cpu_at_first_step: Optional[Tuple[float, float]] = None  # (time, CPU seconds)
    groups_at_first_step: Dict[str, float] = {}  # CPU seconds per node group
    load_averages: List[float] = []  # The 1-minute load average, every RSS_INTERVAL_S
    next_rss = launched
    memory_samples = 0
    error = None
    try:
        while True:
            now = time.monotonic()
            if now >= next_rss:
                tree.sample_memory(with_pss=memory_samples % PSS_EVERY_SAMPLES == 0)
                memory_samples += 1
                if log.records:
                    load_averages.append(os.getloadavg()[0])
                next_rss = now + RSS_INTERVAL_S
            if process.poll() is not None:
                error = f"the program exited by itself (code {process.returncode})"
                break
            if log.poll(now):
                cpu_at_first_step = (now, cpu_tree.cpu_seconds())
                groups_at_first_step = tree.cpu_by_group(
                    ray_node_pids(os.path.join(run_dir, "run")))
                common.progress(f"{key}: first trainer step {now - launched:.1f} s after launch")
            if not log.records and now - launched > args.startup_timeout:
                error = f"no trainer step within {args.startup_timeout:g} s of launch"
                break
            if log.records and now >= log.records[0][0] + args.seconds:
                break
            time.sleep(POLL_INTERVAL_S)
    finally:
        stopped_at = time.monotonic()
        cpu_at_stop = cpu_tree.cpu_seconds()
        groups_at_stop = tree.cpu_by_group(ray_node_pids(os.path.join(run_dir, "run")))
        stop = common.stop_example(process, tree, args.stop_timeout)
    result: Dict[str, Any] = {"stop": stop}
    if cpu_at_first_step is not None and stopped_at > cpu_at_first_step[0]:
        # CPU cores busy on average from the first trainer step to the stop.
        result["cpu_cores"] = (cpu_at_stop - cpu_at_first_step[1]) / (stopped_at -
                                                                      cpu_at_first_step[0])
        # Per node group: cores busy on average over the same window (a process that ended
        # meanwhile is missing from the stop's figures: not counted).
        result["group_cores"] = {
            group: max(0.0, seconds - groups_at_first_step.get(group, 0.0))
            / (stopped_at - cpu_at_first_step[0]) for group, seconds in groups_at_stop.items()}
    if load_averages:
        result["load_average"] = common.median(load_averages)
    if args.keep_run_dirs:
        result["run_dir"] = run_dir
    try:
        output = common.tail_of(output_path, 1_000_000)
        result["user_requested_termination"] = "User-requested termination" in output
        if not stop["clean"] or stop["killed_leftovers"]:
            result["output_tail"] = output[-2000:]
        if error is None and len(log.records) < 2:
            error = "the trainer's log did not grow after its first row"
        if error is not None:
            result["error"] = error
            result["output_tail"] = output[-2000:]
            common.progress(f"{key}: {error}\n{result['output_tail']}")
            return result
        (start, trainer_0, executor_0, wait_0), (end, trainer_1, executor_1, wait_1) = \
            log.records[0], log.records[-1]
        window = end - start
        if wait_0 is not None and wait_1 is not None:
            # The share of the trainer's time its steps waited for sampled batches.
            result["trainer_batch_wait_share"] = (wait_1 - wait_0) / window
        if log.policy_lags:
            result["trainer_policy_lag"] = common.median(log.policy_lags[1:] or log.policy_lags)
        if len(log.queue_waits) > 1:
            # The share of executor 0's time it waited on the full on-policy queue.
            (wait_start, queue_wait_0), (wait_end, queue_wait_1) = \
                log.queue_waits[0], log.queue_waits[-1]
            result["executor_queue_wait_share"] = (queue_wait_1 - queue_wait_0) / (
                wait_end - wait_start)
        result.update({
            "seconds_to_first_trainer_step": start - launched,
            "executor_sps": (executor_1 - executor_0) / window,
            "trainer_sps": (trainer_1 - trainer_0) / window,
            "peak_rss_mb": tree.peak_rss_bytes / 2 ** 20,
            "peak_pss_mb": tree.peak_pss_bytes / 2 ** 20,
            "max_processes": tree.max_processes,
            "window_s": window,
            # Since the trainer's last logged progress: large means it had stopped stepping.
            "trainer_idle_s_at_stop": stopped_at - end,
            "executor_steps": [executor_0, executor_1],
            "trainer_steps": [trainer_0, trainer_1],
        })
        result["served_calls"] = served_calls(os.path.join(run_dir, "run"))
        middle = log.record_at(start + args.seconds / 2)
        if middle[0] < end:
            result["trainer_sps_second_half"] = (trainer_1 - middle[1]) / (end - middle[0])
        return result
    finally:
        if not args.keep_run_dirs:
            shutil.rmtree(run_dir, ignore_errors=True)


# The node groups of the CPU account, in the order its table lists them.
ACCOUNT_GROUPS = ("executor", "trainer", "replay", "evaluator", "counter", "cacher",
                  "coordinator", "launcher", "node_output", "ray", "other")


def cpu_account(results: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Where a configuration's CPU went (medians over its good runs): per node group, CPU
    milliseconds per executor step (`ms_per_executor_step`) and cores busy (`cores`), with
    their totals under "total"."""
    good = [result for result in results
            if "error" not in result and result.get("group_cores") and result["executor_sps"]]
    groups = [group for group in ACCOUNT_GROUPS
              if any(group in result["group_cores"] for result in good)]
    account: Dict[str, Any] = {"ms_per_executor_step": {}, "cores": {}}
    for group in groups + ["total"]:
        cores = [sum(result["group_cores"].values()) if group == "total"
                 else result["group_cores"].get(group, 0.0) for result in good]
        account["cores"][group] = common.median(cores)
        account["ms_per_executor_step"][group] = common.median(
            [1000.0 * value / result["executor_sps"] for value, result in zip(cores, good)])
    return account


def print_cpu_account(figures: Mapping[str, Any]) -> None:
    """The CPU account of every configuration: ms of CPU per executor step, and cores, per
    node group."""
    keys = [key for key, entry in figures.items() if entry.get("cpu_account", {}).get("cores")]
    if not keys:
        return
    groups = [group for group in (*ACCOUNT_GROUPS, "total")
              if any(group in figures[key]["cpu_account"]["cores"] for key in keys)]
    rows = [(group, *[f"{common.fmt(figures[key]['cpu_account']['ms_per_executor_step'].get(group), 3)}"
                      f" ({common.fmt(figures[key]['cpu_account']['cores'].get(group), 2)})"
                      for key in keys]) for group in groups]
    rows.append(("trainer: share of its time waiting for batches", *[
        common.fmt(figures[key].get("trainer_batch_wait_share"), 2) for key in keys]))
    rows.append(("trainer: median policy lag of its logged batches (trainer steps)", *[
        common.fmt(figures[key].get("trainer_policy_lag"), 2) for key in keys]))
    rows.append(("executor 0: share of its time waiting on the full queue", *[
        common.fmt(figures[key].get("executor_queue_wait_share"), 2) for key in keys]))
    rows.append(("load average (1 min)", *[common.fmt(figures[key]["load_average"], 2)
                                           for key in keys]))
    common.print_table("CPU account: ms of CPU per executor step (cores busy), per node group, "
                       "from the first trainer step to the stop (median)", ["node group", *keys],
                       rows)


def print_recurrent_ratios(figures: Mapping[str, Any]) -> None:
    """Each recurrent run's figures as ratios of its feedforward system's in the same
    configuration and checkout, and issue 48's first-step target."""
    keys = [key for key, entry in figures.items()
            if entry.get("seconds_to_first_trainer_step_ratio_to_feedforward") is not None]
    if not keys:
        return
    common.print_table(
        "Recurrent against feedforward (same configuration and checkout, median)",
        ["configuration", "s to 1st trainer step", "of feedforward's", "executor steps/s of "
         "feedforward's", "trainer steps/s of feedforward's"],
        [(key, common.fmt(figures[key]["seconds_to_first_trainer_step"]),
          common.fmt(figures[key]["seconds_to_first_trainer_step_ratio_to_feedforward"], 2),
          common.fmt(figures[key]["executor_sps_ratio_to_feedforward"], 3),
          common.fmt(figures[key]["trainer_sps_ratio_to_feedforward"], 3)) for key in keys])
    for key in keys:
        first_step_ratio = figures[key]["seconds_to_first_trainer_step_ratio_to_feedforward"]
        print(f"Target ({key}): first trainer step within 2x the feedforward one's: "
              f"{'met' if first_step_ratio <= 2 else 'NOT met'} ({first_step_ratio:.2f}x)")


def add_run_arguments(parser: Any) -> None:
    """The arguments `run_once` reads besides --seconds: --flag, --startup_timeout, --stop_timeout,
    --keep_run_dirs."""
    parser.add_argument("--flag", action="append", default=[],
                        help="a flag passed on to the example, e.g. --flag=--batch_size=128 "
                             "(repeatable)")
    parser.add_argument("--startup_timeout", type=float, default=300.0,
                        help="seconds allowed from launch to the first trainer step (default 300)")
    parser.add_argument("--max_executor_steps", type=int, default=0,
                        help="the example's step limit (default 0: none); a limit the run does "
                             "not reach still adds the coordinator, and executors then count "
                             "every episode to the counter at once, as runs with a limit do")
    parser.add_argument("--stop_timeout", type=float, default=60.0,
                        help="seconds allowed for the program to stop after SIGINT before it is "
                             "killed (default 60)")
    parser.add_argument("--keep_run_dirs", action="store_true",
                        help="keep the temporary run directories (logs, output.log)")


def main() -> None:
    parser = common.make_parser(
        "program", __doc__.split("\n\n")[0], seconds=60.0,
        seconds_help="seconds each program runs after its first trainer step", warmup=None)
    parser.add_argument("--configs", default=DEFAULT_CONFIGS,
                        help=f"comma-separated <launch type>:<executors> (default {DEFAULT_CONFIGS})")
    parser.add_argument("--systems", default="madqn",
                        help="comma-separated systems whose examples/mpe/run_<system>.py runs "
                             "in each configuration, e.g. madqn,mappo (default madqn)")
    parser.add_argument("--recurrent", default="",
                        help="systems of --systems whose examples also run with --recurrent=true "
                             "(keyed recurrent_<system>), e.g. mappo,qmix, with ratios to the "
                             "feedforward runs")
    parser.add_argument("--baseline", default=None,
                        help="another checkout of the repository (e.g. a git worktree of an "
                             "earlier commit) whose examples run in turn with this one's, each "
                             "run of this tree followed by the same run of it; its figures are "
                             f"keyed \"{BASELINE_PREFIX}<configuration>\" and this tree's "
                             "are also given as ratios of them")
    parser.add_argument("--baseline_flag", action="append", default=None,
                        help="a flag for the --baseline checkout's runs instead of the --flag "
                             "ones (repeatable; e.g. a lever the baseline does not have: "
                             "--flag=--jit_compile=true --baseline_flag=--seed=0)")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=FLAGS: instead of the plain run, every configuration runs "
                             "with FLAGS (space-separated example flags after --flag's), keyed "
                             "\"NAME/<configuration>\" (repeatable; the variants take turns)")
    add_run_arguments(parser)
    args = common.check_args(parser.parse_args())
    if args.baseline_flag is not None and not args.baseline:
        raise SystemExit("--baseline_flag needs --baseline")
    variants: List[Tuple[str, str, List[str]]] = [("", common.ROOT, [])]
    if args.variant:
        variants = [(label, common.ROOT, flags)
                    for label, flags in map(parse_variant, args.variant)]
    if args.baseline:
        baseline = os.path.abspath(args.baseline)
        if not os.path.isdir(os.path.join(baseline, "mava_systems")):
            raise SystemExit(f"--baseline {args.baseline!r} is not a checkout of this repository")
        variants.append((BASELINE_PREFIX, baseline, []))
    configs = parse_configs(args.configs)
    systems = common.system_names(args.systems)
    if not systems:
        raise SystemExit("--systems names no system")
    for system in systems:
        common.mpe_example(system)  # Each has an example (else SystemExit naming those that do).
    recurrent = common.system_names(args.recurrent)
    if set(recurrent) - set(systems):
        raise SystemExit(f"--recurrent names systems not in --systems ({args.systems}): "
                         f"{', '.join(sorted(set(recurrent) - set(systems)))}")
    # Each recurrent run right after its feedforward one, in the same turn.
    systems = [name for system in systems for name in
               [system, *([RECURRENT_PREFIX + system] if system in recurrent else [])]]

    runs: Dict[str, List[Dict[str, Any]]] = {
        label + config_key(*config, system): [] for config in configs for system in systems
        for label, _, _ in variants}
    common.progress(f"{len(runs)} runs (systems x configurations) x {args.repeats} repeats, each "
                    f"about start-up + {args.seconds:g} s + stop")
    for repeat in range(args.repeats):
        for (launch_type, executors), system, (label, root, extra_flags) in itertools.product(
                configs, systems, variants):
            key = label + config_key(launch_type, executors, system)
            result = run_once(launch_type, executors, args, system=system, root=root,
                              label=label, extra_flags=extra_flags)
            runs[key].append(result)
            common.progress(
                f"repeat {repeat + 1}/{args.repeats}  {key}: "
                + ("FAILED: " + result["error"] if "error" in result else
                   f"executor {result['executor_sps']:,.1f}/s, trainer {result['trainer_sps']:,.1f}/s, "
                   f"peak RSS {result['peak_rss_mb']:,.0f} MB, PSS {result['peak_pss_mb']:,.0f} MB, "
                   f"first trainer step after "
                   f"{result['seconds_to_first_trainer_step']:.1f} s")
                + f"; stopped in {result['stop']['stop_s']} s (exit code "
                  f"{result['stop']['returncode']}, {result['stop']['killed_leftovers']} left "
                  "over and killed)")

    figures: Dict[str, Any] = {}
    rows = []
    for key, results in runs.items():
        good = [result for result in results if "error" not in result]
        entry = {name: common.median([result[name] for result in good])
                 for name in ("executor_sps", "trainer_sps", "peak_rss_mb", "peak_pss_mb",
                              "seconds_to_first_trainer_step", "trainer_idle_s_at_stop")}
        entry["cpu_account"] = cpu_account(results)
        # Whole-program CPU per executor step: steadier than rates on a busy machine.
        entry["executor_cpu_ms"] = entry["cpu_account"]["ms_per_executor_step"].get("total")
        entry["load_average"] = common.median([result.get("load_average") for result in results])
        entry["trainer_batch_wait_share"] = common.median(
            [result.get("trainer_batch_wait_share") for result in good])
        entry["trainer_policy_lag"] = common.median(
            [result.get("trainer_policy_lag") for result in good])
        entry["executor_queue_wait_share"] = common.median(
            [result.get("executor_queue_wait_share") for result in good])
        entry["unclean_stops"] = sum(not result["stop"]["clean"] for result in results)
        entry["failed_runs"] = len(results) - len(good)
        entry["runs"] = results
        figures[key] = entry
    for (launch_type, executors), system, (label, _, _) in itertools.product(
            configs, systems, variants):
        entry = figures[label + config_key(launch_type, executors, system)]
        madqn_entry = figures.get(label + config_key(launch_type, executors))
        if system != "madqn" and madqn_entry is not None:
            entry.update({f"{name}_ratio_to_madqn": common.ratio(entry[name], madqn_entry[name])
                          for name in RATIO_FIGURES})
        feedforward_entry = figures.get(label + config_key(launch_type, executors,
                                                           example_system(system)[0]))
        if system.startswith(RECURRENT_PREFIX) and feedforward_entry is not None:
            entry.update({f"{name}_ratio_to_feedforward": common.ratio(entry[name],
                                                                       feedforward_entry[name])
                          for name in RECURRENT_RATIO_FIGURES})
        baseline_entry = figures.get(BASELINE_PREFIX + config_key(launch_type, executors, system))
        if not label and baseline_entry is not None:
            entry.update({f"{name}_ratio_to_baseline": common.ratio(entry[name],
                                                                    baseline_entry[name])
                          for name in (*RATIO_FIGURES, "executor_cpu_ms")})
    for key, entry in figures.items():
        good_runs = len(entry["runs"]) - entry["failed_runs"]
        rows.append((key, common.fmt(entry["executor_sps"]),
                     common.fmt(entry.get("executor_sps_ratio_to_madqn"), 3),
                     common.fmt(entry.get("executor_sps_ratio_to_baseline"), 3),
                     common.fmt(entry["trainer_sps"]),
                     common.fmt(entry.get("trainer_sps_ratio_to_baseline"), 3),
                     common.fmt(entry["executor_cpu_ms"], 3),
                     common.fmt(entry["cpu_account"]["cores"].get("total"), 2),
                     common.fmt(entry["peak_rss_mb"], 0), common.fmt(entry["peak_pss_mb"], 0),
                     common.fmt(entry["seconds_to_first_trainer_step"]),
                     common.fmt(entry["trainer_idle_s_at_stop"]),
                     f"{good_runs}/{len(entry['runs'])}", entry["unclean_stops"]))
    environment = next((flag.partition("=")[2] for flag in reversed(args.flag)
                        if flag.startswith("--env=")), common.ENV_NAME)
    common.print_table(
        f"Whole program: {', '.join(name.upper() for name in systems)} on {environment}, "
        f"{args.seconds:g} s from the first trainer step (median of {args.repeats})",
        ["configuration", "executor steps/s", "of MADQN's", "of baseline's", "trainer steps/s",
         "of baseline's", "CPU ms per executor step", "cores", "peak RSS MB",
         "peak PSS MB", "s to 1st trainer step", "trainer idle at stop s", "ok runs",
         "unclean stops"], rows)
    print_cpu_account(figures)
    print_recurrent_ratios(figures)
    if any(entry["unclean_stops"] for entry in figures.values()):
        print("unclean stops: runs whose launcher did not exit with code 0 after SIGINT (e.g. "
              "Launchpad killed nodes that did not stop within 10 s); see runs[].output_tail")
    for key, entry in figures.items():  # MADQN's target (issue 5).
        if "/" not in key.replace(BASELINE_PREFIX, "", 1) and key.endswith(":2") and entry["executor_sps"] is not None:
            ok = entry["executor_sps"] >= 400 and (entry["trainer_sps"] or 0) > 0
            print(f"Target ({key}): >= 400-600 executor steps/s while the trainer steps: "
                  f"{'met' if ok else 'NOT met'} ({common.fmt(entry['executor_sps'])} executor, "
                  f"{common.fmt(entry['trainer_sps'])} trainer steps/s)")
    common.emit(args, figures, {"benchmark": "program", "env": environment,
                                "systems": systems, "example_flags": args.flag,
                                "variants": args.variant,
                                "baseline": args.baseline,
                                "baseline_flags": (args.flag if args.baseline_flag is None
                                                   else args.baseline_flag)})


if __name__ == "__main__":
    main()
