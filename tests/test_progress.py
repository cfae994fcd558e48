"""The launcher's progress line: formatting, reading the logs, and both output modes.

A real run's progress lines are checked in test_run_outputs.py.
"""

import csv
import io
import os
import time

import pytest

from mava_systems.terminal import progress
from mava_systems.terminal.progress import ProgressReporter, ProgressSnapshot, format_progress

EXECUTOR_COLUMNS = ["episode_length", "episode_return", "executor_episodes", "executor_steps"]


class CsvLog:
    """A node's logs.csv that a test appends rows to, flushed like the nodes' loggers."""

    def __init__(self, run_dir, node, columns):
        directory = os.path.join(run_dir, "logs", node)
        os.makedirs(directory, exist_ok=True)
        self._file = open(os.path.join(directory, "logs.csv"), "a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=columns)
        self._writer.writeheader()
        self._file.flush()

    def write(self, **row):
        self._writer.writerow(row)
        self._file.flush()

    def close(self):
        self._file.close()


def test_format_with_a_step_limit():
    line = format_progress(ProgressSnapshot(1500, 150, -1.25), 6000, elapsed_s=65.0,
                           steps_per_s=50.0)
    assert line == ("executor steps 1,500/6,000 (25%) | episodes 150 | eval return -1.250 | "
                    "50.0 steps/s | elapsed 0:01:05 | remaining 0:01:30")


def test_format_without_a_limit_rate_or_evaluation():
    line = format_progress(ProgressSnapshot(20, 2, None), None, elapsed_s=3725.0, steps_per_s=None)
    assert line == "executor steps 20 | episodes 2 | eval return n/a | n/a steps/s | elapsed 1:02:05"
    assert format_progress(ProgressSnapshot(20, 2, None), 100, 1.0, None).endswith("remaining n/a")
    assert format_progress(ProgressSnapshot(120, 2, None), 100, 1.0, 5.0).endswith(
        "(100%) | episodes 2 | eval return n/a | 5.0 steps/s | elapsed 0:00:01 | remaining 0:00:00")
    assert format_progress(None, 100, 4.0, None) == (
        "waiting for the first executor episode | elapsed 0:00:04")


def test_step_rate_uses_a_sliding_window():
    rate = progress.CountRate(window_s=10.0)
    assert rate.observe(0.0, 0) is None
    assert rate.observe(5.0, 500) == pytest.approx(100.0)
    assert rate.observe(10.0, 1000) == pytest.approx(100.0)
    # Slower now: after the window has passed, only the recent samples count.
    rate.observe(20.0, 1100)
    assert rate.observe(30.0, 1200) == pytest.approx(10.0)


def test_snapshot_takes_the_newest_counts_of_all_executors_and_the_latest_return(tmp_path):
    run_dir = str(tmp_path)
    assert progress.read_snapshot(run_dir) is None
    executors = [CsvLog(run_dir, f"executor_{i}", EXECUTOR_COLUMNS) for i in range(2)]
    assert progress.read_snapshot(run_dir) is None  # Headers only: no episode yet.
    executors[0].write(episode_length=10, episode_return=-3, executor_episodes=7, executor_steps=70)
    executors[1].write(episode_length=10, episode_return=-3, executor_episodes=9, executor_steps=90)
    executors[0].write(episode_length=10, episode_return=-3, executor_episodes=8, executor_steps=80)
    assert progress.read_snapshot(run_dir) == ProgressSnapshot(90, 9, None)
    evaluator = CsvLog(run_dir, "evaluator", ["evaluation_return", "executor_steps"])
    for value in (-4.0, -2.5):
        evaluator.write(evaluation_return=value, executor_steps=50)
    assert progress.read_snapshot(run_dir) == ProgressSnapshot(90, 9, -2.5)


def test_a_trainer_without_a_step_yet_is_named_instead_of_a_zero_rate(tmp_path):
    run_dir = str(tmp_path)
    executor = CsvLog(run_dir, "executor_0", EXECUTOR_COLUMNS)
    executor.write(episode_length=10, episode_return=-3, executor_episodes=1, executor_steps=64)
    assert not progress.read_snapshot(run_dir).trainer_pending  # No trainer node yet.
    trainer = CsvLog(run_dir, "trainer", ["trainer_steps", "policy_loss"])  # Started: header only.
    snapshot = progress.read_snapshot(run_dir)
    assert snapshot == ProgressSnapshot(64, 1, None, trainer_pending=True)
    # Executors wait on a full queue while the trainer compiles: no "0.0 steps/s".
    for rate in (0.0, None):
        line = format_progress(snapshot, 1000, 30.0, rate)
        assert "| trainer compiling its first step |" in line and "steps/s" not in line
    assert "| 12.5 steps/s (trainer: no step yet) |" in format_progress(snapshot, 1000, 30.0, 12.5)
    trainer.write(trainer_steps=1, policy_loss=0.5)
    snapshot = progress.read_snapshot(run_dir)
    assert not snapshot.trainer_pending
    assert "| 0.0 steps/s |" in format_progress(snapshot, 1000, 30.0, 0.0)
    executor.close()
    trainer.close()


def test_last_row_of_a_long_file_ignores_a_half_written_row(tmp_path):
    log = CsvLog(str(tmp_path), "executor_0", EXECUTOR_COLUMNS)
    for index in range(1, 2001):  # Much longer than the tail that is read.
        log.write(episode_length=10, episode_return=-1, executor_episodes=index,
                  executor_steps=10 * index)
    path = os.path.join(str(tmp_path), "logs", "executor_0", "logs.csv")
    with open(path, "a") as csv_file:
        csv_file.write("10,-1,2001,200")  # A row still being written: no newline yet.
    assert progress.read_last_row(path)["executor_steps"] == "20000"


def test_plain_lines_follow_a_run_that_writes_its_logs(tmp_path):
    """Not a terminal: one full line per interval, no carriage returns, and a final line."""
    run_dir = str(tmp_path)
    stream = io.StringIO()
    reporter = ProgressReporter(run_dir, max_steps=300, stream=stream, interval_s=0.05)
    reporter.start()
    time.sleep(0.2)
    executor = CsvLog(run_dir, "executor_0", EXECUTOR_COLUMNS)
    evaluator = CsvLog(run_dir, "evaluator", ["evaluation_return", "executor_steps"])
    for episode in range(1, 31):
        executor.write(episode_length=10, episode_return=-1, executor_episodes=episode,
                       executor_steps=10 * episode)
        if episode % 10 == 0:
            evaluator.write(evaluation_return=-5.0 + episode / 10, executor_steps=10 * episode)
        time.sleep(0.02)
    time.sleep(0.2)
    reporter.stop()
    executor.close()
    evaluator.close()

    output = stream.getvalue()
    assert "\r" not in output
    lines = output.splitlines()
    assert all(line.startswith("Progress: ") for line in lines), lines
    assert lines[0].startswith("Progress: waiting for the first executor episode")
    steps = [int(line.split("executor steps ")[1].split("/")[0].replace(",", ""))
             for line in lines if "executor steps" in line]
    assert len(steps) >= 5 and steps == sorted(steps) and steps[-1] == 300
    assert lines[-1].startswith("Progress: executor steps 300/300 (100%) | episodes 30 | "
                                "eval return -2.000 | ")
    assert lines[-1].endswith("remaining 0:00:00")
    assert any("steps/s" in line and "n/a steps/s" not in line for line in lines)


def test_on_a_terminal_one_line_is_rewritten_in_place(tmp_path):
    executor = CsvLog(str(tmp_path), "executor_0", EXECUTOR_COLUMNS)
    executor.write(episode_length=10, episode_return=-1, executor_episodes=1, executor_steps=10)
    stream = io.StringIO()
    reporter = ProgressReporter(str(tmp_path), max_steps=None, stream=stream, interval_s=0.02,
                                is_tty=True)
    reporter.start()
    # At least three updates (0.02 s apart; a loaded machine may delay the reporter's thread).
    deadline = time.monotonic() + 10
    while stream.getvalue().count("\r\x1b[K") < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    reporter.stop()
    output = stream.getvalue()
    assert output.count("\n") == 1 and output.endswith("\n")  # Only the final line break.
    updates = output.rstrip("\n").split("\r\x1b[K")[1:]
    assert len(updates) >= 3
    assert all(update.startswith("executor steps 10 | episodes 1 |") for update in updates)


def test_reporting_progress_writes_a_final_line_unless_turned_off(tmp_path, capsys):
    with progress.reporting_progress(str(tmp_path), 100, interval_s=60):
        pass
    assert capsys.readouterr().out.startswith("Progress: waiting for the first executor episode")
    with progress.reporting_progress(str(tmp_path), 100, interval_s=0):
        pass
    assert capsys.readouterr().out == ""
