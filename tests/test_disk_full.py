"""A run directory whose disk fills (issue 26), on a real small filesystem: a tmpfs each test
mounts (skipped, saying why, where mounting is not permitted).

A full disk stops the program once, with a `DiskFullError` naming the directory and the room
a resumed run needs; no thread waits on the disk; the last complete checkpoints stay usable,
partial saves are removed, and the run resumes once there is room.
"""

import contextlib
import os
import re
import inspect
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import reverb
import tensorflow as tf

from mava_systems.runs import disk_space
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.nodes.lifecycle import NODE_FAILURES_FILE_ENV
from mava_systems.runs.logging import make_logger
from mava_systems.runs.replay_checkpointing import (latest_replay_checkpoint,
                                                    replay_checkpoint_directory,
                                                    save_replay, start_restored_server)
from mava_systems.runs.run_directory import RUN_FILE, read_status

import program_helpers

MIB = 2**20


@contextlib.contextmanager
def mounted_tmpfs(path, size_bytes):
    """A tmpfs of `size_bytes` mounted at `path` while the body runs."""
    os.makedirs(path, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs",
                             str(path)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip() or 'mount failed'}): "
                    "the full-disk tests need a real small filesystem")
    try:
        yield str(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """Mounts a tmpfs of the given size under tmp_path; returns its path."""
    with contextlib.ExitStack() as stack:
        yield lambda size_bytes: stack.enter_context(
            mounted_tmpfs(tmp_path / f"disk-{size_bytes}", size_bytes))


def fill(disk):
    """Writes a file until the disk is full; its path (remove it to free the space)."""
    path = os.path.join(disk, "filler")
    with open(path, "wb", buffering=0) as filler:  # Unbuffered: closing it writes nothing.
        try:
            while filler.write(b"\0" * MIB):  # The last write is cut short, then one raises.
                pass
        except OSError:
            pass
    # What a partly filled page still takes: small appends fill it, then fail.
    assert shutil.disk_usage(disk).free < 64 * 1024
    return path


FILL_SOURCE = f"import os, shutil\nMIB = {MIB}\n" + inspect.getsource(fill)


@pytest.fixture
def node_failures(tmp_path, monkeypatch):
    """The failures nodes record to stop the program (as a launcher reads them), as a list."""
    path = tmp_path / "node_failures.txt"
    path.write_text("")
    monkeypatch.setenv(NODE_FAILURES_FILE_ENV, str(path))
    return lambda: path.read_text().splitlines()


def _in_thread_within(function, timeout_s):
    """Runs `function` in a thread and asserts it returns within `timeout_s` (never blocks)."""
    thread = threading.Thread(target=function, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"{function} still blocked after {timeout_s} s"


def _disk_full_failure(failures, name, run_dir):
    assert len(failures) == 1, failures
    assert failures[0].startswith(f"{name} failed: DiskFullError: the disk holding {run_dir} "
                                  "is full (No space left on device writing "), failures[0]
    assert re.search(r"Make at least [\d.]+ MB free there \(one set of the run's checkpoints, "
                     r"[\d.]+ (bytes|KB|MB), and 16.0 MB for logs\), then resume with the same "
                     r"command$", failures[0]), failures[0]


def test_a_logger_on_a_full_disk_stops_the_program_once_and_never_blocks(small_disk,
                                                                         node_failures):
    run_dir = os.path.join(small_disk(4 * MIB), "run")
    logger = make_logger(run_dir, "executor_0", steps_key="executor_steps")
    logger.write({"executor_steps": 10, "episode_return": 1.0})
    fill(os.path.dirname(run_dir))

    def write_rows():
        for steps in range(20, 4020, 20):  # About 40 KB of CSV alone: more than a page.
            logger.write({"executor_steps": steps, "episode_return": 1.0})
    _in_thread_within(write_rows, 30)
    _in_thread_within(logger.close, 10)

    _disk_full_failure(node_failures(), "executor_0 logger", run_dir)
    with open(os.path.join(run_dir, "logs", "executor_0", "logs.csv")) as log_file:
        assert log_file.readline().startswith("episode_return,executor_steps")


def test_a_checkpoint_on_a_full_disk_keeps_the_last_complete_one_and_no_partial_files(
        small_disk, node_failures):
    disk = small_disk(4 * MIB)
    run_dir = os.path.join(disk, "run")
    variable = tf.Variable(tf.fill([150_000], 1.0))  # 600 KB a checkpoint.
    checkpointing = Checkpointing({"variable": variable}, run_dir, "trainer", interval_s=0)
    assert checkpointing.save(force=True)
    saved = checkpointing._manager.latest_checkpoint  # pylint: disable=protected-access
    filler = fill(disk)
    variable.assign(tf.fill([150_000], 2.0))

    assert not checkpointing.save(force=True)

    _disk_full_failure(node_failures(), "trainer checkpoint", run_dir)
    assert "checkpoints/trainer" in node_failures()[0]
    assert sorted(os.listdir(checkpointing.directory)) == [
        "checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]  # No ckpt-2_temp.
    restored = tf.Variable(tf.zeros([150_000]))
    assert Checkpointing({"variable": restored}, run_dir, "trainer").restored_from == saved
    assert float(restored.numpy().min()) == 1.0
    os.remove(filler)  # Room again: saving works again.
    assert checkpointing.save(force=True)


def _tables():
    return [reverb.Table("table", reverb.selectors.Uniform(), reverb.selectors.Fifo(), 10_000,
                         reverb.rate_limiters.MinSize(1))]


def test_a_replay_checkpoint_on_a_full_disk_is_removed_and_stops_the_program(small_disk,
                                                                            node_failures):
    disk = small_disk(8 * MIB)
    run_dir = os.path.join(disk, "run")
    server, _ = start_restored_server(_tables, run_dir)
    with server.localhost_client().writer(1) as writer:
        for index in range(2000):  # About 1 MB a checkpoint.
            writer.append(np.random.default_rng(index).random(128, np.float32))
            writer.create_item("table", 1, 1.0)
    save_replay(server, run_dir)
    complete = latest_replay_checkpoint(run_dir)
    fill(disk)

    save_replay(server, run_dir)
    server.stop()

    _disk_full_failure(node_failures(), "replay", run_dir)
    assert os.listdir(replay_checkpoint_directory(run_dir)) == [os.path.basename(complete)]
    assert latest_replay_checkpoint(run_dir) == complete


def test_an_unfinished_replay_checkpoint_is_removed_when_replay_starts(tmp_path):
    run_dir = str(tmp_path)
    partial = os.path.join(replay_checkpoint_directory(run_dir), "2026-01-01T00:00:00")
    os.makedirs(partial)
    with open(os.path.join(partial, "chunks.tfrecord"), "wb") as chunks:
        chunks.write(b"cut short")
    server, record = start_restored_server(_tables, run_dir)
    server.stop()
    assert record["checkpoint"] is None and not os.path.exists(partial)


def test_a_launch_into_a_disk_without_room_is_refused_before_anything_is_written(
        small_disk, line_world_factory):
    from mava_systems import madqn  # pylint: disable=import-outside-toplevel

    run_dir = os.path.join(small_disk(8 * MIB), "run")
    with pytest.raises(ValueError, match=r"the disk holding \S+/run has [\d.]+ MB free; the run "
                                         r"needs at least 16.0 MB free there .* nothing was "
                                         r"changed"):
        madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()
    assert not os.path.exists(os.path.join(run_dir, RUN_FILE))


def test_a_launch_into_a_full_disk_says_how_much_room_the_run_needs(small_disk,
                                                                     line_world_factory):
    from mava_systems import madqn  # pylint: disable=import-outside-toplevel

    disk = small_disk(8 * MIB)
    run_dir = os.path.join(disk, "run")
    os.makedirs(run_dir)
    fill(disk)
    with pytest.raises(ValueError, match=r"the disk holding \S+/run has [\d.]+ (bytes|KB) free; "
                                         r"the run needs at least 16.0 MB free there"):
        madqn.MADQN(line_world_factory, run_dir=run_dir).prepare_run_dir()


# A MADQN run on the debug environment that checkpoints every second.
RUN_FLAGS = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
             "--n_step=3", "--evaluation_interval_s=1", "--progress_interval_s=0",
             "--checkpoint_interval_s=1", "--max_executor_steps=4000"]
STOP_BOUND_S = 60


def _ready_to_fill(run_dir):
    """Whether the run has logged executor rows and saved trainer and counter checkpoints."""
    try:
        status = read_status(run_dir)
        return (status.counts.get("executor_steps", 0) > 0 and status.trainer_steps >= 0
                and len(program_helpers.read_csv(run_dir, "executor_0")) > 2
                and os.path.exists(os.path.join(run_dir, "checkpoints", "trainer", "checkpoint")))
    except (OSError, ValueError):
        return False


def _executor_steps(run_dir, node):
    return [float(row["executor_steps"]) for row in program_helpers.read_csv(run_dir, node)]


def test_a_run_whose_disk_fills_stops_with_the_message_and_resumes_after_space_is_freed(
        small_disk):
    disk = small_disk(48 * MIB)
    run_dir = os.path.join(disk, "run")
    command = program_helpers.example_command(os.path.join("mpe", "run_madqn.py"), run_dir,
                                              *RUN_FLAGS)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    with subprocess.Popen(command, cwd=program_helpers.ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        try:
            deadline = time.time() + 240
            while not _ready_to_fill(run_dir) and process.poll() is None:
                assert time.time() < deadline, "the run never got going"
                time.sleep(0.2)
            assert process.poll() is None, "the run ended before the disk was filled"
            filler = fill(disk)
            filled_at = time.time()
            stdout, stderr = process.communicate(timeout=STOP_BOUND_S)
        finally:
            if process.poll() is None:
                process.kill()
    stopped_s = time.time() - filled_at
    print(f"stopped {stopped_s:.1f} s after the disk filled")

    assert process.returncode == 1, stdout + stderr
    assert stderr.splitlines()[-1].startswith(f"error: the disk holding {run_dir} is full ("), (
        stderr)
    assert stderr.splitlines()[-1].endswith("then resume with the same command"), stderr
    assert "Stopped because a node failed" in stdout and "Resume:" in stdout
    for node in ("trainer", "counter"):
        assert not [name for name in os.listdir(os.path.join(run_dir, "checkpoints", node))
                    if "_temp" in name], node
    replay = replay_checkpoint_directory(run_dir)
    assert all(os.path.exists(os.path.join(replay, name, "DONE")) for name in os.listdir(replay))
    saved_steps = read_status(run_dir).counts["executor_steps"]

    os.remove(filler)
    output = program_helpers.run_example(os.path.join("mpe", "run_madqn.py"), run_dir,
                                         *RUN_FLAGS)

    assert f"Resuming the run in {run_dir}" in output and "Finished." in output
    assert read_status(run_dir).counts["executor_steps"] >= 4000 > saved_steps
    for node in ("executor_0", "evaluator"):
        steps = _executor_steps(run_dir, node)
        assert steps == sorted(steps), node  # Never backwards across the two launches.
    assert _executor_steps(run_dir, "executor_0")[-1] >= 4000


def test_prints_into_a_captured_log_on_a_full_disk_are_dropped_not_raised(small_disk, tmp_path):
    """Any print (Launchpad's stop countdown in the launcher's signal handler, say) would
    otherwise raise and end the launcher before its summary."""
    disk = small_disk(1 * MIB)
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(f"""
        import os
        from mava_systems.terminal import console
        from tests_fill import fill
        console.quiet_terminal(["program.py"])
        console.attach_run_dir({os.path.join(disk, "run")!r})
        print("before the disk filled", flush=True)
        fill({disk!r})
        for index in range(2000):
            print("a line the log has no room for", index, flush=True)
        console.say(["the terminal still gets this"])
        console.report_error("error: and this")
    """).replace("from tests_fill import fill", FILL_SOURCE))
    result = subprocess.run([sys.executable, str(script)], cwd=program_helpers.ROOT,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "the terminal still gets this\n", "error: and this\n")
    with open(os.path.join(disk, "run", "output.log")) as log:
        assert log.readline() == "before the disk filled\n"
