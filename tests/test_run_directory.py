"""A reused run directory: saved description checks, and the status read from its checkpoints."""

import csv
import json
import os
import shutil
import time

import pytest
import sonnet as snt
from tensorboard.backend.event_processing import plugin_event_accumulator as event_accumulator
import tensorflow as tf

from mava_systems import madqn
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.nodes.counting import CheckpointedCounter
from mava_systems.runs.logging import TensorBoardLogger
from mava_systems.runs.run_directory import (ROLLED_BACK_FILE, RUN_FILE, RunStatus,
                                             check_and_save_description, logged_counts,
                                             move_aside, read_status, roll_back_logs)
from mava_systems.terminal.progress import CountRate, read_snapshot

IDENTITY = ["environment", "agents", "replay_items"]


def test_fresh_directory_saves_the_description(tmp_path):
    changed = check_and_save_description(str(tmp_path), {"environment": "e", "agents": ["a"],
                                                         "config.lr": 0.1}, IDENTITY)
    assert changed == []
    with open(tmp_path / RUN_FILE) as run_file:
        assert json.load(run_file) == {"environment": "e", "agents": ["a"], "config.lr": 0.1}
    assert read_status(str(tmp_path)).resumed is False


def test_changed_hyper_parameters_are_reported_and_saved(tmp_path):
    check_and_save_description(str(tmp_path), {"environment": "e", "agents": ["a"],
                                               "config.lr": 0.1, "config.n": 3}, IDENTITY)
    changed = check_and_save_description(str(tmp_path), {"environment": "e", "agents": ["a"],
                                                         "config.lr": 0.2, "config.n": 3}, IDENTITY)
    assert changed == ["config.lr"]
    with open(tmp_path / RUN_FILE) as run_file:
        assert json.load(run_file)["config.lr"] == 0.2


@pytest.mark.parametrize("key, value", [("environment", "other"), ("agents", ["a", "b"]),
                                        ("replay_items", {"priority_table": "another layout"})])
def test_an_incompatible_run_raises_naming_the_entry_and_keeps_the_file(tmp_path, key, value):
    saved = {"environment": "e", "agents": ["a"], "replay_items": {"priority_table": "layout"},
             "config.lr": 0.1}
    check_and_save_description(str(tmp_path), saved, IDENTITY)
    before = (tmp_path / RUN_FILE).read_text()
    with pytest.raises(ValueError, match=f"{key}: saved"):
        check_and_save_description(str(tmp_path), {**saved, key: value}, IDENTITY)
    assert (tmp_path / RUN_FILE).read_text() == before


def test_status_reads_trainer_step_and_counts_from_checkpoints(tmp_path):
    run_dir = str(tmp_path)
    counter = CheckpointedCounter(run_dir)
    counter.increment(executor_steps=1234, trainer_steps=56)
    counter._checkpointing.save(force=True)  # pylint: disable=protected-access
    network = snt.Linear(2)
    network(tf.zeros([1, 3]))
    Checkpointing({"num_steps": tf.Variable(56, dtype=tf.int64), "q_network": network},
                  run_dir, "trainer").save(force=True)

    status = read_status(run_dir)
    assert status.resumed
    assert status.trainer_steps == 56
    assert status.counts == {"executor_steps": 1234, "trainer_steps": 56}
    assert "from trainer step 56" in status.summary(run_dir)
    assert "executor_steps=1234" in status.summary(run_dir)
    assert os.path.isdir(os.path.join(run_dir, "checkpoints", "counter"))


def test_move_aside_keeps_the_old_run_under_a_new_name(tmp_path):
    run_dir = tmp_path / "run"
    assert move_aside(str(run_dir)) is None  # Nothing there: nothing to move.
    run_dir.mkdir()
    (run_dir / RUN_FILE).write_text("{}")
    assert move_aside(str(run_dir)) == f"{run_dir}.old-1"
    run_dir.mkdir()
    (run_dir / RUN_FILE).write_text("[]")
    assert move_aside(str(run_dir)) == f"{run_dir}.old-2"
    assert (tmp_path / "run.old-1" / RUN_FILE).read_text() == "{}"
    assert (tmp_path / "run.old-2" / RUN_FILE).read_text() == "[]"
    assert not run_dir.exists()


def test_evaluate_refuses_a_directory_without_a_run(tmp_path):
    from mava_systems import evaluate  # pylint: disable=import-outside-toplevel
    with pytest.raises(ValueError, match="not a run directory"):
        evaluate.evaluate(str(tmp_path), episodes=5)
    (tmp_path / RUN_FILE).write_text(json.dumps({"system": "madqn",
                                                 "environment_name": "debug/line_world_v0"}))
    with pytest.raises(ValueError, match="no trainer checkpoint"):
        evaluate.evaluate(str(tmp_path), episodes=5)


def _write_log(run_dir, node, steps, columns=("executor_steps", "trainer_steps", "x")):
    """A node's CSV log with one row per executor step count in `steps` (trainer at steps // 10)."""
    path = os.path.join(run_dir, "logs", node, "logs.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as log_file:
        log_file.write(",".join(columns) + "\n")
        for step in steps:
            log_file.write(f"{step},{step // 10},0.5\n")
    return path


def _column(path, key):
    with open(path) as log_file:
        return [float(row[key]) for row in csv.DictReader(log_file)]


def _save_counter(run_dir, **counts):
    counter = CheckpointedCounter(run_dir)
    counter.increment(**counts)
    counter._checkpointing.save(force=True)  # pylint: disable=protected-access


def _status(trainer_checkpoint_steps=None, **counts):
    return RunStatus(resumed=True, trainer_steps=(counts["trainer_steps"]
                                                  if trainer_checkpoint_steps is None
                                                  else trainer_checkpoint_steps),
                     counts=counts)


def test_the_trainers_log_is_cut_back_to_its_own_checkpoint_and_the_others_to_the_counter(
        tmp_path):
    """The trainer logs its own step count, restored with its weights; the other logs carry
    the counter's, which may be saved later (or earlier) than the trainer's checkpoint."""
    run_dir = str(tmp_path)
    trainer = _write_log(run_dir, "trainer", range(1000, 10001, 1000))  # trainer_steps 100..1000
    executor = _write_log(run_dir, "executor_0", range(1000, 10001, 1000))
    moved = roll_back_logs(run_dir, _status(executor_steps=9000, trainer_steps=900,
                                            trainer_checkpoint_steps=600))
    assert moved == {trainer: 4, executor: 1}
    assert _column(trainer, "trainer_steps") == [100, 200, 300, 400, 500, 600]
    assert _column(executor, "trainer_steps")[-1] == 900


def test_logs_ahead_of_the_counts_are_cut_back_and_the_rows_kept_aside(tmp_path):
    run_dir = str(tmp_path)
    executor = _write_log(run_dir, "executor_0", range(100, 9001, 100))
    evaluator = _write_log(run_dir, "evaluator", [0, 3000, 6000, 9000])
    behind = _write_log(run_dir, "trainer", [1000, 2000])  # Nothing past the counts: untouched.
    before = open(behind).read()

    moved = roll_back_logs(run_dir, _status(executor_steps=8900, trainer_steps=890))

    assert moved == {executor: 1, evaluator: 1}
    assert _column(executor, "executor_steps") == list(range(100, 8901, 100))
    assert _column(evaluator, "executor_steps") == [0, 3000, 6000]
    assert open(behind).read() == before
    aside = os.path.join(run_dir, "logs", "executor_0", ROLLED_BACK_FILE)
    assert _column(aside, "executor_steps") == [9000]
    # A second cut appends to the rows kept aside, under one header.
    assert roll_back_logs(run_dir, _status(executor_steps=8700, trainer_steps=870)) == {
        executor: 2}
    assert _column(aside, "executor_steps") == [9000, 8800, 8900]
    assert logged_counts(run_dir) == {"executor_steps": 8700, "trainer_steps": 870}


def test_a_counter_behind_the_logs_resumes_with_the_logs_cut_to_its_counts(
        tmp_path, line_world_factory):
    run_dir = str(tmp_path / "run")
    system = madqn.MADQN(line_world_factory, run_dir=run_dir)
    system.prepare_run_dir()
    executor = _write_log(run_dir, "executor_0", range(100, 9001, 100))
    _save_counter(run_dir, executor_steps=8900, trainer_steps=890)

    status, _ = madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()

    assert status.resumed and status.counts["executor_steps"] == 8900
    assert status.rolled_back_rows == {executor: 1}
    assert "Logs: 1 row logged after the saved counts" in status.summary(run_dir)
    steps = _column(executor, "executor_steps")
    assert steps == list(range(100, 8901, 100)) and steps == sorted(steps)
    # What the launcher's progress line and summary read now: the restored counts.
    assert read_snapshot(run_dir).executor_steps == 8900


def _checkpoint_trainer(run_dir, steps):
    Checkpointing({"num_steps": tf.Variable(steps, dtype=tf.int64)}, run_dir,
                  "trainer").save(force=True)


def test_logs_without_any_checkpoint_are_refused_and_nothing_is_changed(
        tmp_path, line_world_factory):
    run_dir = str(tmp_path / "run")
    madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()
    executor = _write_log(run_dir, "executor_0", range(100, 3001, 100))
    _save_counter(run_dir, executor_steps=3000, trainer_steps=300)
    _checkpoint_trainer(run_dir, 300)
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))  # The checkpoints were removed.
    before = {name: open(os.path.join(run_dir, name)).read()
              for name in (RUN_FILE, "config.json", "logs/executor_0/logs.csv")}

    changed_config = madqn.MADQNConfig(learning_rate=0.5)
    with pytest.raises(ValueError, match=r"holds the logs of a run \(executor_steps=3,000, "
                                         r"trainer_steps=300\) but no trainer or counter "
                                         r"checkpoint.*--start_fresh.*nothing was changed"):
        madqn.MADQN(line_world_factory, config=changed_config, run_dir=run_dir).prepare_run_dir()
    assert {name: open(os.path.join(run_dir, name)).read() for name in before} == before

    status, _ = madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir(
        start_fresh=True)
    assert not status.resumed and not os.path.exists(executor)
    assert _column(run_dir + ".old-1/logs/executor_0/logs.csv", "executor_steps")[-1] == 3000


def test_a_run_killed_before_its_first_counter_checkpoint_resumes_with_its_logs_set_aside(
        tmp_path, line_world_factory):
    run_dir = str(tmp_path / "run")
    madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()
    _checkpoint_trainer(run_dir, 0)  # The trainer's initial checkpoint; no counter one yet.
    executor = _write_log(run_dir, "executor_0", range(100, 1001, 100))

    status, _ = madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()

    assert status.resumed and status.counts == {}
    assert status.rolled_back_rows == {executor: 10}
    assert _column(executor, "executor_steps") == []
    aside = os.path.join(run_dir, "logs", "executor_0", ROLLED_BACK_FILE)
    assert _column(aside, "executor_steps") == list(range(100, 1001, 100))
    assert read_snapshot(run_dir) is None  # The progress line starts from nothing.


def test_a_count_that_goes_backwards_restarts_the_rate_instead_of_going_negative():
    rate = CountRate(window_s=30.0)
    assert rate.observe(0.0, 3000) is None
    assert rate.observe(1.0, 3100) == 100.0
    assert rate.observe(2.0, 25) is None  # Another run's count: no rate from the two.
    assert rate.observe(3.0, 75) == 50.0


def test_tensorboard_drops_an_older_launchs_events_past_the_resumed_step(tmp_path):
    logdir = str(tmp_path)
    first = TensorBoardLogger(logdir, "executor", "executor_steps")
    for steps in (100, 200, 300, 400):
        first.write({"executor_steps": steps, "episode_return": float(steps)})
    first.close()
    time.sleep(1.1)  # Event files are named by the second they were opened in.
    resumed = TensorBoardLogger(logdir, "executor", "executor_steps")
    for steps in (250, 350):
        resumed.write({"executor_steps": steps, "episode_return": -float(steps)})
    resumed.close()

    accumulator = event_accumulator.EventAccumulator(logdir)
    accumulator.Reload()
    events = accumulator.Tensors("executor/episode_return")
    assert [(event.step, float(tf.make_ndarray(event.tensor_proto))) for event in events] == [
        (100, 100.0), (200, 200.0), (250, -250.0), (350, -350.0)]
