"""Which cores a program's node processes run on: each executor on a core of its own, or anywhere.

An executor is the busiest node of a program (on `mpe/simple_spread_v3` with
MADQN one executor keeps a core about 90 % busy) and every other node waits
on it. Left to the kernel, its thread shares both cores of a 2-core machine
with the trainer, the replay and, under Ray, Ray's own processes and
threads: every time one of them wakes it takes the executor's core or moves
it, and the executor pays with a colder cache. On a core of its own an
executor step costs about a tenth less CPU under `local_mp` and a fifth less
under Ray, and whole-program executor steps/s rise by a fifth (`local_mp`)
and by nearly half (Ray): docs/program_cpu.md, "Executors on cores of their
own".

`auto` does this when the machine has more cores than the program has
executors (or actors): executor `i` gets the `i`-th core from the top, and
every other node, the evaluator included, shares the cores left (at least
one). It keeps to the cores this process may use (`taskset`, a container's
CPU set). Two programs started on one machine at once would put their
executors on the same cores; so a program reserves its executors' cores
(a lock file per core, released when the launcher ends) and one that finds
them taken runs without placement. `none` leaves every node to the kernel.

Applied by the launchers that start processes on this machine: `local_mp`
(each node process is placed when it starts) and a Ray the launcher starts
itself (Ray's own processes share the cores left; each node's actor is made
on every core and then moves its process to its cores). Not applied to
`local_mt` (one process) or a Ray cluster given by address.

Under Ray, executors as many as the cores or more are placed too
(`share_cores_when_crowded`): each may run on every core, while the other
nodes and Ray's processes keep to the lowest. Ray's processes and threads
wake far more often than `local_mp`'s nodes, and the executors, then the
bottleneck, lose less by sharing cores among themselves (and taking what the
lowest core has spare) than by sharing every core with them; under `local_mp`
this gains nothing (docs/program_cpu.md, "Ray's executors on one core" and
"Ray's crowded executors on every core").
"""

import contextlib
import dataclasses
import fcntl
import os
import tempfile
from typing import Iterator, List, Mapping, Optional, Sequence, Tuple

from absl import logging

from mava_systems.launching.node_naming import group_of

CPU_PLACEMENTS = ("auto", "none")
DEFAULT_CPU_PLACEMENT = "auto"
# Node groups that get a core of their own under `auto`.
DEDICATED_GROUPS = ("executor", "actor")
LOCK_DIR_ENV = "MAVA_CPU_LOCK_DIR"  # Where the per-core lock files live (default: the temp dir).
# The cores a process started by a placed local Ray moves to at its start (`START_HOOK`).
START_CPUS_ENV = "MAVA_START_CPUS"
START_HOOK = "mava_systems.launching.cpu_placement.place_at_start"


@dataclasses.dataclass(frozen=True)
class CpuPlacement:
    """The cores of each node: `dedicated[node]` for the nodes with cores of their own (e.g.
    "executor/0"), `shared` for every other node (and Ray's own processes)."""

    dedicated: Mapping[str, Tuple[int, ...]]
    shared: Tuple[int, ...]

    def cpus_of(self, node_name: str) -> Tuple[int, ...]:
        """The cores node `node_name` ("trainer/0") runs on."""
        return tuple(self.dedicated.get(node_name, self.shared))

    def describe(self) -> str:
        """One line, e.g. "executor/0 on core 1; the other nodes on core 0"."""
        own = "; ".join(f"{name} on {_cores(cpus)}" for name, cpus in self.dedicated.items())
        return f"{own}; the other nodes on {_cores(self.shared)}"


def _cores(cpus: Sequence[int]) -> str:
    """`cpus` in words: "core 1" or "cores 0,1"."""
    return f"core{'s' if len(cpus) > 1 else ''} " + ",".join(str(cpu) for cpu in cpus)


def plan(node_names: Sequence[str], cpus: Optional[Sequence[int]] = None,
         share_cores_when_crowded: bool = False) -> Optional[CpuPlacement]:
    """The `auto` placement of a program's nodes on `cpus` (default: the cores this process may
    use), or None when there are not more cores than executors (or no executor).

    With `share_cores_when_crowded`, executors as many as the cores or more may each run on
    every core while the other nodes keep to the lowest, instead of all being left unplaced.
    """
    available = sorted(os.sched_getaffinity(0) if cpus is None else set(cpus))
    dedicated_nodes = [name for name in node_names if group_of(name) in DEDICATED_GROUPS]
    if not dedicated_nodes or len(available) < 2:
        return None
    if len(available) <= len(dedicated_nodes):
        if not share_cores_when_crowded:
            return None
        return CpuPlacement(dedicated={name: tuple(available) for name in dedicated_nodes},
                            shared=tuple(available[:1]))
    dedicated = {name: (available[-1 - index],) for index, name in enumerate(dedicated_nodes)}
    return CpuPlacement(dedicated=dedicated,
                        shared=tuple(available[:len(available) - len(dedicated_nodes)]))


def check_mode(mode: str) -> str:
    """`mode` if it is one of `CPU_PLACEMENTS`.

    Raises:
      ValueError: an unknown mode.
    """
    if mode not in CPU_PLACEMENTS:
        raise ValueError(f"cpu_placement must be one of {', '.join(CPU_PLACEMENTS)}; got {mode!r}")
    return mode


def _lock_path(cpu: int) -> str:
    directory = os.environ.get(LOCK_DIR_ENV) or tempfile.gettempdir()
    return os.path.join(directory, f"mava_systems-cpu-{cpu}.lock")


def _reserve(cpus: Sequence[int]) -> Optional[List[int]]:
    """Lock descriptors holding `cpus` for this process, or None (nothing held) if another
    process holds one of them."""
    held: List[int] = []
    for cpu in cpus:
        descriptor = os.open(_lock_path(cpu), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            for other in held:
                os.close(other)
            logging.info("Core %d is reserved by another program on this machine: the nodes "
                         "run without CPU placement", cpu)
            return None
        held.append(descriptor)
    return held


@contextlib.contextmanager
def reserved(placement: Optional[CpuPlacement]) -> Iterator[Optional[CpuPlacement]]:
    """Within it, `placement`'s dedicated cores are reserved for this process (yields it), or,
    if another program holds one of them, yields None (that program keeps them)."""
    if placement is None:
        yield None
        return
    held = _reserve(sorted({cpu for cpus in placement.dedicated.values() for cpu in cpus}))
    try:
        yield placement if held is not None else None
    finally:
        for descriptor in held or []:
            os.close(descriptor)  # Releases its lock.


@contextlib.contextmanager
def placing(node_names: Sequence[str], mode: str, share_cores_when_crowded: bool = False
            ) -> Iterator[Optional[CpuPlacement]]:
    """The placement of a program's nodes under `mode` ("auto" or "none"; see `plan`), its cores
    reserved while in the context; None for no placement.

    Raises:
      ValueError: an unknown mode.
    """
    check_mode(mode)
    planned = plan(node_names, share_cores_when_crowded=share_cores_when_crowded) \
        if mode == "auto" else None
    with reserved(planned) as placement:
        yield placement


def place_process(cpus: Sequence[int]) -> None:
    """Puts every thread of this process (threads it starts later follow) on `cpus`."""
    placed = set()
    while True:  # Again while new threads appear: one started by a thread not yet placed.
        new_threads = [thread_id for thread_id in _thread_ids() if thread_id not in placed]
        if not new_threads:
            return
        for thread_id in new_threads:
            try:
                os.sched_setaffinity(thread_id, cpus)
            except ProcessLookupError:  # The thread ended meanwhile.
                pass
            placed.add(thread_id)


def place_at_start() -> None:
    """Puts this process on the cores `$MAVA_START_CPUS` names ("0,1"), if set: a Ray worker's
    setup hook (`START_HOOK`), as its node is made on every core of the launch."""
    cpus = os.environ.get(START_CPUS_ENV)
    if cpus:
        place_process([int(cpu) for cpu in cpus.split(",")])


def _thread_ids() -> List[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc/self/task")]
    except OSError:  # No /proc: the calling thread only.
        return [0]


@contextlib.contextmanager
def process_placed(cpus: Optional[Sequence[int]]) -> Iterator[None]:
    """Within it, this thread runs on `cpus` (processes it starts meanwhile start there too);
    restored at exit. No change for None."""
    if not cpus:
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)
