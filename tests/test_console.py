"""The quiet terminal: output capture, the lines that still reach the user, the random baseline.

A whole run's terminal output is checked in test_run_outputs.py.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mava_systems.terminal import console, log_watch, run_summary
from mava_systems.acting.random_policy import RandomExecutor, random_policy_return
import wrappers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_FILES = frozenset({"checkpointing.py", "system.py"})


@pytest.mark.parametrize("argv, verbose", [
    (["run.py"], False), (["run.py", "--env=x"], False), (["run.py", "--verbose"], True),
    (["run.py", "--verbose=true"], True), (["run.py", "--verbose=false"], False),
    (["run.py", "--noverbose"], False), (["run.py", "-v=1"], True), (["run.py", "--v=2"], True),
    (["run.py", "--verbosity=1"], True), (["run.py", "--alsologtostderr"], True),
    (["run.py", "--", "--verbose"], False)])
def test_verbose_is_asked_for_by_verbose_or_absl_verbosity_flags(argv, verbose):
    assert console.verbose_requested(argv) is verbose


def run_script(tmp_path, body):
    """Runs a small Python program that uses `console`; (stdout, stderr, exit code)."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(body))
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    return result.stdout, result.stderr, result.returncode


def test_captured_output_goes_to_the_run_s_log_and_the_terminal_gets_what_is_said(tmp_path):
    run_dir = tmp_path / "run"
    stdout, stderr, code = run_script(tmp_path, f"""
        import os, subprocess, sys
        from mava_systems.terminal import console
        console.quiet_terminal(["program.py"])
        os.write(2, b"2026-12-01 00:00:00.000001: W tensorflow/dso_loader.cc:64] no cuda\\n")
        print("before the run directory")
        console.attach_run_dir({str(run_dir)!r}, "==== header\\n")
        subprocess.run([sys.executable, "-c", "print('from a child process')"])
        sys.stderr.write("I1201 00:00:00.000001 1 node.py:1] an absl line\\n")
        console.say(["Starting a fresh run", "Run directory: x"])
        console.report_error("warning: look at this")
    """)
    assert code == 0, stderr
    assert stdout == "Starting a fresh run\nRun directory: x\n"
    assert stderr == "warning: look at this\n"
    log = (run_dir / console.LOG_FILE).read_text()
    assert log.splitlines() == [
        "==== header", "2026-12-01 00:00:00.000001: W tensorflow/dso_loader.cc:64] no cuda",
        "before the run directory", "from a child process",
        "I1201 00:00:00.000001 1 node.py:1] an absl line", "Starting a fresh run",
        "Run directory: x"]


def test_a_program_that_stops_before_its_run_shows_its_messages_without_noise(tmp_path):
    stdout, stderr, code = run_script(tmp_path, """
        import sys
        from mava_systems.terminal import console
        console.quiet_terminal(["program.py"])
        sys.stderr.write("2026-12-01 00:00:00.000001: I tensorflow/cudart_stub.cc:29] Ignore\\n")
        sys.stderr.write("Gym has been unmaintained since 2022\\n")
        print("usage: program.py --flags")
        sys.exit("FATAL Flags parsing error: bad flag")
    """)
    assert code == 1 and stdout == ""
    assert stderr.splitlines() == ["usage: program.py --flags", "FATAL Flags parsing error: bad flag"]


def test_an_uncaught_exception_says_where_its_traceback_is(tmp_path):
    run_dir = tmp_path / "run"
    _, stderr, code = run_script(tmp_path, f"""
        from mava_systems.terminal import console
        console.quiet_terminal(["program.py"])
        console.attach_run_dir({str(run_dir)!r})
        raise RuntimeError("a node crashed")
    """)
    assert code == 1
    assert stderr == (f"error: RuntimeError: a node crashed (the traceback is in "
                      f"{run_dir / console.LOG_FILE})\n")
    assert "Traceback (most recent call last)" in (run_dir / console.LOG_FILE).read_text()


@pytest.mark.parametrize("line, shown", [
    ("W1201 00:00:01.000001 140 checkpointing.py:141] trainer: skipping ckpt-2",
     "warning: trainer: skipping ckpt-2"),
    ("W1201 00:00:01.000001 140 some_library.py:10] a library's warning", None),
    ("E1201 00:00:01.000001 140 some_library.py:10] it broke", "error: it broke"),
    ("I1201 00:00:01.000001 140 system.py:156] executor_0 explores", None),
    ("2026-12-01 00:00:01.000001: W tensorflow/dso_loader.cc:64] Could not load", None),
    ("\x1b[34mWaiting for workers to stop for 60s.\x1b[0m", None),
    ("\x1b[31mWorker groups that did not terminate in time: ['trainer']\x1b[0m",
     "Worker groups that did not terminate in time: ['trainer']"),
    ("Node <ThreadWorker trainer> crashed:", "Node <ThreadWorker trainer> crashed:"),
    # local_mp: Launchpad prefixes each node's (coloured) lines with its group and index.
    ("\x1b[1;32m[trainer/0] W1201 00:00:01.000001 140 checkpointing.py:141] skipping ckpt-2"
     "\x1b[0;0m", "warning: [trainer/0] skipping ckpt-2"),
    ("\x1b[1;32m[trainer/0] I1201 00:00:01.000001 140 checkpointing.py:141] saved\x1b[0;0m", None),
])
def test_only_lines_that_need_attention_are_shown(line, shown):
    assert log_watch.attention_line(line, OWN_FILES) == shown


def test_the_project_s_own_files_are_known_by_base_name():
    files = log_watch.project_files()
    assert {"checkpointing.py", "system.py", "launch.py", "pettingzoo_aec.py"} <= files
    assert "__init__.py" not in files


def test_the_watcher_follows_a_growing_log_from_its_offset(tmp_path):
    path = tmp_path / "output.log"
    path.write_bytes(b"E1201 00:00:01.000001 1 old.py:1] an earlier launch's error\n")
    shown = []
    watcher = log_watch.LogWatcher(str(path), shown.append, offset=path.stat().st_size,
                                   own_files=OWN_FILES)
    with open(path, "ab") as log_file:
        log_file.write(b"Waiting for workers to stop for 60s.\rW1201 00:00:02.000001 1 "
                       b"system.py:140] Dropped a row\nE1201 00:00:03.000001 1 x.py:1] half")
    assert watcher.poll() == ["warning: Dropped a row"]
    with open(path, "ab") as log_file:
        log_file.write(b" written\n")
    assert watcher.poll() == ["error: half written"]
    assert shown == ["warning: Dropped a row", "error: half written"]


def test_the_random_executor_picks_only_legal_actions():
    executor = RandomExecutor({"a": wrappers.make_environment_factory(
        "debug/line_world_v0")().action_spec()["agent_0"]}, seed=0)
    legal = np.zeros(executor._specs["a"].num_values, dtype=np.float32)  # pylint: disable=protected-access
    legal[[0, 2]] = 1
    observation = wrappers.OLT(np.zeros(2), legal, np.zeros(()))
    actions = {int(executor.select_actions({"a": observation})["a"]) for _ in range(200)}
    assert actions == {0, 2}


def test_random_policy_return_on_line_world(line_world_factory):
    baseline = random_policy_return(line_world_factory, episodes=100, seed=0)
    assert baseline.episodes == 100
    # Each of the 2 agents gets the team reward: about 2 x -3.2 summed (the env's docstring).
    assert -7.5 < baseline.mean_return < -5.3
    assert random_policy_return(line_world_factory, episodes=100, seed=0) == baseline


def test_the_random_baseline_is_measured_once_per_run(tmp_path, line_world_factory):
    first = run_summary.random_baseline(str(tmp_path), line_world_factory, seed=1, episodes=20)
    assert first.episodes == 20
    assert (tmp_path / run_summary.RANDOM_POLICY_FILE).exists()
    # Kept: a second call reads it back (it would measure 5 episodes otherwise).
    assert run_summary.random_baseline(str(tmp_path), line_world_factory, seed=1,
                                       episodes=5) == first
    assert run_summary.random_baseline(str(tmp_path), line_world_factory, seed=2,
                                       episodes=5).episodes == 5


def test_the_resume_command_repeats_the_flags_with_this_run_dir_and_a_higher_limit():
    command = run_summary.resume_command(
        ["examples/mpe/run_madqn.py", "--lp_launch_type=local_mt", "--max_executor_steps=500",
         "--start_fresh", "--run_dir=elsewhere", "--seed=3"], "/abs/run", "max_executor_steps",
        1000)
    assert command.endswith("examples/mpe/run_madqn.py --lp_launch_type=local_mt --seed=3 "
                            "--run_dir=/abs/run --max_executor_steps=1000")


@pytest.mark.parametrize("name", ["executor", "trainer", "program", "learning", "checkpoint",
                                  "logger_memory", "environments", "faults"])
def test_benchmarks_run_as_files(name):
    result = subprocess.run([sys.executable, os.path.join("benchmarks", f"{name}.py"), "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
