"""Launches a Launchpad program on Ray: one actor per node, restarts, a clean stop.

The driver (this process) creates a controller actor and one threaded named
actor per node ("<group>/<index>"), then watches them: a node that dies or
fails is restarted by Ray and runs again from its checkpoints; when the replay
restarts (on a new address), the nodes that write to or sample from it are
restarted too, so they reconnect; a node restarted more than `max_restarts`
times stops the run with an error. When a node calls `lp.stop()` (or on
Ctrl-C) every node is told to stop, given `termination_notice_s` to finish,
and then every actor is ended, and the local Ray if the launch started one.
SIGTERM and SIGQUIT stop it as Ctrl-C does, as under Launchpad's local launchers.
"""

import contextlib
import json
import os
import signal
import sys
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set

from absl import logging
import launchpad as lp
from launchpad.nodes.python import node as lp_python
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from mava_systems.launching import cpu_placement
from mava_systems.launching.node_naming import named_nodes
from mava_systems.ray_launch import RECORD_FILE
from mava_systems.ray_launch.actors import CONTROLLER_NAME, Controller, NodeActor, NodeSpec
from mava_systems.ray_launch.config import BUILT_IN_RESOURCES, RayLaunchConfig
from mava_systems.ray_launch.proxies import CourierRef, NodeRef, ReverbRef, substitute_handles

# Calls between nodes run in an actor's threads: a node serves this many at once.
MAX_CONCURRENCY = 16
# Nodes not placed within this many seconds (e.g. no cluster node has the resources they ask
# for) stop the launch with an error.
PLACEMENT_TIMEOUT_S = 300.0
POLL_INTERVAL_S = 0.25
# Longest wait for news from the controller (it answers at once when a node (re)starts or a stop
# is asked for): between news the launcher only re-checks the placement deadline.
WATCH_INTERVAL_S = 2.0
# The CPU share a node of a spread group asks for when its group asks for no resources.
PLACEMENT_TOKEN_CPU = 0.0001
# What a local Ray needs to stay on 127.0.0.1 and keep to itself. Ray pre-starts a worker per
# core for the first driver; node actors carry the launch's runtime environment, so they never
# use those, which would idle through the run (0.017 cores between them, on the shared cores).
LOCAL_RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
                 "RAY_prestart_worker_first_driver": "0"}
# Settings of the launching process every node gets too.
FORWARDED_ENV = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_CPP_MIN_LOG_LEVEL",
                 "SDL_VIDEODRIVER", "PYGAME_HIDE_SUPPORT_PROMPT")
LOOPBACK = "127.0.0.1"


class RayLaunchError(RuntimeError):
    """The program could not run to its end on Ray (a node kept failing, or could not be placed)."""


def node_specs(program: lp.Program, namespace: str) -> List[NodeSpec]:
    """One `NodeSpec` per node of `program`, its handles replaced by references to actors.

    Raises:
      ValueError: if the program has a node the Ray launcher cannot run.
    """
    named = list(named_nodes(program))
    refs: Dict[int, NodeRef] = {}
    for name, _, node in named:
        if isinstance(node, lp.ReverbNode):
            refs[id(node.reverb_address)] = ReverbRef(name, namespace)
        elif isinstance(node, lp.CourierNode):
            refs[id(node.courier_address)] = CourierRef(name, namespace)
        elif not isinstance(node, lp_python.PyClassNode) or node.addresses:
            raise ValueError(f"the Ray launcher runs Courier, Reverb and Python-class nodes; "
                             f"node {name} is a {type(node).__name__}")
    specs = []
    for name, group, node in named:
        uses = [refs[id(getattr(handle, "_address", None))] for handle in node.input_handles
                if id(getattr(handle, "_address", None)) in refs]
        spec = NodeSpec(
            name=name, group=group, uses=sorted({ref.name for ref in uses}),
            uses_reverb=sorted({ref.name for ref in uses if isinstance(ref, ReverbRef)}))
        if isinstance(node, lp.ReverbNode):
            spec.reverb_node = node
        else:
            # pylint: disable=protected-access
            spec.constructor = node._constructor
            spec.args, spec.kwargs = substitute_handles((node._args, node._kwargs), refs)
            spec.should_run = node._should_run
        specs.append(spec)
    return specs


def _runtime_env(config: RayLaunchConfig) -> Dict[str, Any]:
    runtime_env = dict(config.runtime_env)
    env_vars = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    if config.address is None or _is_loopback(config.address):
        # Ray on this machine: nodes import what this process can (as local_mp's would).
        env_vars["PYTHONPATH"] = os.pathsep.join(
            [path for path in sys.path if path and os.path.isdir(path)]
            + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        if os.environ.get("LD_PRELOAD"):  # The allocator (mava_systems.launching.allocator): a path here.
            env_vars["LD_PRELOAD"] = os.environ["LD_PRELOAD"]
    env_vars.update(runtime_env.get("env_vars", {}))
    runtime_env["env_vars"] = env_vars
    return runtime_env


def _is_loopback(address: Optional[str]) -> bool:
    return address is not None and address.split(":")[0] in (LOOPBACK, "localhost")


@contextlib.contextmanager
def ray_session(config: RayLaunchConfig, namespace: str,
                ray_cpus: Optional[Sequence[int]] = None) -> Iterator[None]:
    """Connects to `config.address`, or starts a local Ray on 127.0.0.1 (its processes on
    `ray_cpus`, if given); shuts down at the end."""
    if ray.is_initialized():
        raise RuntimeError("Ray is already initialized in this process; the Ray launcher "
                           "connects by itself (pass the cluster's address instead)")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    runtime_env = _runtime_env(config)
    kwargs: Dict[str, Any] = dict(namespace=namespace, runtime_env=runtime_env,
                                  log_to_driver=True)
    if config.address is None:
        if ray_cpus and "worker_process_setup_hook" not in runtime_env:
            # Workers start from Ray's processes, on their cores: each moves to every core of
            # the launch before it imports its node's code (NodeActor then places it).
            runtime_env["env_vars"][cpu_placement.START_CPUS_ENV] = ",".join(
                str(cpu) for cpu in sorted(os.sched_getaffinity(0)))
            runtime_env["worker_process_setup_hook"] = cpu_placement.START_HOOK
        os.environ.update(LOCAL_RAY_ENV)
        with cpu_placement.process_placed(ray_cpus):  # Ray's processes start from this one.
            ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False,
                     num_cpus=config.num_cpus, **kwargs)
    else:
        if _is_loopback(config.address):
            kwargs["_node_ip_address"] = LOOPBACK
        ray.init(address=config.address, **kwargs)
    try:
        yield
    finally:
        ray.shutdown()


STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGQUIT: "SIGQUIT"}


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[List[str]]:
    """Within it, a stop signal raises KeyboardInterrupt in the main thread (restored afterwards).

    Yields the list the names of the signals received are appended to (Ray's
    calls may re-raise the interrupt as a plain KeyboardInterrupt). Installed
    explicitly, as Launchpad's launchers do: a process started in the
    background inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt; SIGTERM would otherwise end the launcher without
    stopping the nodes.
    """
    received: List[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def raise_interrupt(signum: int, frame: Any) -> None:
        del frame
        received.append(STOP_SIGNALS[signum])
        raise KeyboardInterrupt(STOP_SIGNALS[signum])

    previous = {signum: signal.signal(signum, raise_interrupt) for signum in STOP_SIGNALS}
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def asked_resources(options: Dict[str, Any]) -> Dict[str, float]:
    """{Ray resource name: amount} that actor `options` ask for (zero amounts left out)."""
    asked = dict(options.get("resources", {}))
    for resource, option in BUILT_IN_RESOURCES.items():
        if options.get(option):
            asked[resource] = options[option]
    return asked


def spread_strategy(cluster_nodes: List[Dict[str, Any]], options: Dict[str, Any],
                    index: int) -> Optional[NodeAffinitySchedulingStrategy]:
    """Where the `index`-th node of a group goes: the cluster nodes able to host it, in turn.

    Ray's "SPREAD" strategy is best effort (three executors asking for no
    resources, ours by default, often all landed on one node); so the group's
    nodes are dealt over the alive cluster nodes having every resource they
    ask for, in node ID order. The affinity is soft: a node that cannot take
    the actor (or, at a restart, has gone) lets Ray place it elsewhere. None
    when no cluster node has the resources (the launch then reports the node
    as unplaced).
    """
    asked = asked_resources(options)
    able = sorted(node["NodeID"] for node in cluster_nodes if node.get("Alive") and all(
        node.get("Resources", {}).get(resource, 0) >= amount
        for resource, amount in asked.items()))
    if not able:
        return None
    return NodeAffinitySchedulingStrategy(node_id=able[index % len(able)], soft=True)


class _Launch:
    """The actors of one launch, watched until the program stops."""

    def __init__(self, specs: List[NodeSpec], config: RayLaunchConfig, namespace: str,
                 record_dir: Optional[str]):
        self._specs = {spec.name: spec for spec in specs}
        self._config = config
        self._namespace = namespace
        self._record_path = os.path.join(record_dir, RECORD_FILE) if record_dir else None
        self._controller: Any = None
        self._actors: Dict[str, Any] = {}
        self._pending: Dict[Any, str] = {}  # wait_done reference -> node
        self._finished: Set[str] = set()
        self._incarnations: Dict[str, int] = {name: 0 for name in self._specs}
        self._restarts: Dict[str, int] = {name: 0 for name in self._specs}
        self._forced: Dict[str, int] = {name: 0 for name in self._specs}
        self._nodes: Dict[str, List[Dict[str, Any]]] = {}
        self._served_calls: Dict[str, Dict[str, int]] = {}
        # The controller's state as last heard (see `Controller.wait_for_change`), and the
        # outstanding call waiting for its next change.
        self._controller_version = -1
        self._stop_requested_by: Optional[str] = None
        self._change: Any = None

    def start(self) -> None:
        """Creates the controller and every node's actor."""
        self._controller = ray.remote(Controller).options(
            name=CONTROLLER_NAME, namespace=self._namespace, num_cpus=0,
            max_concurrency=MAX_CONCURRENCY).remote()
        ray.get(self._controller.nodes.remote())
        actor_class = ray.remote(NodeActor)
        group_sizes: Dict[str, int] = {}
        for spec in self._specs.values():
            group_sizes[spec.group] = group_sizes.get(spec.group, 0) + 1
        placed_in_group: Dict[str, int] = {}
        cluster_nodes = ray.nodes()
        for name, spec in self._specs.items():
            options = self._config.actor_options(spec.group)
            if group_sizes[spec.group] > 1:  # e.g. executors, dealt over the nodes in turn
                index = placed_in_group.get(spec.group, 0)
                placed_in_group[spec.group] = index + 1
                strategy = spread_strategy(cluster_nodes, options, index)
                if strategy is not None:
                    options["scheduling_strategy"] = strategy
                    if not asked_resources(options):
                        # Ray places an actor asking for nothing on a random node, whatever
                        # its strategy: asking for a token of CPU makes it keep to it.
                        options["num_cpus"] = PLACEMENT_TOKEN_CPU
            self._actors[name] = actor_class.options(
                name=name, namespace=self._namespace, max_concurrency=MAX_CONCURRENCY,
                max_restarts=-1, max_task_retries=0, **options,
            ).remote(spec, self._namespace, sys.argv)
            # Fails at once if the actor cannot even be made (e.g. the node's code is missing).
            self._pending[self._actors[name].wait_done.remote()] = name

    def watch(self) -> Optional[str]:
        """Watches the nodes until the program stops; returns why it failed, or None."""
        started = time.monotonic()
        while True:
            changed = self._wait_for_news()
            failure = self._collect_finished(timeout_s=0.0) or self._follow_restarts(changed)
            if failure:
                return failure
            unplaced = [name for name, count in self._incarnations.items() if not count]
            if unplaced and time.monotonic() - started > PLACEMENT_TIMEOUT_S:
                asked = {name: self._config.actor_options(self._specs[name].group)
                         for name in unplaced}
                return (f"nodes {unplaced} were not placed within {PLACEMENT_TIMEOUT_S:.0f} s: "
                        f"does a cluster node have the resources they ask for ({asked})?")
            stopped_by = self._stop_requested_by
            if stopped_by:
                print(f"Ray launcher: {stopped_by} stopped the program", flush=True)
                return None
            if len(self._finished) == len(self._specs):
                return None

    def _wait_for_news(self) -> bool:
        """Waits up to `WATCH_INTERVAL_S` for a node's `run()` to return or for a node to
        (re)start or ask for the stop; whether the latter happened (the stop request noted)."""
        if self._change is None:
            self._change = self._controller.wait_for_change.remote(self._controller_version,
                                                                   WATCH_INTERVAL_S)
        ready, _ = ray.wait([*self._pending, self._change], num_returns=1,
                            timeout=WATCH_INTERVAL_S + 5.0)
        if self._change not in ready:
            return False
        version, self._stop_requested_by = ray.get(self._change)
        self._change = None
        changed = version != self._controller_version
        self._controller_version = version
        return changed

    def _collect_finished(self, timeout_s: float = POLL_INTERVAL_S) -> Optional[str]:
        """Notes the nodes whose `run()` returned (waiting up to `timeout_s` for them); says
        why, if an actor could not be made."""
        if not self._pending:
            time.sleep(timeout_s)
            return None
        ready, _ = ray.wait(list(self._pending), num_returns=len(self._pending),
                            timeout=timeout_s)
        for reference in ready:
            name = self._pending.pop(reference)
            try:
                ray.get(reference)
                self._finished.add(name)
            except ray.exceptions.RayActorError as error:
                if error.actor_init_failed:
                    return f"node {name} could not be started: {error}"
                # Otherwise it died and restarts: `_follow_restarts` sees its next incarnation.
        return None

    def _follow_restarts(self, controller_changed: bool) -> Optional[str]:
        """Follows the nodes (re)started since the last call (if the controller's state
        changed since)."""
        if not controller_changed:
            return None
        self._nodes = ray.get(self._controller.nodes.remote())
        changed = False
        for name, incarnations in self._nodes.items():
            count, known = len(incarnations), self._incarnations[name]
            if count == known:
                continue
            changed = True
            self._incarnations[name] = count
            if not known:
                continue
            self._finished.discard(name)
            self._pending[self._actors[name].wait_done.remote()] = name
            restarts = count - known
            forced = min(restarts, self._forced[name])
            self._forced[name] -= forced
            self._restarts[name] += restarts - forced
            logging.warning("Ray launcher: %s restarted (incarnation %d, on %s)", name, count,
                            incarnations[-1].get("ip"))
            print(f"Ray launcher: {name} restarted (incarnation {count})", flush=True)
            if self._restarts[name] > self._config.max_restarts:
                # Ray restarts a dead actor at once; keep it down while the others stop.
                ray.kill(self._actors[name], no_restart=True)
                return self._too_many_restarts(name)
            if self._specs[name].reverb_node is not None:
                self._restart_users_of(name)
        if changed:
            self.write_record()
        return None

    def _too_many_restarts(self, name: str) -> str:
        failures = [failure for failure in ray.get(self._controller.failures.remote())
                    if failure["node"] == name]
        last_error = failures[-1]["error"].strip().splitlines()[-1] if failures else \
            "its process died"
        return (f"node {name} died or failed {self._restarts[name]} time(s), more than "
                f"--ray_max_restarts={self._config.max_restarts} allows; its last failure: "
                f"{last_error}")

    def _restart_users_of(self, replay: str) -> None:
        """Restarts the nodes that hold a client of `replay`, so they reach its new address."""
        for name, spec in self._specs.items():
            if replay in spec.uses_reverb:
                print(f"Ray launcher: restarting {name} to reconnect to {replay}", flush=True)
                self._forced[name] += 1
                ray.kill(self._actors[name], no_restart=False)

    def stop(self) -> None:
        """Tells every node to stop and waits up to `termination_notice_s` for them to finish."""
        for name, actor in self._actors.items():
            try:
                actor.stop.remote()
            except Exception as error:  # pylint: disable=broad-except
                logging.warning("Could not stop %s: %s", name, error)
        for name in set(self._specs) - self._finished - set(self._pending.values()):
            self._pending[self._actors[name].wait_done.remote()] = name
        deadline = time.monotonic() + self._config.termination_notice_s
        while self._pending and time.monotonic() < deadline:
            self._collect_finished()
        if self._pending:
            print(f"Ray launcher: nodes that did not stop within "
                  f"{self._config.termination_notice_s:.0f} s, killed: "
                  f"{sorted(self._pending.values())}", flush=True)

    def end(self) -> None:
        """Ends every actor (the replay last) and writes the final record."""
        self._collect_served_calls()
        try:
            self._nodes = ray.get(self._controller.nodes.remote(), timeout=10)
            self.write_record()
        except Exception as error:  # pylint: disable=broad-except
            logging.warning("Could not read the nodes' record: %s", error)
        order = sorted(self._actors, key=lambda name: self._specs[name].reverb_node is not None)
        for name in order:
            ray.kill(self._actors[name], no_restart=True)
        if self._controller is not None:
            ray.kill(self._controller, no_restart=True)

    def _collect_served_calls(self) -> None:
        """Asks every node (still alive after the stop) how many calls it served."""
        references = {name: actor.served_calls.remote() for name, actor in self._actors.items()
                      if self._specs[name].reverb_node is None}
        for name, reference in references.items():
            try:
                self._served_calls[name] = ray.get(reference, timeout=10)
            except Exception as error:  # pylint: disable=broad-except
                logging.warning("Could not ask %s for its served calls: %s", name, error)

    def write_record(self) -> None:
        """Writes where every node runs (and ran) to `<run_dir>/ray_nodes.json`."""
        if not self._record_path:
            return
        record = {
            "namespace": self._namespace,
            "cluster_nodes": [{"node_id": node["NodeID"], "ip": node["NodeManagerAddress"],
                               "alive": node["Alive"], "resources": node["Resources"]}
                              for node in ray.nodes()],
            "nodes": self._nodes,
            "restarts": self._restarts,
            # {node: {method: calls}} served by each node's last incarnation (at the end).
            "served_calls": self._served_calls,
        }
        os.makedirs(os.path.dirname(self._record_path), exist_ok=True)
        with open(self._record_path + ".tmp", "w") as record_file:
            json.dump(record, record_file, indent=1, default=str)
        os.replace(self._record_path + ".tmp", self._record_path)


def launch(program: lp.Program, config: Optional[RayLaunchConfig] = None,
           record_dir: Optional[str] = None, cpu_placement_mode: str = "none") -> None:
    """Runs `program` on Ray until it stops, then ends every actor (and a local Ray it started).

    Args:
      program: the Launchpad program (Courier, Reverb and Python-class nodes).
      config: where and how to run it (default: a local Ray on 127.0.0.1).
      record_dir: where to write `ray_nodes.json`, the placement and restarts of every node.
      cpu_placement_mode: "auto" or "none" (see `mava_systems.launching.cpu_placement`); applies to a
        local Ray this launch starts, not to a cluster given by address.

    Raises:
      ValueError: if the program or the config cannot run (before Ray starts).
      RayLaunchError: if a node failed more often than `config.max_restarts`, or
        nodes could not be placed.
    """
    config = config or RayLaunchConfig()
    config.check_groups(list(program.groups))
    cpu_placement.check_mode(cpu_placement_mode)
    namespace = f"{program.name}-{uuid.uuid4().hex[:8]}"
    specs = node_specs(program, namespace)
    if config.address is not None:
        cpu_placement_mode = "none"  # The cluster's machines are not this one.
    # Executors as many as the cores are placed all the same (each on every core, everything
    # else on the lowest): Ray's processes and threads wake far more often than `local_mp`'s
    # nodes, and an executor loses more to them than to its siblings (docs/program_cpu.md).
    with cpu_placement.placing([spec.name for spec in specs], cpu_placement_mode,
                               share_cores_when_crowded=True) as placement:
        if placement:
            print(f"Ray launcher: CPU placement: {placement.describe()}", flush=True)
        for spec in specs:
            spec.cpus = placement.cpus_of(spec.name) if placement else ()
        failure = _run(specs, config, namespace, record_dir,
                       placement.shared if placement else None)
    if failure:
        raise RayLaunchError(failure)


def _run(specs: List[NodeSpec], config: RayLaunchConfig, namespace: str,
         record_dir: Optional[str], ray_cpus: Optional[Sequence[int]]) -> Optional[str]:
    """Runs the nodes of `specs` until the program stops; returns why it failed, or None."""
    failure = None
    # After `ray.init`, which sets its own SIGTERM handler (an immediate exit).
    with ray_session(config, namespace, ray_cpus), stop_signals_raise() as signals_received:
        run = _Launch(specs, config, namespace, record_dir)
        try:
            run.start()
            try:
                failure = run.watch()
            except KeyboardInterrupt:
                by = signals_received[0] if signals_received else "Ctrl-C"
                print(f"Ray launcher: stopping ({by}); press Ctrl-C again to end every node now",
                      flush=True)
            run.stop()
        finally:
            run.end()
    return failure
