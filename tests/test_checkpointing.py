"""Checkpoints: atomic saves, fallback past damaged files, counters and replay that continue."""

import glob
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

from acme.utils import counting
import numpy as np
import pytest
import reverb
import tensorflow as tf

from mava_systems.runs.checkpointing import (CheckpointError, Checkpointing,
                                             latest_readable_checkpoint)
from mava_systems.nodes.counting import (CheckpointedCounter, ExecutorCounter,
                                         executor_steps_key)
from mava_systems.runs.replay_checkpointing import (latest_replay_checkpoint, save_replay,
                                                    start_restored_server)
from mava_systems.runs.run_directory import drop_partial_log_rows, read_status


def _variables(value: float = 0.0):
    return {"weights": tf.Variable(tf.fill([64, 64], value)), "step": tf.Variable(int(value))}


def _save_three(run_dir):
    variables = _variables()
    checkpointing = Checkpointing(variables, run_dir, "node", max_to_keep=3)
    for step in (1, 2, 3):
        variables["weights"].assign(tf.fill([64, 64], float(step)))
        variables["step"].assign(step)
        checkpointing.save(force=True)
    return checkpointing.directory


def _data_file(directory, number):
    return glob.glob(os.path.join(directory, f"ckpt-{number}.data-*"))[0]


def test_restores_the_latest_checkpoint_into_fresh_objects(tmp_path):
    _save_three(str(tmp_path))
    restored = _variables()
    checkpointing = Checkpointing(restored, str(tmp_path), "node")
    assert checkpointing.restored_from.endswith("ckpt-3")
    assert int(restored["step"].numpy()) == 3
    np.testing.assert_array_equal(restored["weights"].numpy(), np.full([64, 64], 3.0))


def test_keeps_the_last_k_checkpoints(tmp_path):
    directory = _save_three(str(tmp_path))
    variables = _variables()
    checkpointing = Checkpointing(variables, str(tmp_path), "node", max_to_keep=2)
    checkpointing.save(force=True)
    assert sorted(os.path.basename(path) for path in glob.glob(os.path.join(directory, "*.index"))
                  ) == ["ckpt-3.index", "ckpt-4.index"]


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "delete"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, damage, caplog):
    directory = _save_three(str(tmp_path))
    data_file = _data_file(directory, 3)
    if damage == "truncate":
        with open(data_file, "rb+") as handle:
            handle.truncate(os.path.getsize(data_file) // 2)
    elif damage == "corrupt":
        with open(data_file, "rb+") as handle:
            handle.seek(100)
            handle.write(b"\xff" * 64)
    else:
        os.remove(data_file)

    restored = _variables()
    checkpointing = Checkpointing(restored, str(tmp_path), "node")
    assert checkpointing.restored_from.endswith("ckpt-2")
    assert int(restored["step"].numpy()) == 2
    np.testing.assert_array_equal(restored["weights"].numpy(), np.full([64, 64], 2.0))
    assert "ckpt-3" in caplog.text  # The warning names the damaged checkpoint.
    assert latest_readable_checkpoint(directory).endswith("ckpt-2")


def test_no_readable_checkpoint_is_an_error_naming_the_files(tmp_path):
    directory = _save_three(str(tmp_path))
    for number in (1, 2, 3):
        with open(_data_file(directory, number), "rb+") as handle:
            handle.truncate(10)
    with pytest.raises(CheckpointError, match=r"ckpt-3.*ckpt-2.*ckpt-1.*--start_fresh"):
        Checkpointing(_variables(), str(tmp_path), "node")
    with pytest.raises(CheckpointError, match="ckpt-3"):
        latest_readable_checkpoint(directory)


SAVER = textwrap.dedent("""
    import sys
    import tensorflow as tf
    from mava_systems.runs.checkpointing import Checkpointing
    variables = {f"layer_{i}": tf.Variable(tf.zeros([1000, 1000])) for i in range(8)}
    variables["step"] = tf.Variable(0)
    checkpointing = Checkpointing(variables, sys.argv[1], "node", max_to_keep=2)
    step = int(variables["step"].numpy())
    while True:
        step += 1
        for variable in variables.values():
            variable.assign(tf.cast(tf.fill(variable.shape, step), variable.dtype))
        checkpointing.save(force=True)
        print(step, flush=True)
""")


def test_a_process_killed_while_saving_never_leaves_a_half_written_checkpoint(tmp_path):
    """SIGKILL lands at random moments of back-to-back 32 MB saves; every restore is whole."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    rng = random.Random(0)
    last_saved = 0
    for _ in range(4):
        process = subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path)], env=env,
                                   stdout=subprocess.PIPE, text=True)
        first = int(process.stdout.readline())  # One save done: the next one is under way.
        assert first == last_saved + 1
        time.sleep(rng.uniform(0.0, 0.5))
        process.send_signal(signal.SIGKILL)
        saved_lines = process.communicate()[0].split()
        last_saved = int(saved_lines[-1]) if saved_lines else first

        variables = {f"layer_{i}": tf.Variable(tf.zeros([1000, 1000])) for i in range(8)}
        variables["step"] = tf.Variable(0)
        Checkpointing(variables, str(tmp_path), "node")
        step = int(variables["step"].numpy())
        # The newest complete save (or one finished after its print was cut off), never older.
        assert step in (last_saved, last_saved + 1)
        for name, variable in variables.items():
            assert np.all(variable.numpy() == step), name  # Every variable from the same save.
        last_saved = step


def test_counter_continues_from_its_checkpoint_with_each_executors_steps(tmp_path):
    run_dir = str(tmp_path)
    counter = CheckpointedCounter(run_dir)
    executor_counter = ExecutorCounter(counter, executor_id=1, time_delta=0.0)
    executor_counter.increment(steps=25, episodes=1)
    executor_counter.increment(steps=25, episodes=1)
    counter.increment(trainer_steps=7)
    counter._checkpointing.save(force=True)  # pylint: disable=protected-access

    restored = CheckpointedCounter(run_dir)
    assert restored.get_counts() == {"executor_steps": 50, "executor_episodes": 2,
                                     executor_steps_key(1): 50, "trainer_steps": 7}
    resumed_executor = ExecutorCounter(restored, executor_id=1, time_delta=0.0)
    assert resumed_executor.own_steps() == 50
    assert ExecutorCounter(restored, executor_id=0).own_steps() == 0
    counts = resumed_executor.increment(steps=10, episodes=1)
    assert counts["executor_steps"] == 60 and counts[executor_steps_key(1)] == 60
    assert read_status(run_dir).counts["executor_steps"] == 50  # Until the next save.


def _tables():
    return [reverb.Table("table", reverb.selectors.Uniform(), reverb.selectors.Fifo(), 1000,
                         reverb.rate_limiters.MinSize(1))]


def _insert(server, count):
    with server.localhost_client().writer(1) as writer:
        for index in range(count):
            writer.append(np.full([16], index, np.float32))
            writer.create_item("table", 1, 1.0)


def test_replay_is_restored_with_the_items_it_saved(tmp_path):
    run_dir = str(tmp_path)
    server, record = start_restored_server(_tables, run_dir)
    assert record["checkpoint"] is None and record["items"] == {"table": 0}
    _insert(server, 123)
    save_replay(server, run_dir)
    server.stop()

    server, record = start_restored_server(_tables, run_dir)
    assert record == {**record, "checkpoint": latest_replay_checkpoint(run_dir),
                      "items": {"table": 123}, "error": None}
    server.stop()


def test_an_unreadable_replay_checkpoint_is_moved_aside_and_replay_starts_empty(tmp_path):
    run_dir = str(tmp_path)
    server, _ = start_restored_server(_tables, run_dir)
    _insert(server, 50)
    save_replay(server, run_dir)
    server.stop()
    saved = latest_replay_checkpoint(run_dir)
    chunks = os.path.join(saved, "chunks.tfrecord")
    with open(chunks, "rb+") as handle:
        handle.truncate(os.path.getsize(chunks) // 2)

    server, record = start_restored_server(_tables, run_dir)
    assert record["items"] == {"table": 0} and record["checkpoint"] is None
    assert saved in record["error"] and "cannot be read" in record["error"]
    moved = os.path.join(run_dir, "checkpoints", f"replay-unreadable-{os.path.basename(saved)}")
    assert os.path.exists(os.path.join(moved, "chunks.tfrecord"))  # Kept, not deleted.
    server.stop()


def test_the_unfinished_last_row_of_a_killed_runs_log_is_dropped(tmp_path):
    log = tmp_path / "logs" / "executor_0" / "logs.csv"
    log.parent.mkdir(parents=True)
    log.write_text("a,b\n1,2\n3,")
    complete = tmp_path / "logs" / "trainer" / "logs.csv"
    complete.parent.mkdir(parents=True)
    complete.write_text("a,b\n1,2\n")
    assert drop_partial_log_rows(str(tmp_path)) == [str(log)]
    assert log.read_text() == "a,b\n1,2\n"
    assert complete.read_text() == "a,b\n1,2\n"


def test_local_counter_syncs_like_acmes():
    """ExecutorCounter batches increments like Acme's Counter: one central call per interval."""
    calls = []

    class CountingParent(counting.Counter):
        def increment(self, **counts):
            calls.append(counts)
            return super().increment(**counts)

    parent = CountingParent()
    executor_counter = ExecutorCounter(parent, executor_id=0, time_delta=3600.0)
    for _ in range(5):
        executor_counter.increment(steps=10, episodes=1)
    assert len(calls) == 1  # The first increment synced; the rest wait for the interval.
    assert executor_counter.get_counts()["executor_steps"] == 50
