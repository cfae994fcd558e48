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
    """{pid: command line} of every Ray process running on this machine."""
    found = {}
    for process in psutil.process_iter(["pid", "cmdline", "name"]):
        try:
            command = " ".join(process.info["cmdline"] or [process.info["name"] or ""])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(marker in command for marker in RAY_PROCESS_MARKERS):
            found[process.info["pid"]] = command
    return found


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
