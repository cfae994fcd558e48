"""A node that dies mid-run is noticed at once and handled by its group's policy; Ctrl-C twice
still saves; a loop is given up at the stop only when it is really blocked.

Policy (`mava_systems.launching.node_processes`): under local_mp an executor, the
evaluator or a cache that dies is started again in place (counts continuing)
up to `--max_node_restarts` times; a dead replay, trainer or counter stops the
run: every other node saves, the terminal names the node, its signal and the
resume command, and the launcher exits with status 1. Under local_mt a node
thread that fails stops the run the same way.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from mava_systems.launching import allocator, launch
from mava_systems.nodes import lifecycle
from mava_systems.runs.run_directory import read_status
import program_helpers
from fault_helpers import OutputLines, in_tree, kill_in_tree, node_processes, wait_for_node
from program_helpers import ROOT, read_csv

# Seconds from a node's death to the terminal line saying so (the launcher notices within a
# second; the bound leaves room for a machine loaded with other tests).
DETECTION_BOUND_S = 10
SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--progress_interval_s=0",
                "--checkpoint_interval_s=2", "--num_executors=2"]
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")

SUPERVISED_SLEEPERS = """
import json, os, signal, sys, threading, time

from absl import flags

flags.FLAGS.mark_as_parsed()
from mava_systems.launching import node_processes

supervisor = node_processes.NodeSupervisor(max_restarts=1, say=print)
# A node that stops at SIGTERM, or (":stubborn") one that ignores it, as if saving for ever.
on_sigterm = {False: "lambda *_: sys.exit(0)", True: "signal.SIG_IGN"}
for argument in sys.argv[1:]:
    name, _, stubborn = argument.partition(":")
    sleeper = [sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGTERM, "
               f"{on_sigterm[bool(stubborn)]}); time.sleep(120)"]
    supervisor.start(node_processes.NodeCommand(name, sleeper, dict(os.environ)))
print("started", json.dumps(supervisor.node_pids()), flush=True)
supervisor.wait()
print("ended", json.dumps({"failures": supervisor.failures, "restarts": supervisor.restarts,
                           "deaths": [death[0] for death in supervisor.deaths],
                           "killed_by_user": supervisor.killed_by_user}), flush=True)
"""


def start_sleepers(*names):
    process = subprocess.Popen([sys.executable, "-c", SUPERVISED_SLEEPERS, *names], cwd=ROOT,
                               env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    output = OutputLines(process.stdout)
    output.wait_for("started", 60, process)
    line = next(line for line in output.lines if line.startswith("started"))
    return process, output, json.loads(line.split(" ", 1)[1])


def ended(process, output):
    process.wait(timeout=60)
    output.join()
    line = next(line for line in output.lines if line.startswith("ended"))
    return json.loads(line.split(" ", 1)[1])


def test_a_dead_executor_is_restarted_until_its_limit_then_the_program_stops():
    process, output, pids = start_sleepers("executor/0", "executor/1")
    try:
        killed_at = time.time()
        kill_in_tree(process.pid, pids["executor/0"])
        noticed_at = output.wait_for("executor/0 died (killed by SIGKILL)", 10, process)
        assert noticed_at - killed_at < 2
        assert "restart 1 of 1 allowed" in output.text()
        restarted = wait_for_node(process.pid, "executor/0", 30, other_than=pids["executor/0"])
        kill_in_tree(process.pid, restarted)
        output.wait_for("error: executor/0 killed by SIGKILL", 10, process)
        result = ended(process, output)  # executor/1 was asked to stop, and did.
    finally:
        process.kill()
    assert process.returncode == 0, output.text()
    assert result == {"failures": ["executor/0 killed by SIGKILL"], "restarts":
                      {"executor/0": 1, "executor/1": 0}, "deaths": ["executor/0"] * 2,
                      "killed_by_user": False}
    assert "restarted 1 time(s) already, as many as --max_node_restarts allows" in output.text()


def test_a_dead_replay_stops_the_program_at_once():
    process, output, pids = start_sleepers("replay/0", "executor/0")
    try:
        kill_in_tree(process.pid, pids["replay/0"])
        output.wait_for("a replay node is not restarted: stopping the run", 10, process)
        result = ended(process, output)
    finally:
        process.kill()
    assert result["failures"] == ["replay/0 killed by SIGKILL"]
    assert result["restarts"] == {"replay/0": 0, "executor/0": 0}


def ignores_sigterm(pid):
    with open(f"/proc/{pid}/status") as status:
        ignored = next(line for line in status if line.startswith("SigIgn:")).split()[1]
    return bool(int(ignored, 16) >> (signal.SIGTERM - 1) & 1)


def test_ctrl_c_twice_waits_for_the_nodes_a_third_kills_them():
    """The second Ctrl-C only says the nodes are still saving; the third kills them (here a
    node that would never end by itself)."""
    process, output, pids = start_sleepers("trainer/0:stubborn")
    try:
        deadline = time.time() + 30
        while not ignores_sigterm(pids["trainer/0"]):  # Not before it ignores it.
            assert time.time() < deadline, "the node never set its SIGTERM handler"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        output.wait_for("Stopping (Ctrl-C): the nodes save their checkpoints", 10, process)
        process.send_signal(signal.SIGINT)
        output.wait_for("Still stopping: the nodes are saving their checkpoints", 10, process)
        time.sleep(1)
        assert psutil.pid_exists(pids["trainer/0"]) and process.poll() is None
        process.send_signal(signal.SIGINT)
        output.wait_for("Killing the nodes (third Ctrl-C)", 10, process)
        result = ended(process, output)
    finally:
        process.kill()
    assert result["killed_by_user"] and not result["failures"]
    assert not psutil.pid_exists(pids["trainer/0"]) or \
        psutil.Process(pids["trainer/0"]).status() == psutil.STATUS_ZOMBIE


def test_a_kill_outside_the_program_under_test_is_refused():
    process, output, pids = start_sleepers("executor/0")
    try:
        assert in_tree(process.pid, pids["executor/0"])
        for outside in (os.getpid(), os.getppid(), 1):
            assert not in_tree(process.pid, outside)
            with pytest.raises(AssertionError, match="not part of the program under test"):
                kill_in_tree(process.pid, outside)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        process.kill()


def run_until(command, wait, stop):
    """Runs `command`; calls `wait(process, output)` then `stop(process, output)`; returns the
    process (ended) and its output."""
    process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output = OutputLines(process.stdout)
    try:
        wait(process, output)
        stop(process, output)
        process.wait(timeout=180)
        output.join()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process, output.text()


def rows(run_dir, node):
    try:
        return read_csv(run_dir, node)
    except FileNotFoundError:
        return []


def wait_for_rows(run_dir, node, count, process, timeout_s=240):
    deadline = time.time() + timeout_s
    while len(rows(run_dir, node)) < count:
        assert process.poll() is None, f"the run ended before {node} logged {count} rows"
        assert time.time() < deadline, f"{node} logged fewer than {count} rows"
        time.sleep(0.2)


def checkpoints(run_dir, node):
    """The node's checkpoint index files, oldest first (by number: ckpt-10 after ckpt-9)."""
    paths = glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index"))
    return sorted(paths, key=lambda path: int(os.path.basename(path)[len("ckpt-"):-len(".index")]))


def kill_node_and_wait_for_stop(run_dir, node, times):
    """A `wait` for `run_until`: kills `node` once the trainer has logged (recording when in
    `times`), and checks the launcher says so within the bound."""

    def kill(process, output):
        wait_for_rows(run_dir, "trainer", len(rows(run_dir, "trainer")) + 2, process)
        times[node] = time.time()
        kill_in_tree(process.pid, wait_for_node(process.pid, node, 10))
        noticed = output.wait_for(f"error: {node} killed by SIGKILL", DETECTION_BOUND_S, process)
        assert noticed - times[node] < DETECTION_BOUND_S

    return kill


def assert_stopped_for(process, output, node, run_dir):
    """The launch ended with status 1, the summary and one error line naming `node`, its
    signal and the command resuming the run."""
    assert process.returncode == 1, output[-3000:]
    assert f"Stopped because a node failed ({node} killed by SIGKILL)." in output, output[-3000:]
    error = next(line for line in output.splitlines()
                 if line.startswith("error: the run stopped because a node failed:"))
    assert f"{node} killed by SIGKILL; resume with: " in error, error
    assert f"--run_dir={run_dir}" in error and "run_madqn.py" in error, error


# Three launches: 2-3 minutes on a quiet machine, 9 under a load of 20 (pytest.ini's 600 s limit
# would end the whole pytest worker).
@pytest.mark.timeout(1500)
def test_local_mp_restarts_a_killed_executor_and_stops_for_a_dead_trainer_or_replay(tmp_path):
    """Launch 1: executor 0 is SIGKILLed mid-run: it is started again and its count continues;
    then the trainer is SIGKILLed: the run stops within the bound (exit status 1, the terminal
    naming the node, the signal and the resume command). Launch 2, the same command, resumes
    it; the replay is SIGKILLed: the same. Launch 3 resumes again, and a double Ctrl-C (the
    second 1 s after the first) stops it cleanly: final checkpoints and the summary written,
    the exit status `launch.STOPPED_EXIT_CODE` (stopped before its step limit)."""
    run_dir = str(tmp_path / "run")
    command = program_helpers.example_command(os.path.join("mpe", "run_madqn.py"), run_dir,
                                              *SMALL_CONFIG, "--max_executor_steps=0",
                                              launch_type="local_mp")
    times = {}
    kill_trainer = kill_node_and_wait_for_stop(run_dir, "trainer/0", times)

    def kill_executor(process, output):
        wait_for_rows(run_dir, "executor_0", 2, process)
        pid = wait_for_node(process.pid, "executor/0", 10)
        for node in ("executor/0", "trainer/0", "replay/0"):
            times[f"{node} jemalloc"] = allocator.runs_jemalloc(
                wait_for_node(process.pid, node, 10))
        times["executor_steps"] = int(rows(run_dir, "executor_0")[-1]["executor_steps"])
        times["executor/0"] = time.time()
        kill_in_tree(process.pid, pid)
        noticed = output.wait_for("warning: executor/0 died (killed by SIGKILL)",
                                  DETECTION_BOUND_S, process)
        assert noticed - times["executor/0"] < DETECTION_BOUND_S
        wait_for_node(process.pid, "executor/0", 60, other_than=pid)
        wait_for_rows(run_dir, "executor_0", len(rows(run_dir, "executor_0")) + 2, process)
        kill_trainer(process, output)

    first, output = run_until(command, kill_executor, lambda *_: None)
    assert_stopped_for(first, output, "trainer/0", run_dir)
    assert "restart 1 of 3 allowed" in output
    # The nodes run with jemalloc (`--allocator` auto; Ray's wheel ships it).
    assert all(times[f"{node} jemalloc"] for node in ("executor/0", "trainer/0", "replay/0"))
    # Executor 0 continued its count after its restart (read from the counter), never from 0.
    executor_0 = [int(row["executor_steps"]) for row in rows(run_dir, "executor_0")]
    assert executor_0[-1] > times["executor_steps"] and min(executor_0) > 0
    counts = [read_status(run_dir).counts["executor_steps"]]
    assert counts[0] > 0

    def resumed_then(kill):
        def wait(process, output):
            output.wait_for("Resuming the run", 120, process)
            kill(process, output)
        return wait

    second, output = run_until(
        command, resumed_then(kill_node_and_wait_for_stop(run_dir, "replay/0", times)),
        lambda *_: None)
    assert_stopped_for(second, output, "replay/0", run_dir)
    counts.append(read_status(run_dir).counts["executor_steps"])
    trainer_checkpoints = checkpoints(run_dir, "trainer")

    def ctrl_c_twice(process, output):
        process.send_signal(signal.SIGINT)
        time.sleep(1)
        process.send_signal(signal.SIGINT)

    def progress(process, output):
        wait_for_rows(run_dir, "trainer", len(rows(run_dir, "trainer")) + 2, process)

    third, output = run_until(command, resumed_then(progress), ctrl_c_twice)
    # Stopped by the user before its (unlimited) step limit: said, and a non-zero exit (issue 44).
    assert third.returncode == launch.STOPPED_EXIT_CODE, output[-3000:]
    assert "Still stopping: the nodes are saving their checkpoints" in output, output[-3000:]
    assert "Killing" not in output and "Stopped before the step limit" in output, output[-3000:]
    assert checkpoints(run_dir, "trainer")[-1] not in trainer_checkpoints  # Saved at the stop.
    counts.append(read_status(run_dir).counts["executor_steps"])
    assert counts == sorted(counts) and counts[-1] > counts[0], counts


FAILING_EXECUTOR_THREAD = """
import sys

from mava_systems.terminal import console

console.quiet_terminal()

from absl import app

from mava_systems import madqn
from mava_systems.launching import launch
import wrappers


class FailingAfterSteps:
    def __init__(self, environment, steps):
        self._environment, self._steps = environment, steps

    def step(self, actions):
        self._steps -= 1
        if self._steps < 0:
            raise RuntimeError("environment broken on purpose")
        return self._environment.step(actions)

    def __getattr__(self, name):
        return getattr(self._environment, name)


def failing_factory(evaluation=False, **kwargs):
    environment = wrappers.make_environment_factory("debug/line_world_v0")(
        evaluation=evaluation, **kwargs)
    return environment if evaluation else FailingAfterSteps(environment, 300)


def main(_):
    system = madqn.MADQN(environment_factory=failing_factory, num_executors=1,
                         max_executor_steps=100000, run_dir=sys.argv[1],
                         config=madqn.MADQNConfig(min_replay_size=100, batch_size=32))
    launch.run(system, "local_mt", start_fresh=True, progress_interval_s=0)


app.run(main)
"""


def test_a_local_mt_node_thread_that_fails_stops_the_run_with_its_error(tmp_path):
    run_dir = str(tmp_path / "run")

    def wait(process, output):
        output.wait_for("error: the run stopped because a node failed", 240, process)

    process, output = run_until([sys.executable, "-c", FAILING_EXECUTOR_THREAD, run_dir], wait,
                                lambda *_: None)
    assert process.returncode == 1, output[-3000:]
    assert ("environment loop failed: EnvironmentFailure: environment line_world_v0: step() "
            "raised RuntimeError: environment broken on purpose") in output, output[-3000:]
    assert "resume with: " in output
    for node in ("trainer", "counter"):
        assert checkpoints(run_dir, node), node


def _stop_after(event, seconds):
    threading.Timer(seconds, event.set).start()


def test_a_loop_still_working_after_the_stop_is_waited_for_a_blocked_one_given_up(
        monkeypatch, caplog):
    """The false alarm of clean runs: a loop finishing a long last step or checkpoint is not
    blocked. One that waits without moving is given up `grace_s` after the stop, with one
    warning line saying where it waits."""
    stop = threading.Event()
    monkeypatch.setattr(lifecycle, "program_stop_event", lambda: stop)
    monkeypatch.setattr(lifecycle, "_ABANDONED", [])

    def working_loop():  # Computes for 3 s after the stop (its stack changes as it goes).
        stop.wait()
        deadline = time.monotonic() + 3.0
        total = 0
        while time.monotonic() < deadline:
            total += sum(range(1000))

    _stop_after(stop, 0.3)
    started = time.monotonic()
    assert lifecycle.run_watched(working_loop, "working loop", grace_s=1.0)
    assert time.monotonic() - started >= 3.0
    assert "did not return" not in caplog.text

    stop.clear()
    release = threading.Event()

    def blocked_loop():  # Waits on something that never comes (a node that has gone).
        release.wait()

    _stop_after(stop, 0.3)
    started = time.monotonic()
    try:
        assert not lifecycle.run_watched(blocked_loop, "blocked loop", grace_s=1.0)
        assert 1.0 <= time.monotonic() - started < 5.0
    finally:
        release.set()
    warnings = [record.getMessage() for record in caplog.records
                if "did not return" in record.getMessage()]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert "It waits in threading.py:" in warnings[0] and "in blocked_loop" in warnings[0]
    assert lifecycle._ABANDONED == ["blocked loop"]  # pylint: disable=protected-access


AFTER_THE_PROGRAM = """
import sys
from mava_systems.nodes import lifecycle
lifecycle._ABANDONED.append("trainer loop")  # As `run_watched` does when it gives a loop up.
with lifecycle.work_after_the_program():
    lifecycle.exit_if_loops_were_abandoned(0)  # What the launch calls: the process goes on.
    print("final evaluation", flush=True)
    if sys.argv[1] == "interrupted":
        sys.exit(3)
lifecycle.exit_if_loops_were_abandoned(0, final=True)
print("never printed", flush=True)
"""


@pytest.mark.parametrize("outcome, exit_code", [("finished", 0), ("interrupted", 3)])
def test_a_loop_given_up_at_the_stop_leaves_the_work_after_the_program_done(outcome, exit_code):
    """A grid run whose trainer loop was given up at the stop (local_mt) still saves its final
    evaluation; the process then ends at once, with the code of the run's outcome."""
    result = subprocess.run([sys.executable, "-c", AFTER_THE_PROGRAM, outcome],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == exit_code, result.stderr[-2000:]
    assert "final evaluation" in result.stdout and "never printed" not in result.stdout
