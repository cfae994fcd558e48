"""What the Ray launcher tests share: Ray's processes on this machine, the run's node record."""

import json
import os
import time

import psutil

from mava_systems.ray_launch import RECORD_FILE

# Process names of Ray's servers and workers (workers rename themselves "ray::<actor>").
RAY_PROCESS_MARKERS = ("raylet", "gcs_server", "ray::", "ray/_private", "ray/dashboard",
                       "runtime_env/agent", "log_monitor")


def ray_processes():
    """{pid: command line} of every Ray process running on this machine.

    A zombie has ended: it only waits for its parent to reap it, and a Ray worker orphaned by
    its raylet waits for the machine's PID 1, which in some containers never reaps.
    """
    found = {}
    for process in psutil.process_iter(["pid", "cmdline", "name", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            command = " ".join(process.info["cmdline"] or [process.info["name"] or ""])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(marker in command for marker in RAY_PROCESS_MARKERS):
            found[process.info["pid"]] = command
    return found


def is_running(pid):
    """Whether process `pid` exists and has not ended (a zombie has ended; see `ray_processes`)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_no_new_ray_processes(before, timeout_s=20.0):
    """Waits up to `timeout_s` for every Ray process started since `before` to end."""
    deadline = time.time() + timeout_s
    while True:
        left = {pid: command for pid, command in ray_processes().items() if pid not in before}
        if not left or time.time() > deadline:
            break
        time.sleep(0.5)
    assert not left, f"Ray processes outlived the run: {left}"


def read_record(run_dir):
    """The launcher's record of where every node ran (`ray_nodes.json`)."""
    with open(os.path.join(run_dir, RECORD_FILE)) as record_file:
        return json.load(record_file)


def node_pids(record):
    """Every process any incarnation of any node ran in."""
    return [incarnation["pid"] for incarnations in record["nodes"].values()
            for incarnation in incarnations]


# Nodes of a small program for the launcher's own tests (importable by Ray's workers).
class Doubler:
    """Serves `double`."""

    def double(self, value):
        return 2 * value


class Caller:
    """Calls a `Doubler` through its proxy, directly and as a future, and writes the replies."""

    def __init__(self, doubler, out_path):
        self._doubler = doubler
        self._out_path = out_path

    def run(self):
        import launchpad as lp  # pylint: disable=g-import-not-at-top
        replies = {"call": self._doubler.double(21),
                   "future": self._doubler.futures.double(4).result(timeout=60)}
        with open(self._out_path + ".tmp", "w") as out_file:
            json.dump(replies, out_file)
        os.replace(self._out_path + ".tmp", self._out_path)
        lp.wait_for_stop()


class Broken:
    """Fails in its constructor, once `ready_path` exists."""

    def __init__(self, ready_path):
        deadline = time.time() + 60
        while not os.path.exists(ready_path) and time.time() < deadline:
            time.sleep(0.1)
        raise ValueError("broken on purpose")


class BrokenLoop:
    """Its loop fails, watched as every node's loop is (`lifecycle.run_watched`)."""

    def run(self):
        from mava_systems.nodes.lifecycle import run_watched  # pylint: disable=g-import-not-at-top

        def loop():
            raise ValueError("loop broken on purpose")

        run_watched(loop, "broken loop")


class CoresReporter:
    """Writes the cores its process was made on, those each of its threads (and its parent,
    Ray's raylet) may run on to `out_path`; with `stop`, then stops the program (once
    the files `wait_for` names exist)."""

    def __init__(self, out_path, stop=False, wait_for=()):
        self._out_path = out_path
        self._stop = stop
        self._wait_for = wait_for
        self._made_on = sorted(os.sched_getaffinity(0))

    def run(self):
        import launchpad as lp  # pylint: disable=g-import-not-at-top
        threads = {int(entry): sorted(os.sched_getaffinity(int(entry)))
                   for entry in os.listdir("/proc/self/task")}
        report = {"threads": sorted(set(map(tuple, threads.values()))), "made_on": self._made_on,
                  "parent": sorted(os.sched_getaffinity(os.getppid()))}
        with open(self._out_path + ".tmp", "w") as out_file:
            json.dump(report, out_file)
        os.replace(self._out_path + ".tmp", self._out_path)
        if self._stop:
            while not all(os.path.exists(path) for path in self._wait_for):
                time.sleep(0.05)
            lp.stop()
        lp.wait_for_stop()
