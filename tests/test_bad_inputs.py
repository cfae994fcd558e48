"""Bad inputs from docs/bad_inputs.md not covered elsewhere: each gives a clear error, nothing saved is lost."""

import errno
import json
import logging
import os
import subprocess
import sys

from acme.utils import counting
import numpy as np
import pytest
import tensorflow as tf

from mava_systems import madqn
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.nodes.lifecycle import NODE_FAILURES_FILE_ENV
from mava_systems.acting.environment_loop import (MAX_FAILED_EPISODES, EnvironmentFailure,
                                                  EnvironmentLoop)
from mava_systems.runs.run_directory import LOCK_FILE, RUN_FILE
from mava_systems.evaluate import load_system
import wrappers
from wrappers.debug_envs import LineWorldEnv

from test_environment_loop import RandomLegalExecutor


@pytest.fixture(scope="module")
def system_factory(line_world_factory):
    def make(run_dir, **kwargs):
        return madqn.MADQN(line_world_factory, run_dir=run_dir, **kwargs)
    return make


def test_a_run_directory_that_is_a_file_is_refused(tmp_path, system_factory):
    path = tmp_path / "run"
    path.write_text("not a directory")
    with pytest.raises(ValueError, match=r"run directory \S+run is a file, not a directory"):
        system_factory(str(path)).prepare_run_dir()
    assert path.read_text() == "not a directory"


def test_a_run_directory_that_cannot_be_written_is_refused(system_factory):
    # Even root cannot create entries under /proc/1.
    with pytest.raises(ValueError, match=r"cannot write to run directory /proc/1/mava-run"):
        system_factory("/proc/1/mava-run").prepare_run_dir()


def test_a_damaged_run_json_is_an_error_and_is_left_as_it_was(tmp_path, system_factory):
    run_dir = str(tmp_path / "run")
    system_factory(run_dir).prepare_run_dir()
    path = os.path.join(run_dir, RUN_FILE)
    with open(path) as run_file:
        damaged = run_file.read()[:40]  # Truncated, as by a full disk.
    with open(path, "w") as run_file:
        run_file.write(damaged)
    with pytest.raises(ValueError, match=r"run.json is damaged .*--start_fresh"):
        system_factory(run_dir).prepare_run_dir()
    with open(path) as run_file:
        assert run_file.read() == damaged


def test_a_run_directory_written_by_another_running_program_is_refused(tmp_path, system_factory):
    run_dir = str(tmp_path / "run")
    os.makedirs(run_dir)
    # Another program's launcher, as `hold` leaves it: the lock file locked, with its pid.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys\n"
         f"lock = open({os.path.join(run_dir, LOCK_FILE)!r}, 'a+')\n"
         "fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
         "lock.write(str(os.getpid())); lock.flush()\nprint('held', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match=rf"in use by another running program \(pid "
                                             rf"{holder.pid}\): two programs must never write"):
            system_factory(run_dir).prepare_run_dir()
        with pytest.raises(ValueError, match="in use by another running program"):
            system_factory(run_dir).prepare_run_dir(start_fresh=True)  # Nothing moved aside.
        assert not os.path.exists(run_dir + ".old-1")
    finally:
        holder.communicate("", timeout=30)
    status, _ = system_factory(run_dir).prepare_run_dir()  # Free once that program has ended.
    assert not status.resumed


def test_a_full_disk_while_checkpointing_keeps_the_previous_checkpoint(tmp_path, caplog,
                                                                      monkeypatch):
    """(With a mock; tests/test_disk_full.py fills a real filesystem.)"""
    failures = tmp_path / "node_failures.txt"
    monkeypatch.setenv(NODE_FAILURES_FILE_ENV, str(failures))
    variable = tf.Variable(1.0)
    checkpointing = Checkpointing({"variable": variable}, str(tmp_path), "node", interval_s=0)
    assert checkpointing.save(force=True)
    saved = checkpointing._manager.latest_checkpoint
    variable.assign(2.0)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    checkpointing._manager.save = disk_full
    with caplog.at_level(logging.ERROR):
        assert not checkpointing.save(force=True)  # No exception: the program is stopped.
    assert "No space left on device" in caplog.text and saved in caplog.text
    assert failures.read_text().startswith(
        f"node checkpoint failed: DiskFullError: the disk holding {tmp_path} is full")
    restored = tf.Variable(0.0)
    assert Checkpointing({"variable": restored}, str(tmp_path), "node").restored_from == saved
    assert restored.numpy() == 1.0


class NaNLineWorld(LineWorldEnv):
    def step(self, actions):
        observations, *rest = super().step(actions)
        observations = {agent: np.full_like(value, np.nan) for agent, value in observations.items()}
        return (observations, *rest)


def test_nan_observations_are_an_error_naming_the_agent():
    environment = wrappers.ParallelEnvWrapper(NaNLineWorld())
    environment.reset()
    with pytest.raises(ValueError, match=r"agent 'agent_0': observation has NaN or infinite"):
        environment.step({"agent_0": 1, "agent_1": 1})


class FailingLineWorld(LineWorldEnv):
    """Raises in `step` during the episodes listed in `failing` (counted from 0)."""

    def __init__(self, failing):
        super().__init__()
        self._failing, self._episode = failing, -1

    def reset(self, seed=None, options=None):
        self._episode += 1
        return super().reset(seed=seed, options=options)

    def step(self, actions):
        if self._episode in self._failing and self._steps == 3:
            raise RuntimeError("simulator crashed")
        return super().step(actions)


class AbandonCountingExecutor(RandomLegalExecutor):
    abandoned = 0

    def abandon_episode(self):
        self.abandoned += 1


def test_an_environment_that_raises_has_its_episode_dropped_and_restarted(caplog):
    executor = AbandonCountingExecutor()
    environment = wrappers.ParallelEnvWrapper(FailingLineWorld(failing={1, 3}))
    counter = counting.Counter()
    loop = EnvironmentLoop(environment, executor, counter)
    with caplog.at_level(logging.ERROR):
        loop.run(num_episodes=3)
    assert executor.abandoned == 2
    assert caplog.text.count("environment line_world_v0: step() raised RuntimeError: simulator "
                             "crashed; the episode is dropped and a new one starts") == 2
    assert counter.get_counts() == {"episodes": 3, "steps": 30}  # Failed ones not counted.


def test_an_environment_that_keeps_raising_stops_the_run_with_its_error():
    environment = wrappers.ParallelEnvWrapper(FailingLineWorld(failing=set(range(100))))
    with pytest.raises(EnvironmentFailure, match=rf"environment line_world_v0: step\(\) raised "
                                                 rf"RuntimeError: simulator crashed; "
                                                 rf"{MAX_FAILED_EPISODES} episodes in a row"):
        EnvironmentLoop(environment, RandomLegalExecutor()).run()


def test_an_unknown_system_in_run_json_is_an_error(tmp_path):
    os.makedirs(tmp_path / "run")
    with open(tmp_path / "run" / RUN_FILE, "w") as run_file:
        json.dump({"system": "no_such_system", "environment_name": "debug/line_world_v0"},
                  run_file)
    with pytest.raises(ValueError, match=r"unknown system 'no_such_system'; available: "):
        load_system(str(tmp_path / "run"))


def test_the_bad_input_table_has_20_rows_each_naming_tests_that_exist():
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "bad_inputs.md")) as page:
        rows = [line for line in page if line.startswith("| ") and not line.startswith("| ---")][1:]
    assert len(rows) >= 20
    for row in rows:
        named = re.findall(r"`(tests/\w+\.py)?::(\w+)", row.rsplit(" | ", 1)[-1])
        assert named, row
        module = None
        for path, test in named:
            module = path or module
            with open(os.path.join(root, module)) as source:
                assert f"def {test}(" in source.read(), (module, test)
