"""Evaluation by executor steps: rounds at exactly every multiple of N, with the variables of that
step, and executors held while the evaluator is behind (nodes/step_evaluation.py)."""

import threading
import time

from acme.utils import loggers
import numpy as np
import pytest

from mava_systems.nodes.counting import CheckpointedCounter, ExecutorCounter
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.nodes.evaluation import Evaluator
from mava_systems.nodes.step_evaluation import GATE_KEY, EvaluationGate, StepEvaluator
import wrappers

from test_environment_loop import RandomLegalExecutor

EPISODE_LENGTH = 10  # debug/line_world_v0's.


def test_the_gate_closes_at_each_due_multiple_until_its_snapshot_is_taken():
    gate = EvaluationGate(every_steps=100, max_pending=1)
    assert gate.closed() and gate.next_due(0.0) == 0  # A fresh run evaluates step 0 first.
    gate.taken(0)
    assert not gate.closed()
    gate.counted(99)
    assert not gate.closed() and gate.next_due(0.0) is None
    gate.counted(230)  # One increment past two multiples: both are due, in order.
    assert gate.closed() and gate.next_due(0.0) == 100
    gate.taken(100)
    assert gate.closed() and gate.next_due(0.0) == 200
    gate.taken(200)
    # Three snapshots wait for evaluation, more than max_pending=1: executors wait.
    assert gate.closed()
    gate.evaluated(0)
    assert gate.closed()
    gate.evaluated(100)
    assert not gate.closed()
    gate.evaluator_started()  # A restarted evaluator holds none.
    gate.counted(300)
    assert gate.closed() and gate.next_due(0.0) == 300


def test_a_resumed_run_evaluates_from_the_first_multiple_after_its_restored_count():
    assert EvaluationGate(100, 2, start_count=250).next_due(0.0) is None
    gate = EvaluationGate(100, 2, start_count=300)
    gate.counted(399)
    assert gate.next_due(0.0) is None
    gate.counted(400)
    assert gate.next_due(0.0) == 400


class CountSource:
    """A variable source whose one variable is the counter's executor steps when it is asked
    (after `delay_s`, a slow fetch)."""

    def __init__(self, counter, delay_s=0.0):
        self._counter = counter
        self.delay_s = delay_s

    def get_variables(self, names):
        time.sleep(self.delay_s)
        return [[np.array(self._counter.get_counts().get("executor_steps", 0))] for _ in names]


class SnapshotLoop:
    """An evaluation 'loop' whose episodes take `episode_s` seconds and return the loaded
    variable as their return."""

    def __init__(self, episode_s):
        self.episode_s = episode_s
        self.variable = None

    def run_episode(self):
        time.sleep(self.episode_s)
        return {"episode_return": float(self.variable), "episode_length": 1}


class Rows(loggers.Logger):
    def __init__(self):
        self.rows = []

    def write(self, data):
        self.rows.append(dict(data))

    def close(self):
        pass


@pytest.mark.parametrize("slow", [False, True], ids=["quick", "slow_evaluator"])
def test_rows_fall_at_every_multiple_with_the_variables_of_that_step(slow):
    """Two executor loops and a step evaluator share one counter; a slow evaluator (slow
    fetches, slow rounds: a loaded machine) gives rows at the same steps, each round playing
    variables fetched before the count went one increment per executor past its step, and the
    executors never more than (max_pending + 1) * N steps (plus an increment each) ahead."""
    every, max_pending, limit, num_loops = 100, 1, 1200, 2
    counter = CheckpointedCounter(evaluate_every_steps=every,
                                  max_pending_evaluations=max_pending)
    stop = threading.Event()
    source = CountSource(counter, delay_s=0.2 if slow else 0.0)
    loop = SnapshotLoop(episode_s=0.1 if slow else 0.0)
    rows = Rows()
    ahead = []  # Executor steps beyond the last evaluated step, whenever a round starts.

    def load(variables):
        loop.variable = variables[0][0]
        step = len(rows.rows) * every  # The step of this round: rows fall at the multiples.
        ahead.append(counter.get_counts().get("executor_steps", 0) - step)

    evaluator = Evaluator(loop, lambda: None, counter, rows, episodes=2, interval_s=0.0,
                          load_variables=load)
    step_evaluator = StepEvaluator(evaluator, counter, lambda: source.get_variables(["q"]),
                                   step_limit=limit, stop_event=stop)
    loops = [EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=i),
                             RandomLegalExecutor(seed=i),
                             ExecutorCounter(counter, executor_id=i, time_delta=0.0),
                             stop_event=stop, step_limit=limit)
             for i in range(num_loops)]
    for each in loops:
        each.counting.count_interval_s = 0.0  # Every episode counted as it ends: one per increment.
    threads = [threading.Thread(target=each.run) for each in loops]
    # `run` would watch the program's stop; the test's loop is `_run` with the test's event.
    evaluator_thread = threading.Thread(target=step_evaluator._run)
    evaluator_thread.start()
    for thread in threads:
        thread.start()
    deadline = time.time() + 60
    while counter.get_counts().get("executor_steps", 0) < limit and time.time() < deadline:
        time.sleep(0.01)
    final = step_evaluator.final_evaluation()
    stop.set()
    for thread in threads + [evaluator_thread]:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads + [evaluator_thread])

    steps = [row["executor_steps"] for row in rows.rows]
    assert steps == list(range(0, limit + 1, every))  # Exactly the multiples, the limit last.
    assert [row["final"] for row in rows.rows] == [0] * (len(steps) - 1) + [1]
    assert final["executor_steps"] == limit
    increment = EPISODE_LENGTH
    for row in rows.rows[:-1]:
        evaluated = row["evaluation_return"]  # The executor steps when its variables were fetched.
        assert row["executor_steps"] <= evaluated <= row["executor_steps"] + num_loops * increment
    assert max(ahead) <= (max_pending + 1) * every + num_loops * increment
    assert not counter.get_counts()[GATE_KEY] or counter.get_counts()["executor_steps"] >= limit


@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_a_program_evaluates_at_exactly_every_multiple_and_at_its_limit(tmp_path, launch_type):
    """MADQN (2 executors) on the line world with the default schedule (by steps):
    evaluator rows at 0, 100, ..., 500 exactly, the last the final round; each of the same
    number of episodes; the trainer counts of the evaluated variables never going back."""
    import program_helpers
    from program_helpers import read_csv

    run_dir = str(tmp_path / "run")
    program_helpers.run_example(
        "mpe/run_madqn.py", run_dir, "--env=debug/line_world_v0", "--min_replay_size=100",
        "--batch_size=32", "--n_step=3", "--num_executors=2", "--max_executor_steps=500",
        "--evaluation_every_steps=100", "--evaluation_episodes=3", "--progress_interval_s=0",
        launch_type=launch_type)
    rows = read_csv(run_dir, "evaluator")
    assert [int(row["executor_steps"]) for row in rows] == [0, 100, 200, 300, 400, 500]
    assert [row["final"] for row in rows] == ["0"] * 5 + ["1"]
    assert [int(row["evaluator_episodes"]) for row in rows] == [3, 6, 9, 12, 15, 18]
    trainer_steps = [int(row["trainer_steps"]) for row in rows]
    assert trainer_steps == sorted(trainer_steps) and trainer_steps[0] == 0
    assert trainer_steps[-1] > 0
