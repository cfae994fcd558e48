"""Killing one node of a program under test, and nothing else.

A fault test kills a process only after checking that it belongs to the
program's own process tree (the launcher it started, or a process below it)
and is neither this test process nor one of its ancestors: a pid read from a
file or found by name could otherwise name any process of the machine.
"""

import os
import signal
import threading
import time
from typing import Dict, List, Optional

import psutil

from mava_systems.launching.node_processes import NODE_NAME_ENV


def in_tree(root_pid: int, pid: int) -> bool:
    """Whether process `pid` is `root_pid` or below it, and is not this process or above it."""
    own = {os.getpid()} | {process.pid for process in psutil.Process().parents()}
    if pid in own:
        return False
    try:
        root = psutil.Process(root_pid)
        return pid == root_pid or pid in {child.pid for child in root.children(recursive=True)}
    except psutil.NoSuchProcess:
        return False


def kill_in_tree(root_pid: int, pid: int, signal_number: int = signal.SIGKILL) -> None:
    """Sends `signal_number` to `pid`, which must belong to `root_pid`'s tree (see `in_tree`)."""
    assert in_tree(root_pid, pid), f"process {pid} is not part of the program under test"
    os.kill(pid, signal_number)


def node_processes(launcher_pid: int) -> Dict[str, int]:
    """{node name: pid} of the `local_mp` node processes below the launcher (by their
    `NODE_NAME_ENV`)."""
    found = {}
    try:
        children = psutil.Process(launcher_pid).children()
    except psutil.NoSuchProcess:
        return found
    for child in children:
        try:
            name = child.environ().get(NODE_NAME_ENV)
            if name and child.status() != psutil.STATUS_ZOMBIE and "sed" not in child.name():
                found[name] = child.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def wait_for_node(launcher_pid: int, node: str, timeout_s: float,
                  other_than: Optional[int] = None) -> int:
    """The pid of `node`'s process (one other than `other_than`), once it runs."""
    deadline = time.time() + timeout_s
    while True:
        pid = node_processes(launcher_pid).get(node)
        if pid is not None and pid != other_than:
            return pid
        assert time.time() < deadline, f"no process for {node} within {timeout_s} s"
        time.sleep(0.2)


class OutputLines:
    """Collects a process's output lines in a thread (`lines`), with when each came."""

    def __init__(self, stream):
        self.lines: List[str] = []
        self.times: List[float] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.times.append(time.time())
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, fragment: str, timeout_s: float, process=None) -> float:
        """When the first line holding `fragment` came; fails after `timeout_s`."""
        deadline = time.time() + timeout_s
        while True:
            for index, line in enumerate(list(self.lines)):
                if fragment in line:
                    return self.times[index]
            assert time.time() < deadline, \
                f"no {fragment!r} within {timeout_s} s:\n{self.text()[-3000:]}"
            if process is not None and process.poll() is not None:
                self._thread.join(5)
                assert any(fragment in line for line in self.lines), \
                    f"the program ended without {fragment!r}:\n{self.text()[-3000:]}"
            time.sleep(0.1)

    def join(self, timeout_s: float = 10) -> None:
        self._thread.join(timeout_s)
