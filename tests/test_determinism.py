"""Deterministic runs (issue 44): with `--deterministic` every node builds its networks from the
seed alone and training and acting run in lockstep (nodes/lockstep.py), so two runs of one seed
and flags repeat their rows and final weights (docs/experiments.md, Deterministic runs)."""

import concurrent.futures
import csv
import fractions
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from mava_systems.launching import launch
from mava_systems.madqn import MADQN, MADQNConfig
from mava_systems.nodes.lockstep import ServedSnapshots, TrainingSchedule
from mava_systems.runs import determinism
import wrappers

from program_helpers import run_example

ENV = "debug/line_world_v0"
# Columns that measure time or speed, which no run repeats.
TIMING = re.compile(r"per_second|time|_s$|wait")
# Counts of other nodes in a node's rows: where they stood when the row was written (see the
# docs).
OTHER_NODES = {"executor_0": ("evaluator_", "trainer_"),
               "evaluator": ("trainer_", "executor_episodes")}


def _weights(system):
    with system.seeded_construction():
        networks = system.builder.make_networks()
    return [variable.numpy() for variable in tf.nest.flatten(
        [module.variables for module in networks.q_networks.values()])]


def test_nodes_built_at_once_get_the_seed_s_weights_only_when_deterministic():
    """Nodes of a `local_mt` run build their networks in threads at once, while others act
    (drawing random numbers from their own generators, as every executor does)."""
    factory = wrappers.make_environment_factory(ENV)
    deterministic = MADQN(factory, config=MADQNConfig(deterministic=True, seed=3))
    other_seed = MADQN(factory, config=MADQNConfig(deterministic=True, seed=4))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        generator = tf.random.Generator.from_seed(0)
        noise = pool.submit(lambda: [generator.uniform([8]) for _ in range(300)])
        built = [pool.submit(_weights, deterministic) for _ in range(3)]
        noise.result()
        first, *others = [future.result() for future in built]
    for weights in others:
        assert all(np.array_equal(a, b) for a, b in zip(first, weights))
    assert not all(np.array_equal(a, b) for a, b in zip(first, _weights(other_seed)))
    usual = MADQN(factory, config=MADQNConfig(seed=3))
    assert not all(np.array_equal(a, b) for a, b in zip(_weights(usual), _weights(usual)))


def _rows(run_dir, node):
    with open(os.path.join(run_dir, "logs", node, "logs.csv")) as rows:
        return [{name: value for name, value in row.items()
                 if not TIMING.search(name) and not name.startswith(OTHER_NODES[node])}
                for row in csv.DictReader(rows)]


def _checkpoint(run_dir):
    reader = tf.train.load_checkpoint(os.path.join(run_dir, "checkpoints", "trainer"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def _run_all(runs, flags):
    """Runs `{run_dir: extra flags}` of examples/classic/run_madqn.py with `flags`, at once."""
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        for future in [pool.submit(run_example, "classic/run_madqn.py", run_dir, *flags, *extra)
                       for run_dir, extra in runs.items()]:
            future.result()


def test_two_deterministic_runs_repeat_every_row_and_weight_after_training(tmp_path):
    """With training (the trainer takes dozens of steps from replay and the executor fetches
    trained variables every 25 of its steps), every executor and evaluator row (but for
    times, rates and other nodes' counts) and the final weights repeat; the first rows of a
    run without `--deterministic` (a short one) differ."""
    flags = [f"--env={ENV}", "--min_replay_size=64", "--variable_update_period=25",
             "--evaluation_every_steps=150", "--evaluation_episodes=4",
             "--progress_interval_s=0", "--seed=5"]
    runs = {name: str(tmp_path / name) for name in ("first", "second", "usual")}
    _run_all({runs["first"]: ["--deterministic", "--max_executor_steps=300"],
              runs["second"]: ["--deterministic", "--max_executor_steps=300"],
              runs["usual"]: ["--max_executor_steps=100"]}, flags)
    for node in ("executor_0", "evaluator"):
        first = _rows(runs["first"], node)
        assert len(first) >= 3 and first == _rows(runs["second"], node), node
    usual = _rows(runs["usual"], "executor_0")
    assert usual and usual != _rows(runs["first"], "executor_0")[:len(usual)]
    first, second = _checkpoint(runs["first"]), _checkpoint(runs["second"])
    assert first.keys() == second.keys() and any("q_network" in name for name in first)
    assert first["num_steps/.ATTRIBUTES/VARIABLE_VALUE"] >= 25  # Trained, fetched trained.
    assert all(np.array_equal(first[name], second[name]) for name in first)


def test_training_schedule_allows_exactly_the_steps_whose_items_were_read():
    """Step k needs `items_before(k)` items; `steps_with(n)` is the last step n items allow."""
    schedule = TrainingSchedule(64, fractions.Fraction(256 // 4) / fractions.Fraction(32.0))
    assert [schedule.items_before(step) for step in (1, 2, 3)] == [64, 66, 68]
    for items in range(200):
        steps = schedule.steps_with(items)
        assert steps == 0 or schedule.items_before(steps) <= items
        assert schedule.items_before(steps + 1) > items
    on_policy = TrainingSchedule(4, 4)
    assert [on_policy.steps_with(items) for items in (3, 4, 7, 8)] == [0, 1, 1, 2]


def test_served_variables_are_those_held_at_each_evaluated_step():
    """The evaluator of step m gets the variables of the executor's last fetch at or before m,
    and only those an evaluation may still ask for are kept."""
    served = ServedSnapshots(every_steps=100)
    for step in range(0, 260, 25):
        served.add(step, ["q"], step)
    assert served.at(0, ["q"]) == 0
    assert served.at(100, ["q"]) == 100 and served.at(200, ["q"]) == 200
    # Between evaluations, only the latest fetch and the last one before each step still to be
    # asked for are kept.
    assert [entry[0] for entry in served._snapshots] == [200, 250]
    try:
        served.at(300, ["other"])
    except ValueError as error:
        assert "other" in str(error)
    else:
        raise AssertionError("variables of other names were served")


def test_a_deterministic_run_says_what_will_not_repeat_outside_local_mt_with_one_executor():
    """`--deterministic` repeats under local_mt with one executor and evaluation by steps; under
    local_mp or Ray, with several executors or evaluation on the clock the run's header says
    what does not repeat (docs/experiments.md, Deterministic runs)."""
    config = MADQNConfig(deterministic=True)
    assert determinism.launch_notes(config, 1, "local_mt") == []
    assert determinism.launch_notes(MADQNConfig(), 2, "local_mp") == []
    for launch_type in ("local_mp", "ray"):
        (note,) = determinism.launch_notes(config, 1, launch_type)
        assert f"under {launch_type}" in note and "local_mt" in note
    (note,) = determinism.launch_notes(config, 2, "local_mt")
    assert "2 executors" in note and "do not repeat" in note
    (note,) = determinism.launch_notes(MADQNConfig(deterministic=True, evaluation_interval_s=5),
                                       1, "local_mt")
    assert "evaluation_interval_s" in note


def test_the_run_header_carries_the_notes_before_anything_is_launched(tmp_path, monkeypatch):
    said = []
    monkeypatch.setattr(launch.console, "say", said.extend)

    class Launched(Exception):
        pass

    def refuse(*_):
        raise Launched
    monkeypatch.setattr(launch, "launch", refuse)
    system = MADQN(wrappers.make_environment_factory(ENV),
                   config=MADQNConfig(deterministic=True), run_dir=str(tmp_path / "run"))
    with pytest.raises(Launched):
        launch.launch_and_wait(system, "local_mp", progress_interval_s=0, steps_at_start=0)
    assert any("--deterministic under local_mp" in line for line in said)
