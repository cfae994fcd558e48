"""The Ray actors of a launch: one per Launchpad node, and a controller they report to."""

import collections
import dataclasses
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import flags, logging
from launchpad import address as lp_address
import ray

from mava_systems.launching import allocator, cpu_placement
from mava_systems.nodes.lifecycle import failed_nodes_are_restarted
# Imported for its flags: the actor parses --lp_launch_type=ray and the --ray_* flags.
from mava_systems.ray_launch import flags as ray_flags  # noqa: F401
from mava_systems.ray_launch.runtime import NodeRuntime

CONTROLLER_NAME = "launcher/controller"


@dataclasses.dataclass
class NodeSpec:
    """What a node actor runs: an object made by `constructor(*args, **kwargs)` (then its `run()`,
    unless `should_run` is False), or, for a Reverb node, the node itself."""

    name: str
    group: str
    constructor: Optional[Callable[..., Any]] = None
    args: Sequence[Any] = ()
    kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    should_run: bool = True
    reverb_node: Any = None
    # The names of the nodes whose handles it holds, and the Reverb ones among them.
    uses: List[str] = dataclasses.field(default_factory=list)
    uses_reverb: List[str] = dataclasses.field(default_factory=list)
    # The cores its process runs on once the node is made (see `mava_systems.launching.cpu_placement`);
    # empty: anywhere.
    cpus: Tuple[int, ...] = ()

    def construct(self) -> Any:
        """The node's object, its handles dereferenced (the proxies reach the other actors)."""
        from launchpad.nodes import dereference  # pylint: disable=g-import-not-at-top
        import tree  # pylint: disable=g-import-not-at-top
        args, kwargs = tree.map_structure(dereference.maybe_dereference,
                                          (tuple(self.args), dict(self.kwargs)))
        return self.constructor(*args, **kwargs)


class Controller:
    """Knows every node's incarnations and where they run, the stop request and node failures."""

    def __init__(self):
        self._nodes: Dict[str, List[Dict[str, Any]]] = {}
        self._stop_requested_by: Optional[str] = None
        self._failures: List[Dict[str, Any]] = []
        # Moves at every (re)start of a node and at the stop request: the launcher waits on it
        # rather than asking several times a second.
        self._version = 0
        self._changed = threading.Condition()

    def _note_change(self) -> None:
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def register(self, name: str, info: Dict[str, Any]) -> int:
        """Records a (re)started node; returns its incarnation (1 for the first start)."""
        incarnations = self._nodes.setdefault(name, [])
        incarnations.append(dict(info, started=time.time()))
        self._note_change()
        return len(incarnations)

    def update(self, name: str, **info: Any) -> None:
        """Adds to what the node's current incarnation reported (e.g. its serving address)."""
        self._nodes[name][-1].update(info)

    def nodes(self) -> Dict[str, List[Dict[str, Any]]]:
        """{node: [what each incarnation reported, oldest first]}."""
        return self._nodes

    def request_stop(self, by: str) -> None:
        """A node called `lp.stop()`."""
        if self._stop_requested_by is None:
            self._stop_requested_by = by
            self._note_change()

    def wait_for_change(self, version: int, timeout_s: float) -> Tuple[int, Optional[str]]:
        """Once a node has (re)started or a stop was asked for since `version` (at once if that
        was before the call), or after `timeout_s`: (the version now, the node that asked the
        program to stop, if any)."""
        with self._changed:
            self._changed.wait_for(lambda: self._version != version, timeout_s)
            return self._version, self._stop_requested_by

    def report_failure(self, name: str, error: str) -> None:
        """A node's construction or `run()` raised `error` (its process exits and restarts)."""
        self._failures.append({"node": name, "error": error, "time": time.time()})

    def failures(self) -> List[Dict[str, Any]]:
        """Every reported node failure, oldest first."""
        return self._failures


class _FixedAddress(lp_address.AbstractAddressBuilder):
    def __init__(self, address: str):
        self._address = address

    def build(self) -> str:
        return self._address


def _parse_flags(argv: Sequence[str]) -> None:
    """Parses the launching command's flags this process defines (Launchpad's, absl's logging
    verbosity, ...) and logs through absl's handler, as `app.run` would."""
    if not flags.FLAGS.is_parsed():
        try:
            flags.FLAGS(list(argv), known_only=True)
        except flags.Error as error:
            logging.warning("Flags not parsed in the node (%s); their defaults apply", error)
            flags.FLAGS.mark_as_parsed()
        if flags.FLAGS["verbosity"].using_default_value:
            flags.FLAGS.verbosity = 0  # INFO, as app.run sets it.
    logging.use_absl_handler()


class NodeActor:
    """Runs one Launchpad node in a Ray actor: its object in a thread, its methods callable.

    The node starts when the actor does, so an actor Ray restarts runs its node
    again (from the node's checkpoints, as on resume). If constructing the node
    or its `run()` fails while the program is not stopping, the actor reports
    the error and exits, and Ray restarts it.
    """

    def __init__(self, spec: NodeSpec, namespace: str, argv: Sequence[str]):
        _parse_flags(argv)
        failed_nodes_are_restarted()  # A failure restarts this actor; the program goes on.
        self._spec = spec
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=namespace)
        self._runtime = NodeRuntime(stop_program=self._request_stop)
        self._instance: Any = None
        self._ready = threading.Event()
        self._done = threading.Event()
        self._address: Optional[str] = None
        self._served_calls: Dict[str, int] = collections.Counter()
        self._served_calls_lock = threading.Lock()
        self.ip = ray.util.get_node_ip_address()
        info = {"pid": os.getpid(), "ip": self.ip, "group": spec.group,
                "ray_node_id": ray.get_runtime_context().get_node_id(),
                "jemalloc": allocator.runs_jemalloc(),
                "cpus": sorted(spec.cpus or os.sched_getaffinity(0))}
        self.incarnation = ray.get(self._controller.register.remote(spec.name, info))
        threading.Thread(target=self._main, name=spec.name, daemon=True).start()

    def _request_stop(self) -> None:
        ray.get(self._controller.request_stop.remote(self._spec.name))

    def _main(self) -> None:
        self._runtime.enter()
        try:
            if self._spec.reverb_node is not None:
                self._place()
                self._run_reverb_node()
            else:
                self._instance = self._spec.construct()
                self._place()
                self._ready.set()
                if self._spec.should_run and hasattr(self._instance, "run"):
                    self._instance.run()
        except BaseException as error:  # pylint: disable=broad-except
            if not self._runtime.stopping:
                self._fail(error)
            logging.info("%s ended at stop with %r", self._spec.name, error)
        finally:
            self._done.set()

    def _place(self) -> None:
        """Moves the whole process (Ray's threads in it too) to the node's cores, once the node
        is made: nodes sharing a core are made on every core, as fast as when unplaced."""
        if self._spec.cpus:
            cpu_placement.place_process(self._spec.cpus)

    def _run_reverb_node(self) -> None:
        import portpicker  # pylint: disable=g-import-not-at-top
        node = self._spec.reverb_node
        self._address = f"{self.ip}:{portpicker.pick_unused_port()}"
        node.reverb_address.bind(_FixedAddress(self._address))
        self._ready.set()
        node.run()

    def _fail(self, error: BaseException) -> None:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        logging.error("%s failed:\n%s", self._spec.name, text)
        try:
            ray.get(self._controller.report_failure.remote(self._spec.name, text), timeout=10)
        finally:
            sys.stderr.flush()
            os._exit(1)  # An unexpected exit: Ray restarts the actor.

    def __repr__(self) -> str:  # Ray prefixes the node's log lines with it.
        spec = getattr(self, "_spec", None)  # None if the actor could not be made.
        return spec.name if spec is not None else type(self).__name__

    # Remote methods.
    def call(self, method: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """`method(*args, **kwargs)` on the node's object (waits until it is constructed)."""
        if method.startswith("_"):
            raise AttributeError(f"{self._spec.name} does not serve private method {method}")
        while not self._ready.wait(1.0):
            if self._done.is_set():
                raise RuntimeError(f"{self._spec.name} ended before its object was made")
        self._runtime.enter()
        with self._served_calls_lock:
            self._served_calls[method] += 1
        return getattr(self._instance, method)(*args, **kwargs)

    def served_calls(self) -> Dict[str, int]:
        """{method: calls} this incarnation served to other nodes."""
        with self._served_calls_lock:
            return dict(self._served_calls)

    def address(self) -> str:
        """The `host:port` a Reverb node serves at, once its server answers."""
        if self._spec.reverb_node is None:
            raise ValueError(f"{self._spec.name} is not a Reverb node")
        import reverb  # pylint: disable=g-import-not-at-top  (only Reverb nodes need it)
        self._ready.wait()
        client = reverb.Client(self._address)
        while True:
            try:
                client.server_info(timeout=1)
                break
            except Exception:  # pylint: disable=broad-except
                if self._done.is_set():
                    raise RuntimeError(f"{self._spec.name} stopped serving") from None
                time.sleep(0.1)
        self._controller.update.remote(self._spec.name, address=self._address)
        return self._address

    def wait_done(self) -> int:
        """Returns (the incarnation) once the node's `run()` has returned."""
        self._done.wait()
        return self.incarnation

    def stop(self) -> None:
        """The program stops: sets the node's stop event and calls its stop handlers."""
        self._runtime.stop()
