"""A reused run directory: saved description checks, and the status read from its checkpoints."""

import json
import os

import pytest
import sonnet as snt
import tensorflow as tf

from mava_systems.components.checkpointing import Checkpointing
from mava_systems.components.counting import CheckpointedCounter
from mava_systems.components.run_directory import (RUN_FILE, check_and_save_description,
                                                   move_aside, read_status)

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
