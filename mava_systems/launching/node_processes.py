"""Runs a program's nodes as processes of this one (`local_mp`) and watches them.

Launchpad 0.5.0 starts each `local_mp` node under a shell that hides its exit
status, so a node that dies goes unnoticed: the others wait on it forever (a
dead replay) or the run ends as if nothing happened (a dead executor). Here
each node's process is a child of the launcher, polled every 0.1 s (by `wait()`):

- a node that dies (killed by a signal) while the program runs is noticed
  within a second; an executor (or actor), the evaluator or a cache is started
  again in place, with the same command and address, up to `max_restarts`
  times per node (its counts continue: it reads them from the counter);
- a node that fails because another process took the port Launchpad picked
  for it (Launchpad picks free ports when the program is launched, and a node
  binds its port only once it has started, seconds later: a race on a busy
  machine) is started again on a new port, if no other node calls it
  (executors; the evaluator, unless a coordinator does), up to
  `MAX_PORT_RETRIES` times; one that others call (the replay, the counter, the
  trainer, a cache) stops the program with one line saying so (`ports_taken`),
  and `mava_systems.launching.launch` launches it again once;
- a replay, trainer, counter or coordinator that dies, a node that dies more
  often than that, or a node that exits with an error status, stops the whole
  program (every node saves its checkpoints as at any stop), and the launch
  reports the failure (`failures`);
- Ctrl-C stops the program; a second one only says that the nodes are still
  saving; a third kills them (`killed_by_user`).

Node processes run in their own process group, so that the terminal's Ctrl-C
reaches the launcher only (which asks each node to stop), and die with the
launcher if it is killed (nothing is left running).
"""

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import launchpad as lp
from launchpad import context as lp_context
from launchpad.launch import worker_manager
import psutil

from mava_systems.terminal import console
from mava_systems.launching import cpu_placement
from mava_systems.launching.node_naming import group_of, named_nodes

# Node groups whose nodes are started again when they die: they keep no state of their own
# that the program needs (an executor's episode in progress is lost, its counts are not).
RESTARTED_GROUPS = ("executor", "actor", "evaluator", "cacher")
DEFAULT_MAX_RESTARTS = 3
# New ports tried for one node whose port another process took, before the run stops.
MAX_PORT_RETRIES = 3
# The environment variable naming a node process's node ("executor/0"): tools find nodes by it.
NODE_NAME_ENV = "MAVA_SYSTEMS_NODE"
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


@contextlib.contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    """Sets the environment variable `name` (inherited by processes started meanwhile, such as
    node processes) to `value`, and restores what it was at exit."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _node_process_setup(launcher_pid: int, cpus: Sequence[int] = ()) -> None:
    # In the child, between fork and exec.
    os.setpgrp()
    if cpus:
        os.sched_setaffinity(0, cpus)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != launcher_pid:
        # The launcher died before the death signal was set: no node outlives it (its
        # ports, no longer reserved, would be handed to other processes).
        os._exit(1)
    # As under Launchpad's own wrapper: stop signals are ignored until the node's worker
    # manager handles them (a stop during its imports comes again every second until it ends).
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(number, signal.SIG_IGN)


def _output_process_setup(cpus: Sequence[int] = ()) -> None:
    os.setpgrp()  # Ends when its node's output does, not at the terminal's Ctrl-C.
    if cpus:
        os.sched_setaffinity(0, cpus)


def exit_description(returncode: int) -> str:
    """How a process ended, e.g. "killed by SIGKILL" or "exited with status 1"."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class NodeCommand:
    """How to start one node's process: its name ("trainer/0"), command and environment, and
    the ports it listens on."""

    def __init__(self, name: str, command: Sequence[str], env: Dict[str, str],
                 ports: Sequence[int] = ()):
        self.name = name
        self.command = list(command)
        self.env = env
        self.ports = list(ports)


def port_is_taken(port: int) -> bool:
    """Whether a process holds `port` on 127.0.0.1 now (listening or bound to it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no owner.
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


class ProgramNodes:
    """A program prepared for a `local_mp` launch (as Launchpad prepares one: launch contexts,
    handles, addresses): its nodes' commands, which nodes call which, and new ports for a node
    whose port another process took."""

    def __init__(self, program: lp.Program):
        self._groups = program.groups
        self._nodes = {name: node for name, _, node in named_nodes(program)}
        for node in self._nodes.values():
            node._initialize_context(lp_context.LaunchType.LOCAL_MULTI_PROCESSING,  # pylint: disable=protected-access
                                     launch_config=None)
        for label, nodes in program.groups.items():
            for node in nodes:
                for handle in node.input_handles:
                    handle.connect(node, label)
        for node in program.get_all_nodes():
            node.bind_addresses()

    def commands(self, label: Optional[str] = None) -> List[NodeCommand]:
        """The commands of every node (or of group `label`'s)."""
        commands = []
        for group, nodes in self._groups.items():
            if label not in (None, group):
                continue
            for executable in nodes[0].to_executables(nodes, group, nodes[0].launch_context):
                env = {**os.environ, **{key: str(value)
                                        for key, value in executable.env_overrides.items()}}
                commands.append(NodeCommand(executable.title, executable.command_as_list, env,
                                            self.ports(executable.title)))
        return commands

    def ports(self, name: str) -> List[int]:
        """The ports node `name` listens on."""
        return [lp.get_port_from_address(address.resolve())
                for address in self._nodes[name].addresses]

    def callers(self, name: str) -> List[str]:
        """The nodes that call node `name` (hold a handle to one of its addresses)."""
        owned = [id(address) for address in self._nodes[name].addresses]
        return [caller for caller, node in self._nodes.items() if caller != name and any(
            id(getattr(handle, "_address", None)) in owned for handle in node.input_handles)]

    def readdressed(self, name: str) -> NodeCommand:
        """Node `name`'s command after new ports are picked for it (its group's other nodes
        keep theirs: their running processes read the same addresses from their own files)."""
        for address in self._nodes[name].addresses:
            address.bind(lp.SimpleLocalAddressBuilder())
        return next(command for command in self.commands(group_of(name))
                    if command.name == name)


class NodeSupervisor(worker_manager.WorkerManager):
    """Launchpad's worker manager for node processes it starts itself and watches (see the
    module docstring): its `wait()` returns once every node has ended."""

    def __init__(self, max_restarts: int = DEFAULT_MAX_RESTARTS,
                 say: Optional[Callable[[str], None]] = None,
                 program_nodes: Optional[ProgramNodes] = None,
                 placement: Optional[cpu_placement.CpuPlacement] = None):
        super().__init__(kill_main_thread=False)
        # Launchpad gives its notice only to a process's first worker manager (a second one
        # exists when a launch is launched again: see `mava_systems.launching.launch.launch`).
        self._termination_notice_secs = worker_manager.FLAGS.lp_termination_notice_secs
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be 0 or more, got {max_restarts}")
        self.max_restarts = max_restarts
        self.restarts: Dict[str, int] = {}
        # (node, when it died (time.time()), how it ended, what was done) for every death.
        self.deaths: List[Tuple[str, float, str, str]] = []
        # Nodes that died and stopped the program; nodes that exited with an error status (a
        # node that fails says why itself: see `lifecycle.stop_program_after_failure`).
        self.failures: List[str] = []
        self.exit_failures: List[str] = []
        # Nodes that failed because another process took their port, and stopped the program
        # (a node that others call cannot move: see `_port_taken`).
        self.ports_taken: List[str] = []
        # New ports picked for each node whose port another process took.
        self.port_retries: Dict[str, int] = {}
        self._program_nodes = program_nodes
        self.placement = placement
        self._commands: Dict[str, NodeCommand] = {}
        self._output: List[subprocess.Popen] = []
        self._say = say or tell_user
        self.ctrl_c = PatientCtrlC(self, self._say)

    def start(self, node: NodeCommand) -> subprocess.Popen:
        """Starts `node`'s process (its output prefixed with "[name] " on this one's stdout), on
        its cores if the supervisor has a placement."""
        cpus = self.placement.cpus_of(node.name) if self.placement else ()
        shared = self.placement.shared if self.placement else ()
        output = subprocess.Popen(["sed", "-u", f"s!^![{node.name}] !"], stdin=subprocess.PIPE,
                                  preexec_fn=functools.partial(_output_process_setup, shared))
        try:
            process = subprocess.Popen(node.command, env={**node.env, NODE_NAME_ENV: node.name},
                                       stdout=output.stdin, stderr=subprocess.STDOUT,
                                       preexec_fn=functools.partial(_node_process_setup,
                                                                    os.getpid(), cpus))
        finally:
            output.stdin.close()
        self._output.append(output)
        self._commands[node.name] = node
        self.restarts.setdefault(node.name, 0)
        self._workers_count[node.name] += 1
        self._active_workers[node.name].append(process)
        return process

    def node_pids(self) -> Dict[str, int]:
        """{node name: pid} of every node process running now."""
        with self._mutex:
            return {name: workers[0].pid for name, workers in self._active_workers.items()
                    if workers}

    @property
    def killed_by_user(self) -> bool:
        """Whether a third Ctrl-C killed the nodes."""
        return self.ctrl_c.killed

    @property
    def stopped_by_user(self) -> bool:
        """Whether Ctrl-C was pressed."""
        return self.ctrl_c.presses > 0

    def release_signals(self) -> None:
        """Stops handling the launcher's signals (once every node has ended, before another
        launch's supervisor handles them)."""
        self._disable_signals()
        worker_manager._remove_signal_handler(signal.SIGINT, self.ctrl_c._first)  # pylint: disable=protected-access

    @property
    def stopping(self) -> bool:
        return self._stop_counter > 0 or self._stop_event.is_set()

    def _check_workers(self) -> None:
        """Reaps ended nodes and acts on deaths (Launchpad's `wait` calls it, holding the
        mutex, every 0.1 s)."""
        ended = []
        for name, workers in self._active_workers.items():
            for process in list(workers):
                if process.poll() is not None:
                    workers.remove(process)
                    ended.append((name, process.returncode))
        for name, returncode in ended:
            self._node_ended(name, returncode)
        if not any(self._active_workers.values()):
            self._disable_alarm()

    def _node_ended(self, name: str, returncode: int) -> None:
        if returncode == 0:
            return
        clock = time.strftime("%H:%M:%S")
        # A node may stop the program itself as it fails (the replay does): it may then end
        # by a signal as it stops.
        if (returncode > 0 or self.stopping) and not self.stopped_by_user \
                and self._port_taken(name, clock):
            return
        if self.stopping:
            return
        how = exit_description(returncode)
        if returncode < 0 and group_of(name) in RESTARTED_GROUPS \
                and self.restarts[name] < self.max_restarts:
            self.restarts[name] += 1
            self.deaths.append((name, time.time(), how, "restarted"))
            self._say(f"warning: {name} died ({how}) at {clock}; started it again "
                      f"(restart {self.restarts[name]} of {self.max_restarts} allowed, "
                      "--max_node_restarts)")
            self.start(self._commands[name])
            return
        if returncode > 0:
            reason = "it failed"
        elif group_of(name) in RESTARTED_GROUPS:
            reason = (f"it was restarted {self.restarts[name]} time(s) already, as many as "
                      "--max_node_restarts allows")
        else:
            reason = f"a {group_of(name)} node is not restarted"
        self.deaths.append((name, time.time(), how, "stopped the run"))
        (self.exit_failures if returncode > 0 else self.failures).append(f"{name} {how}")
        self._say(f"error: {name} {how} at {clock}; {reason}: stopping the run (the other "
                  "nodes save their checkpoints)")
        self._stop()

    def _port_taken(self, name: str, clock: str) -> bool:
        """Handles node `name`, which failed, if it failed because another process holds one of
        its ports: restarts it on new ports if no other node calls it and the program is not
        stopping, else stops the program. Returns whether it did."""
        taken = [port for port in self._commands[name].ports if port_is_taken(port)]
        if not taken:
            return False
        port = taken[0]
        retries = self.port_retries.setdefault(name, 0)
        callers = self._program_nodes.callers(name) if self._program_nodes else []
        if self._program_nodes and not callers and retries < MAX_PORT_RETRIES \
                and not self.stopping:
            self.port_retries[name] += 1
            command = self._program_nodes.readdressed(name)
            self.deaths.append((name, time.time(), f"port {port} taken", "moved to a new port"))
            self._say(f"warning: {name} could not listen on port {port} at {clock}: another "
                      f"process took it after it was picked; started {name} again on port "
                      f"{', '.join(map(str, command.ports))}")
            self.start(command)
            return True
        self.deaths.append((name, time.time(), f"port {port} taken", "stopped the run"))
        self.ports_taken.append(f"{name} could not listen on port {port}: another process took "
                                "it after it was picked")
        self._say(f"error: {name} could not listen on port {port} at {clock}: another process "
                  "took it after it was picked; stopping the run (the other nodes save their "
                  "checkpoints): launch again to resume on new ports")
        if not self.stopping:
            self._stop()
        return True

    def _kill(self) -> None:
        """Kills every node process and its children (never this process)."""
        print("\nKilling entire runtime.", flush=True)
        for workers in self._active_workers.values():
            for process in workers:
                try:
                    tree = psutil.Process(process.pid)
                    victims = tree.children(recursive=True) + [tree]
                except psutil.NoSuchProcess:
                    continue
                for victim in victims:
                    try:
                        victim.send_signal(signal.SIGKILL)
                    except psutil.NoSuchProcess:
                        pass

    def wait(self, *args, **kwargs) -> None:  # pylint: disable=signature-differs
        """Waits until every node has ended (and their output has been written)."""
        super().wait(*args, **kwargs)
        for output in self._output:
            try:
                output.wait(timeout=10)
            except subprocess.TimeoutExpired:
                output.kill()


class PatientCtrlC:
    """Ctrl-C handling for a launcher's Launchpad worker manager, in place of Launchpad's (whose
    second Ctrl-C kills every node at once, mid-checkpoint): the first stops the program, the
    second only says that the nodes are still saving, the third kills them (`killed`)."""

    def __init__(self, manager: worker_manager.WorkerManager,
                 say: Optional[Callable[[str], None]] = None):
        self.killed = False
        self._manager = manager
        self._say = say or tell_user
        self.presses = 0
        # pylint: disable=protected-access
        worker_manager._remove_signal_handler(signal.SIGINT, manager._stop_by_user)
        worker_manager._register_signal_handler(signal.SIGINT, self._first)

    def _first(self) -> None:
        self.presses = 1
        # Launchpad's dispatcher forgets its SIGINT handlers once it has called them.
        signal.signal(signal.SIGINT, self._again)
        notice_s = max(self._manager._termination_notice_secs, 0)  # pylint: disable=protected-access
        self._say(f"Stopping (Ctrl-C): the nodes save their checkpoints, for up to {notice_s} s."
                  " Press Ctrl-C twice more to kill them now (what they have not saved is "
                  "lost).")
        self._manager._stop()  # pylint: disable=protected-access

    def _again(self, signal_number: int, frame: object) -> None:
        del signal_number, frame
        self.presses += 1
        if self.presses == 2:
            self._say("Still stopping: the nodes are saving their checkpoints, then the summary "
                      "is written. Press Ctrl-C once more to kill them now (what they have not "
                      "saved is lost).")
        elif not self.killed:
            self.killed = True
            self._say("Killing the nodes (third Ctrl-C): what they had not saved is lost.")
            self._manager._kill()  # pylint: disable=protected-access


def tell_user(text: str) -> None:
    """Prints `text` on the terminal's stderr and, when the output is captured, in the log."""
    console.report_error(text)
    if console.is_quiet():
        print(text, flush=True)


def launch(program: lp.Program, max_restarts: int = DEFAULT_MAX_RESTARTS,
           placement: Optional[cpu_placement.CpuPlacement] = None) -> NodeSupervisor:
    """Starts every node of `program` in its own process (on its cores under `placement`),
    watched by the `NodeSupervisor` it returns (call its `wait()`)."""
    program_nodes = ProgramNodes(program)
    supervisor = NodeSupervisor(max_restarts, program_nodes=program_nodes, placement=placement)
    for node in program_nodes.commands():
        supervisor.start(node)
    sys.stdout.flush()
    return supervisor
