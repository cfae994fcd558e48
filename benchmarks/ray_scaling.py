"""Scaling on a simulated Ray cluster: MADQN on mpe/simple_spread_v3 with 1, 2, 4 and 8 executors.

    .venv/bin/python -m benchmarks.ray_scaling [--executors 1,2,4,8 --seconds 60 --repeats 1]

Starts a 3-node `ray.cluster_utils.Cluster` on 127.0.0.1 (nodes `host_a`,
`host_b`, `host_c`; the trainer pinned to host_a, executors spread by the
launcher) and runs examples/mpe/run_madqn.py on it with --ray_address for each
executor count, measured as `benchmarks.program` measures a run. Then it times
one call between two nodes of the same cluster (`benchmarks.ray_calls`).

All simulated nodes share this machine's cores, so executor steps/s cannot grow
past what its cores give; what the benchmark shows is the cost of each added
executor. Reported per executor count (medians over repeats):

  executor_sps, trainer_sps      steps/s, as in benchmarks.program
  cpu_cores                      CPU cores busy on average (the cluster's processes and the
                                 launcher's) from the first trainer step to the stop
  executor_steps_per_core_s      executor steps per CPU core-second: it stays flat while an
                                 added executor costs only its own work
  calls_per_1k_steps             calls the nodes served one another per 1,000 executor steps
                                 (from ray_nodes.json), by node and method
  rpc_ms_per_step                those calls' cost per executor step: variable fetches at the
                                 measured get_variables cost, every other call at the measured
                                 cost of a call without payload
"""

import os
import sys
from typing import Any, Dict, List, Optional

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402
from benchmarks import program  # noqa: E402

LOOPBACK = "127.0.0.1"
HOSTS = ("host_a", "host_b", "host_c")
DEFAULT_EXECUTORS = "1,2,4,8"
FETCH_METHOD = "get_variables"
CALLS_FOR_COST = 300


def parse_executor_counts(text: str) -> List[int]:
    """"1,2,4" -> [1, 2, 4]; every count at least 1."""
    counts = []
    for item in text.split(","):
        if not item.strip().isdigit() or int(item) < 1:
            raise SystemExit(f"--executors: {item!r} is not a count of at least 1")
        counts.append(int(item))
    return counts


def start_cluster() -> Any:
    """A 3-node Ray cluster on 127.0.0.1, each node with 1 CPU and its own `host_*` resource."""
    os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    from ray import cluster_utils  # pylint: disable=g-import-not-at-top

    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args=dict(
        node_ip_address=LOOPBACK, num_cpus=1, resources={HOSTS[0]: 10}, include_dashboard=False))
    for host in HOSTS[1:]:
        cluster.add_node(node_ip_address=LOOPBACK, num_cpus=1, resources={host: 10})
    cluster.wait_for_nodes()
    return cluster


def rpc_figures(result: Dict[str, Any], call_ms: Dict[str, float]) -> Dict[str, Any]:
    """Calls per 1,000 executor steps by `node.method`, and their milliseconds per executor step."""
    steps = result["executor_steps"][1]  # Calls are counted from the start, so are the steps.
    served = result.get("served_calls") or {}
    if not steps or not served:
        return {"calls_per_1k_steps": None, "rpc_ms_per_step": None}
    per_1k, milliseconds = {}, 0.0
    for node, methods in sorted(served.items()):
        for method, calls in sorted(methods.items()):
            per_1k[f"{node}.{method}"] = calls / steps * 1000
            cost = call_ms[FETCH_METHOD] if method == FETCH_METHOD else call_ms["ping"]
            milliseconds += calls * cost
    return {"calls_per_1k_steps": per_1k, "rpc_ms_per_step": milliseconds / steps}


def measure_call_cost(address: str) -> Dict[str, float]:
    """Milliseconds per call between two nodes of the cluster at `address`."""
    from absl import flags  # pylint: disable=g-import-not-at-top
    from benchmarks import ray_calls  # pylint: disable=g-import-not-at-top  (imports Ray, TF)

    flags.FLAGS.mark_as_parsed()
    return ray_calls.measure("ray", CALLS_FOR_COST, ray_address=address)


def median_entry(results: List[Dict[str, Any]]) -> Dict[str, Optional[float]]:
    """The medians of one executor count's good runs."""
    good = [result for result in results if "error" not in result]
    entry = {name: common.median([result.get(name) for result in good])
             for name in ("executor_sps", "trainer_sps", "cpu_cores", "rpc_ms_per_step",
                          "seconds_to_first_trainer_step")}
    cores = entry["cpu_cores"]
    entry["executor_steps_per_core_s"] = (entry["executor_sps"] / cores
                                          if cores and entry["executor_sps"] else None)
    entry["failed_runs"] = len(results) - len(good)
    return entry


def main() -> None:
    parser = common.make_parser(
        "ray_scaling", __doc__.split("\n\n")[0], seconds=60.0, repeats=1,
        seconds_help="seconds each program runs after its first trainer step", warmup=None)
    parser.add_argument("--executors", default=DEFAULT_EXECUTORS,
                        help=f"comma-separated executor counts (default {DEFAULT_EXECUTORS})")
    program.add_run_arguments(parser)
    # Up to 8 executors and the cluster share a small machine: start-up and stop take longer
    # (the launcher writes ray_nodes.json, with the calls served, only after a clean stop).
    parser.set_defaults(startup_timeout=900.0, stop_timeout=240.0)
    args = common.check_args(parser.parse_args())
    counts = parse_executor_counts(args.executors)

    common.progress("starting a simulated 3-node Ray cluster on 127.0.0.1")
    cluster = start_cluster()
    # The cluster's processes are this process's descendants, like the launcher's.
    cpu_tree = common.ProcessTree(os.getpid())
    args.flag = [f"--ray_address={cluster.address}", f"--ray_group_resources=trainer:{HOSTS[0]}=1",
                 *args.flag]
    runs: Dict[int, List[Dict[str, Any]]] = {count: [] for count in counts}
    try:
        for repeat in range(args.repeats):
            for count in counts:
                result = program.run_once("ray", count, args, cpu_tree=cpu_tree)
                runs[count].append(result)
                common.progress(
                    f"repeat {repeat + 1}/{args.repeats}  {count} executor(s): "
                    + (f"FAILED: {result['error']}" if "error" in result else
                       f"executor {result['executor_sps']:,.1f}/s, trainer "
                       f"{result['trainer_sps']:,.1f}/s, {result.get('cpu_cores', 0):.2f} cores"))
        call_ms = measure_call_cost(cluster.address)
    finally:
        cluster.shutdown()

    figures: Dict[str, Any] = {"call_ms": call_ms}
    rows = []
    for count, results in runs.items():
        for result in results:
            if "error" not in result:
                result.update(rpc_figures(result, call_ms))
        entry = median_entry(results)
        entry["runs"] = results
        figures[str(count)] = entry
        rows.append((count, common.fmt(entry["executor_sps"]), common.fmt(entry["trainer_sps"]),
                     common.fmt(entry["cpu_cores"], 2), common.fmt(entry["executor_steps_per_core_s"]),
                     common.fmt(entry["rpc_ms_per_step"], 4),
                     common.fmt(entry["seconds_to_first_trainer_step"]),
                     f"{len(results) - entry['failed_runs']}/{len(results)}"))
    common.print_table(
        f"MADQN on {common.ENV_NAME} on a simulated 3-node Ray cluster (this machine's "
        f"{os.cpu_count()} cores), {args.seconds:g} s from the first trainer step "
        f"(median of {args.repeats})",
        ["executors", "executor steps/s", "trainer steps/s", "CPU cores busy",
         "executor steps per core-s", "RPC ms per executor step", "s to 1st trainer step", "ok runs"], rows)
    print(f"one call between nodes: {call_ms['ping']:.3f} ms without payload, "
          f"{call_ms[FETCH_METHOD]:.3f} ms for a ~98 KB variable fetch")
    for count, results in runs.items():
        good = [result for result in results if result.get("calls_per_1k_steps")]
        if good:
            calls = ", ".join(f"{name} {value:.2f}"
                              for name, value in good[-1]["calls_per_1k_steps"].items())
            print(f"calls per 1,000 executor steps with {count} executor(s): {calls}")
    common.emit(args, figures, {"benchmark": "ray_scaling", "env": common.ENV_NAME,
                                "example_flags": args.flag})


if __name__ == "__main__":
    main()
