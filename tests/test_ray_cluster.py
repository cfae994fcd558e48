"""MADQN on a simulated 3-node Ray cluster on loopback: placement, restarts after SIGKILLs, Ctrl-C.

`ray.cluster_utils.Cluster` starts three Ray nodes in this machine, all on
127.0.0.1, each with its own custom resource (`host_a`, `host_b`, `host_c`).
The MADQN example joins it with `--ray_address`, pins the trainer to host_a
and the replay to host_b, and spreads its executors. Mid-run an executor's
process and then the replay's are SIGKILLed; the run goes on (the executor
rejoins with its count, the replay comes back from its checkpoint on a new
port, the nodes that use it reconnect, the trainer restarts from its
checkpoint) until Ctrl-C stops it, leaving no node process behind.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

from mava_systems.launching import launch
from mava_systems.runs.checkpointing import read_checkpoint
from mava_systems.runs.run_directory import read_status
from fault_helpers import kill_in_tree
import program_helpers
from program_helpers import launch_log, read_csv
from ray_helpers import (assert_no_new_ray_processes, is_running, node_pids, ray_processes,
                         read_record)
from test_madqn_program import SMALL_CONFIG, example_command, read_saves

LOOPBACK = "127.0.0.1"
HOSTS = ("host_a", "host_b", "host_c")


@pytest.fixture(scope="module")
def cluster():
    """A 3-node Ray cluster on 127.0.0.1, shut down (every process ended) after the module."""
    ray_cluster_utils = pytest.importorskip("ray.cluster_utils")
    before = ray_processes()
    os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    simulated = ray_cluster_utils.Cluster(
        initialize_head=True, head_node_args=dict(
            node_ip_address=LOOPBACK, num_cpus=1, resources={HOSTS[0]: 10},
            include_dashboard=False))
    try:
        for host in HOSTS[1:]:
            simulated.add_node(node_ip_address=LOOPBACK, num_cpus=1, resources={host: 10})
        simulated.wait_for_nodes()
        yield simulated
    finally:
        simulated.shutdown()
        assert_no_new_ray_processes(before)


# The test's own budget, in seconds: its waits give up by then, and the test then stops its
# program, well before pytest-timeout's limit for it below. (That limit ends the whole pytest
# worker with `os._exit`, which pytest-xdist reports as "node down: Not properly terminated":
# under load, with pytest.ini's 600 s for every test, this test (2 min 16 s alone) lost its
# worker so, and left its program running.)
TEST_BUDGET_S = 1500
_test_deadline = [float("inf")]


def wait_until(condition, timeout_s, what, process):
    """Polls `condition()` until it is true; fails naming `what` on timeout (`timeout_s`, or the
    test's budget) or if `process` ends."""
    deadline = min(time.time() + timeout_s, _test_deadline[0])
    while not condition():
        assert process.poll() is None, f"the run ended while waiting for {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def record_or_empty(run_dir):
    try:
        return read_record(run_dir)
    except (FileNotFoundError, json.JSONDecodeError):
        return {"nodes": {}}


def incarnations(run_dir, node):
    return record_or_empty(run_dir)["nodes"].get(node, [])


def rows(run_dir, node):
    try:
        return read_csv(run_dir, node)
    except FileNotFoundError:
        return []


def kill_node_process(incarnation):
    """SIGKILLs the Ray worker an incarnation of a node ran in: a process of this test's
    cluster (below this process: the cluster's raylets are its children), never another."""
    assert is_running(incarnation["pid"]), incarnation
    kill_in_tree(os.getpid(), incarnation["pid"])


@pytest.mark.timeout(TEST_BUDGET_S + 300)
def test_madqn_on_a_simulated_cluster_is_placed_survives_kills_and_stops(cluster, tmp_path):
    _test_deadline[0] = time.time() + TEST_BUDGET_S
    run_dir = str(tmp_path / "run")
    saved_counts = []  # The counter's saved executor_steps, each time the test looks.

    def saved_steps():
        saved_counts.append(read_status(run_dir).counts.get("executor_steps", 0))
        return saved_counts[-1]

    flags = ["--num_executors=3", "--max_executor_steps=0", "--checkpoint_interval_s=2",
             "--max_checkpoints_to_keep=100",
             f"--ray_address={cluster.address}", "--ray_group_resources=trainer:host_a=1",
             "--ray_group_resources=replay:host_b=1", "--ray_max_restarts=2"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        # Started as a background job would be, with SIGINT ignored: the launcher installs its
        # own handler (as Launchpad's do), so the Ctrl-C below still stops the run.
        process = subprocess.Popen(example_command(run_dir, *flags, launch_type="ray"),
                                   cwd=program_helpers.ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        # 1. An executor's process is SIGKILLed once it has logged: Ray restarts it.
        wait_until(lambda: rows(run_dir, "executor_0") and incarnations(run_dir, "executor/0"),
                   420, "executor 0's first rows", process)
        executor_steps_at_kill = int(rows(run_dir, "executor_0")[-1]["executor_steps"])
        kill_node_process(incarnations(run_dir, "executor/0")[0])
        wait_until(lambda: len(incarnations(run_dir, "executor/0")) == 2 and saved_steps(), 300,
                   "executor 0's restart", process)

        # 2. Once the trainer has saved itself with replay, the replay's process is SIGKILLed.
        wait_until(lambda: saved_steps() and any(
                       save["node"] == "trainer" and save.get("replay_checkpoint")
                               for save in read_saves(run_dir)), 300, "a trainer checkpoint",
                   process)
        replay_before = incarnations(run_dir, "replay/0")[0]
        trainer_rows_before = len(rows(run_dir, "trainer"))
        kill_node_process(replay_before)
        wait_until(lambda: saved_steps() is not None and len(incarnations(run_dir, "replay/0")) == 2
                   and "address" in incarnations(run_dir, "replay/0")[1], 300,
                   "the replay's restart", process)
        replay_after = incarnations(run_dir, "replay/0")[1]
        wait_until(lambda: len(incarnations(run_dir, "trainer/0")) == 2
                   and len(rows(run_dir, "trainer")) > trainer_rows_before + 1, 300,
                   "the trainer's restart", process)
        steps_after_restarts = saved_steps()
        wait_until(lambda: saved_steps() >= steps_after_restarts + 200, 300,
                   "executor steps after the restarts", process)

        # 3. Ctrl-C stops the run.
        process.send_signal(signal.SIGINT)
        process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # The terminal's output, then the libraries' and nodes' messages (the launcher's among them).
    output = log_path.read_text() + launch_log(os.path.join(run_dir, "output.log"), 0)
    # Stopped by Ctrl-C before its step limit: said, and a non-zero exit (issue 44).
    assert process.returncode == launch.STOPPED_EXIT_CODE, output[-5000:]
    assert ("Ray launcher: stopping (Ctrl-C)" in output
            and "Stopped before the step limit" in output)

    record = read_record(run_dir)
    # Every Ray node, every node's process and both replay addresses are on loopback.
    assert len(record["cluster_nodes"]) == 3
    assert {node["ip"] for node in record["cluster_nodes"]} == {LOOPBACK}
    assert all(incarnation["ip"] == LOOPBACK for incarnations_ in record["nodes"].values()
               for incarnation in incarnations_)
    assert replay_before["address"].startswith(LOOPBACK + ":")
    assert replay_after["address"].startswith(LOOPBACK + ":")
    assert replay_after["address"] != replay_before["address"]  # A new port after the restart.

    # Placement: the trainer and the replay went where they were pinned.
    host_of = {node["node_id"]: next(host for host in HOSTS if host in node["resources"])
               for node in record["cluster_nodes"]}
    nodes = record["nodes"]
    assert {host_of[i["ray_node_id"]] for i in nodes["trainer/0"]} == {"host_a"}
    assert {host_of[i["ray_node_id"]] for i in nodes["replay/0"]} == {"host_b"}
    # Executors are dealt over the 3 nodes, one each, and keep to their node when restarted.
    assert len({nodes[f"executor/{i}"][0]["ray_node_id"] for i in range(3)}) == 3
    assert all(len({i["ray_node_id"] for i in nodes[f"executor/{index}"]}) == 1
               for index in range(3))

    # Restarts: executor 0 was killed once (its own count), the replay once; the nodes using
    # the replay were restarted to reconnect, which does not count against their limit.
    assert record["restarts"]["executor/0"] == 1 and record["restarts"]["replay/0"] == 1
    assert record["restarts"]["trainer/0"] == 0 and record["restarts"]["evaluator/0"] == 0
    assert len(nodes["trainer/0"]) == 2 and len(nodes["evaluator/0"]) == 1
    assert "Ray launcher: restarting trainer/0 to reconnect to replay/0" in output

    # The program's counts (as the counter saved them) only grew through the restarts; executor
    # 0 continued its count. (An executor's own rows may step back by the increments it had not
    # yet sent to the counter when it was killed, at most a second's worth.)
    assert len(saved_counts) > 10 and saved_counts == sorted(saved_counts)
    executor_0 = [int(row["executor_steps"]) for row in rows(run_dir, "executor_0")]
    assert executor_0[-1] > executor_steps_at_kill
    # The restarted replay loaded its checkpoint; the trainer continued from its own: its step
    # went back only to the checkpoint's (the steps after it were lost with the replay's).
    with open(os.path.join(run_dir, "checkpoints", "replay_restore.json")) as restore_file:
        restored = json.load(restore_file)
    # At least 100 transitions, in items of MADQN's default 4.
    assert restored["checkpoint"] is not None and sum(restored["items"].values()) >= 25
    match = re.search(r"trainer: restored from checkpoint (\S+ckpt-\d+)", output)
    assert match, output[-5000:]
    restarted_at = nodes["trainer/0"][1]["started"]
    trainer_saves = [save["path"] for save in read_saves(run_dir)
                     if save["node"] == "trainer" and save["time"] < restarted_at]
    assert match.group(1) == trainer_saves[-1]  # Its latest checkpoint.
    saved_step = next(int(value) for name, value in read_checkpoint(match.group(1)).items()
                      if name.startswith("num_steps/"))
    trainer_steps = [int(row["trainer_steps"]) for row in rows(run_dir, "trainer")]
    assert saved_step > 0
    # Its first row back: where the count stepped back (if the trainer had logged past its
    # checkpoint before the kill), one compiled call after the saved step (two if a call was
    # cut short while the replay restarted).
    steps_per_call = program_helpers.trainer_steps_per_call(run_dir)
    backs = [index for index in range(max(trainer_rows_before, 1), len(trainer_steps))
             if trainer_steps[index] <= trainer_steps[index - 1]]
    assert len(backs) <= 1, trainer_steps[trainer_rows_before - 1:]
    restart = backs[0] if backs else next(
        index for index in range(trainer_rows_before, len(trainer_steps))
        if trainer_steps[index] > saved_step)
    assert saved_step < trainer_steps[restart] <= saved_step + 2 * steps_per_call, (
        saved_step, trainer_steps[trainer_rows_before - 1:])
    assert trainer_steps[restart:] == sorted(trainer_steps[restart:])
    assert trainer_steps[:restart] == sorted(trainer_steps[:restart])

    assert not any(is_running(pid) for pid in node_pids(record))

