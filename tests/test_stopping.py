"""A program stops cleanly whenever the stop comes, and a finished run is not relaunched.

Each run is the MADQN example in a subprocess on `debug/line_world_v0`. "Cleanly"
means: exit code 0 (`launch.STOPPED_EXIT_CODE` for a stop before the step limit), no node
killed by Launchpad's termination notice, and the trainer's and counter's final checkpoints
saved.
"""

import glob
import os
import signal
import subprocess
import sys
import threading
import time

from launchpad.launch import worker_manager
import pytest

from mava_systems.launching import launch
from mava_systems.nodes import lifecycle
from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import ROOT, read_csv

SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--progress_interval_s=0"]


def command(run_dir, *flags, launch_type):
    return program_helpers.example_command(os.path.join("mpe", "run_madqn.py"), run_dir,
                                           *SMALL_CONFIG, *flags, launch_type=launch_type)


def assert_stopped_cleanly(output, run_dir, ending="Finished."):
    assert ending in output, output[-3000:]
    assert "Killing entire runtime" not in output, output[-3000:]
    assert "did not terminate in time: ['" not in output, output[-3000:]
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node


@pytest.fixture(scope="module")
def coordinator_stopped_run(tmp_path_factory):
    """`launch_type` -> (run_dir, output) of a run the coordinator stopped during start-up: the
    first episode reaches the limit while the trainer and evaluator are still starting. Each
    launch type's run is made once, when a test first asks for it."""
    runs = {}

    def run(launch_type):
        if launch_type not in runs:
            run_dir = str(tmp_path_factory.mktemp(f"coordinator-{launch_type}") / "run")
            output = program_helpers.run_example(
                os.path.join("mpe", "run_madqn.py"), run_dir, *SMALL_CONFIG,
                "--max_executor_steps=1", "--num_executors=2", launch_type=launch_type)
            runs[launch_type] = run_dir, output
        return runs[launch_type]

    return run


@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_a_stop_by_the_coordinator_during_start_up_ends_every_node_cleanly(
        coordinator_stopped_run, launch_type):
    run_dir, output = coordinator_stopped_run(launch_type)
    assert_stopped_cleanly(output, run_dir)
    steps = int(read_status(run_dir).counts["executor_steps"])
    assert 1 <= steps <= 2 * 10  # One 10-step episode per executor at most.
    assert read_csv(run_dir, "evaluator")[-1]["final"] == "1"


def test_a_relaunch_of_a_finished_run_is_refused_without_starting_it(coordinator_stopped_run):
    run_dir, _ = coordinator_stopped_run("local_mp")
    steps = int(read_status(run_dir).counts["executor_steps"])
    start = time.time()
    relaunch = program_helpers.run_example(os.path.join("mpe", "run_madqn.py"), run_dir,
                                           *SMALL_CONFIG, "--max_executor_steps=1",
                                           "--num_executors=2", launch_type="local_mp")
    assert f"already reached max_executor_steps=1; raise it to continue" in relaunch
    assert relaunch.count("already reached") == 1  # Not again at exit (issue 26).
    assert "Run directory:" not in relaunch  # No program was launched.
    assert int(read_status(run_dir).counts["executor_steps"]) == steps
    print(f"relaunch refused in {time.time() - start:.1f} s")


@pytest.mark.parametrize("own_notice_s, expected_s", [(10, 600), (-1, -1)],
                         ids=["node_process", "thread_launcher"])
def test_a_node_process_takes_the_launchers_termination_notice(monkeypatch, own_notice_s,
                                                               expected_s):
    """Launchpad gives every `local_mp` node process its default notice (10 s), whatever the
    launcher's: the node, built through `StopsProgramIfBuildFails`, takes the launcher's from
    the environment. A manager that is not its process's main one (notice -1) has none."""

    class NodeProcessManager:  # What Launchpad's process entry point makes, for what matters.
        _termination_notice_secs = own_notice_s

    monkeypatch.setenv(lifecycle.NODE_NOTICE_ENV, "600")
    outcome = {}

    def node_process() -> None:  # A thread: the manager is thread-local, as in Launchpad.
        manager = NodeProcessManager()
        worker_manager._WORKER_MANAGERS.manager = manager  # pylint: disable=protected-access
        outcome["built"] = lifecycle.StopsProgramIfBuildFails(lambda: "node", "trainer/0")()
        outcome["notice_s"] = manager._termination_notice_secs  # pylint: disable=protected-access

    thread = threading.Thread(target=node_process)
    thread.start()
    thread.join(10)
    assert outcome == {"built": "node", "notice_s": expected_s}


# A program whose build is interrupted by `signal_name` (as a Ctrl-C right after "Run
# directory:" is printed can be), launched with `launch.launch`.
SIGNAL_DURING_BUILD = """
import signal, sys
from absl import flags
import launchpad as lp
from mava_systems.launching import launch
flags.FLAGS.mark_as_parsed()

class Node:
    def run(self):
        print("node running", flush=True)
        lp.wait_for_stop()

def build():
    signal.raise_signal(getattr(signal, sys.argv[1]))  # Held: the build goes on.
    program = lp.Program("held")
    program.add_node(lp.CourierNode(Node), label="node")
    print("built", flush=True)
    return program

launch.launch(build, sys.argv[2])
print("launch returned", flush=True)
"""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_a_signal_while_the_program_is_built_ends_the_launch_before_it_starts(signal_name,
                                                                              launch_type):
    """Not a KeyboardInterrupt (or death by SIGTERM) in the middle of building it: nothing is
    launched, the launcher says so and returns."""
    result = subprocess.run([sys.executable, "-c", SIGNAL_DURING_BUILD, signal_name, launch_type],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert (f"Stopped by {signal_name} while the program was being built: nothing was "
            "launched") in output, output[-3000:]
    assert output.index("built") < output.index("launch returned"), output[-3000:]
    assert "node running" not in output, output[-3000:]  # No node started.
    assert "KeyboardInterrupt" not in output and "Traceback" not in output


# Every signal in both launch types; the delays spread the stops over start-up (each node is
# still being built at 0-1 s on this machine; on a fast one some may be running already).
@pytest.mark.parametrize("launch_type, signal_number, after_s", [
    ("local_mt", signal.SIGTERM, 1.0),
    ("local_mt", signal.SIGINT, 0.0),
    ("local_mp", signal.SIGINT, 3.0),
    ("local_mp", signal.SIGTERM, 2.0),
])
def test_a_signal_during_start_up_ends_every_node_cleanly(tmp_path, launch_type, signal_number,
                                                         after_s):
    """Ctrl-C (SIGINT) or SIGTERM `after_s` after the launch, while the nodes are being built.

    A node sees the stop once its modules are imported; on a machine busy with other work
    that took longer than Launchpad's 60 s notice, which then killed healthy nodes. The
    notice is made long enough for that: a node that never ends still fails the test (the
    wait below gives up first).
    """
    run_dir = str(tmp_path / "run")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    process = subprocess.Popen(command(run_dir, "--max_executor_steps=100000",
                                       "--num_executors=2", "--lp_termination_notice_secs=600",
                                       launch_type=launch_type),
                               cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.time() + 120
        while not any(line.startswith("Run directory:") for line in list(lines)):
            assert process.poll() is None and time.time() < deadline, "".join(lines)[-3000:]
            time.sleep(0.1)
        time.sleep(after_s)  # "Run directory:" is printed just before the launch.
        process.send_signal(signal_number)
        process.wait(timeout=240)
        reader.join(10)
    finally:
        process.kill()
    output = "".join(lines) + program_helpers.launch_log(os.path.join(run_dir, "output.log"), 0)
    # Stopped before its step limit: the launcher says so and exits non-zero (issue 44).
    assert process.returncode == launch.STOPPED_EXIT_CODE, output[-3000:]
    if "while the program was being built: nothing was launched" in output:
        # The stop came before the launch (a busy machine builds slowly): nothing ran.
        assert "Traceback" not in output, output[-3000:]
        assert not read_status(run_dir).resumed  # No checkpoint: the next launch starts afresh.
        return
    assert_stopped_cleanly(output, run_dir, ending="Stopped before the step limit")


def test_a_loop_that_fails_stops_the_whole_program_and_raises_its_error(monkeypatch, tmp_path):
    """Under local_mp nothing else would: the other nodes would wait on the failed one forever.
    The launching process learns of the failure from the file it named."""
    from launchpad import context as lp_context

    from mava_systems.nodes.lifecycle import (NODE_FAILURES_FILE_ENV, ProgramStopping,
                                              run_watched)

    failures_path = tmp_path / "failures.txt"
    monkeypatch.setenv(NODE_FAILURES_FILE_ENV, str(failures_path))

    stops = []
    launch_context = lp_context.LaunchContext()
    launch_context.initialize(lp_context.LaunchType.LOCAL_MULTI_PROCESSING, None,
                              program_stopper=lambda: stops.append(True))
    previous = getattr(lp_context._LAUNCH_CONTEXT, "lp_context", None)  # pylint: disable=protected-access
    lp_context.set_context(launch_context)
    try:
        def failing_loop():
            raise RuntimeError("Deadline Exceeded")

        with pytest.raises(RuntimeError, match="Deadline Exceeded"):
            run_watched(failing_loop, "environment loop")
        assert stops == [True]

        def stopping_loop():  # Ending because the program stops is no failure.
            raise ProgramStopping()

        with pytest.raises(ProgramStopping):
            run_watched(stopping_loop, "environment loop")
        assert run_watched(lambda: None, "environment loop")
        assert stops == [True]
        assert failures_path.read_text() == (
            "environment loop failed: RuntimeError: Deadline Exceeded\n")
    finally:
        lp_context._LAUNCH_CONTEXT.lp_context = previous  # pylint: disable=protected-access


EXECUTOR_FAILING_TO_BUILD = """
import sys

from mava_systems.terminal import console

console.quiet_terminal()

from absl import app

from mava_systems import madqn
from mava_systems.launching import launch
import wrappers


class BrokenExecutorMADQN(madqn.MADQN):
    def executor(self, *args, **kwargs):
        raise ValueError("executor broken on purpose")


def main(_):
    system = BrokenExecutorMADQN(
        environment_factory=wrappers.make_environment_factory("debug/line_world_v0"),
        num_executors=1, max_executor_steps=2000, run_dir=sys.argv[1],
        config=madqn.MADQNConfig(min_replay_size=100, batch_size=32))
    launch.run(system, "local_mp", start_fresh=True, progress_interval_s=0)


app.run(main)
"""


def test_a_node_failing_to_build_under_local_mp_stops_the_program_which_exits_with_its_error(
        tmp_path):
    """Launchpad cannot read a local_mp node's exit status: without the stop, the other nodes
    would wait on the executor forever, and a run that failed would exit 0."""
    run_dir = str(tmp_path / "run")
    process = subprocess.Popen(
        [sys.executable, "-c", EXECUTOR_FAILING_TO_BUILD, run_dir], cwd=ROOT,
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"the program did not stop after a node failed to build:\n{output[-3000:]}")
    failure = "executor/0 (while being built) failed: ValueError: executor broken on purpose"
    assert process.returncode == 1, output[-3000:]
    assert f"Stopped because a node failed ({failure})." in output, output[-3000:]
    assert f"error: the run stopped because a node failed: {failure}" in output, output[-3000:]
    # What the other nodes had was saved as at any stop.
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node
