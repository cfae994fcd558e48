"""Experiment grids: bad input, the marl-eval layout, and a tiny grid run, interrupted, resumed and reported."""

import glob
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mava_systems import registry
from mava_systems.experiment import __main__ as cli
from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import report as report_lib
from mava_systems.experiment import results, run_one, scheduling, systems
from mava_systems.terminal.progress import read_snapshot

ENV = "debug/line_world_v0"
STEPS = 300
# Two configurations of MADQN that train within the tiny budget: a small replay warm-up and
# batch, rounds every half second; "fast" learns ten times faster.
TINY = {"min_replay_size": 100, "batch_size": 32, "evaluation_interval_s": 0.5}
GRID_ARGS = ["--systems=madqn,fast=madqn", f"--envs={ENV}", "--seeds=2",
             f"--max_executor_steps={STEPS}", "--parallel=2", "--progress_interval_s=1",
             "--set", "fast.learning_rate=0.01",
             *[argument for label in ("madqn", "fast") for field, value in TINY.items()
               for argument in ("--set", f"{label}.{field}={value}")]]


def check_marl_eval_layout(data):
    """Checks `data` against marl-eval's documented raw-data layout (its README) and the
    assumptions of its processing code: env -> task -> algorithm -> run -> "step_<i>" with an
    integer step_count and a list per metric, then "absolute_metrics" last; every run has the
    same steps and metrics, every task the same algorithms and runs."""
    step_counts, metric_names, algorithm_sets, run_counts = set(), set(), set(), set()
    for tasks in data.values():
        for algorithms in tasks.values():
            algorithm_sets.add(tuple(sorted(algorithms)))
            for runs in algorithms.values():
                run_counts.add(len(runs))
                for run in runs.values():
                    keys = list(run)
                    assert keys[-1] == "absolute_metrics"
                    assert keys[:-1] == [f"step_{index}" for index in range(len(keys) - 1)]
                    step_counts.add(len(keys) - 1)
                    previous = -1
                    for key in keys[:-1]:
                        step = run[key]
                        assert isinstance(step["step_count"], int) and step["step_count"] > previous
                        previous = step["step_count"]
                        metrics = {name: value for name, value in step.items()
                                   if name != "step_count"}
                        metric_names.add(tuple(sorted(metrics)))
                        for values in metrics.values():
                            assert values and all(isinstance(value, float) for value in values)
                    absolute = run["absolute_metrics"]
                    metric_names.add(tuple(sorted(absolute)))
                    assert all(absolute.values())
    assert len(step_counts) == len(metric_names) == len(algorithm_sets) == len(run_counts) == 1


# ---- bad input, refused before anything starts ----

def test_unknown_system_and_environment_are_refused_listing_the_available_ones(tmp_path, capsys):
    out = str(tmp_path / "grid")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--systems=madqn,qmax", f"--envs={ENV}", "--max_executor_steps=10",
                  f"--out={out}"])
    assert exit_info.value.code == 2
    assert "unknown system 'qmax'; available: " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--systems=madqn", "--envs=debug/no_such_world", "--max_executor_steps=10",
                  f"--out={out}"])
    assert "family 'debug' has line_world_v0" in capsys.readouterr().err
    assert not os.path.exists(out)


@pytest.mark.parametrize("arguments, message", [
    (["--seeds=0"], "--seeds must be an integer >= 1, got 0"),
    (["--max_executor_steps=0"], "--max_executor_steps must be an integer >= 1"),
    (["--parallel=0"], "--parallel must be >= 1"),
    (["--set", "madqn.no_such_field=1"], "MADQNConfig has no field 'no_such_field'"),
    (["--set", "other.learning_rate=1"], "no entry labelled 'other'"),
    (["--set", "madqn.learning_rate=-1"], "learning_rate=-1.0 is out of range"),
    (["--set", "madqn.seed=3"], "seed is set by the grid"),
    (["--systems=madqn,madqn"], "label 'madqn' appears twice"),
    (["--set", "madqn.exploration=linear:1"], "madqn.exploration=linear:1: exploration schedule"),
    (["--systems=mappo", "--set", "mappo.exploration=constant:0.1"],
     "MAPPOConfig has no field 'exploration'"),
])
def test_bad_grid_settings_are_refused(tmp_path, capsys, arguments, message):
    out = str(tmp_path / "grid")
    base = {"--systems": "madqn", "--envs": ENV, "--max_executor_steps": "10", "--out": out}
    named = {argument.partition("=")[0] for argument in arguments}
    with pytest.raises(SystemExit) as exit_info:
        cli.main([f"{key}={value}" for key, value in base.items() if key not in named]
                 + arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(out)


def test_an_out_holding_another_grid_is_refused_untouched_unless_start_fresh(tmp_path):
    out = str(tmp_path / "grid")
    entries = grid_lib.parse_entries("madqn")
    first = grid_lib.Grid(entries, [ENV], 2, 100)
    grid_lib.prepare_out(first, out)
    saved = open(os.path.join(out, grid_lib.SETTINGS_FILE)).read()
    assert grid_lib.prepare_out(first, out) is None  # The same grid: accepted.
    with pytest.raises(SystemExit) as exit_info:  # The command refuses it before any run.
        cli.main(["--systems=madqn", f"--envs={ENV}", "--seeds=3", "--max_executor_steps=100",
                  f"--out={out}"])
    assert exit_info.value.code == 2
    assert sorted(os.listdir(out)) == [grid_lib.SETTINGS_FILE]
    other = grid_lib.Grid(entries, [ENV], 3, 100)
    with pytest.raises(ValueError, match=r"other settings \(seeds: saved 2, now 3\)"):
        grid_lib.prepare_out(other, out)
    assert open(os.path.join(out, grid_lib.SETTINGS_FILE)).read() == saved
    assert grid_lib.prepare_out(other, out, start_fresh=True) == f"{out}.old-1"
    assert open(os.path.join(f"{out}.old-1", grid_lib.SETTINGS_FILE)).read() == saved
    assert grid_lib.read_grid(out).seeds == 3
    # The step budget can be raised (the runs continue), never lowered.
    with pytest.raises(ValueError, match=r"max_executor_steps: saved 100, now 50.*a larger "
                                         r"--max_executor_steps alone continues the grid"):
        grid_lib.prepare_out(grid_lib.Grid(entries, [ENV], 3, 50), out)
    assert grid_lib.prepare_out(grid_lib.Grid(entries, [ENV], 3, 200), out) is None
    assert grid_lib.read_grid(out).max_executor_steps == 200
    with pytest.raises(ValueError, match=r"seeds: saved 3, now 2"):  # Not with another change.
        grid_lib.prepare_out(grid_lib.Grid(entries, [ENV], 2, 400), out)


MY_SYSTEM = """
from mava_systems import vdn


class MyVDN(vdn.VDN):
    \"\"\"A researcher's own system, defined in a file of theirs.\"\"\"

    system_name = "test_experiment_my_vdn"
"""


@pytest.mark.parametrize("text, message", [
    (None, r"system module '.*mine\.py': no such file"),
    ("x = 1\n", r"system module '.*mine\.py' defines no system: a class deriving from "
                 r"mava_systems\.system\.DistributedSystem with its own system_name"),
    ("import no_such_module\n", r"cannot import the system module '.*mine\.py': "
                                 r"ModuleNotFoundError"),
])
def test_a_bad_system_module_is_refused_naming_it(tmp_path, capsys, text, message):
    if text is not None:
        (tmp_path / "mine.py").write_text(text)
    out = str(tmp_path / "grid")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--systems=vdn", f"--envs={ENV}", "--max_executor_steps=10", f"--out={out}",
                  f"--system_module={tmp_path / 'mine.py'}"])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)
    assert not os.path.exists(out)


def test_a_system_from_the_researchers_file_joins_a_grid_and_later_commands_find_it(tmp_path):
    path = tmp_path / "user_code" / "my_system.py"
    path.parent.mkdir()
    path.write_text(MY_SYSTEM)
    out = str(tmp_path / "grid")
    flags = {"systems": [os.path.relpath(path)]}
    modules = grid_lib.modules_to_import(out, flags)
    assert modules == {"systems": [str(path)], "environments": []}  # Recorded by absolute path.
    grid_lib.import_modules(modules)
    entries = grid_lib.parse_entries("mine=test_experiment_my_vdn,vdn")
    grid = grid_lib.Grid(entries, [ENV], 1, 100,
                         grid_lib.parse_overrides(["mine.learning_rate=3e-3"], entries), modules)
    grid_lib.prepare_out(grid, out)
    # A later command (resume, report) finds the module without the flag, or with it again.
    assert grid_lib.read_grid(out).modules == {"systems": [str(path)]}
    assert grid_lib.modules_to_import(out, {}) == modules
    assert grid_lib.modules_to_import(out, flags) == modules
    grid_lib.prepare_out(grid_lib.Grid(entries, [ENV], 1, 100, grid.overrides), out)
    assert grid_lib.read_grid(out).modules == {}  # (The command passes the saved ones on.)
    # Each run's process imports the module before looking the system up.
    command = scheduling.run_command(grid, grid.runs(out)[0], "local_mt", grid.module_flags())
    assert f"--system_module={path}" in command and "--system=test_experiment_my_vdn" in command
    system_class = run_one.system_class_of(command[3:])
    assert system_class.__name__ == "MyVDN"
    # Its runs record the file, where evaluate imports the class from.
    assert registry.recorded_location(system_class)["system_script"] == str(path)
    assert registry.import_recorded_class(registry.recorded_location(system_class)) is system_class


def test_every_registered_system_names_its_acting_node_arguments():
    for name in registry.system_names():
        assert systems.acting_node_name(registry.system_class(name)) in ("executor", "actor")
    assert systems.step_limit_flag(registry.system_class("madqn")) == "max_executor_steps"
    assert systems.step_limit_flag(registry.system_class("dqn")) == "max_actor_steps"
    assert systems.default_num_caches(registry.system_class("dqn")) == 1
    assert systems.default_num_caches(registry.system_class("impala")) is None


# ---- results on step points, marl-eval layout ----

def test_values_at_step_points_are_the_latest_round_at_or_before_each_point():
    np.testing.assert_array_equal(results.step_points(1000, 4), [250, 500, 750, 1000])
    values = results.value_at_points(np.array([100, 400, 600]), np.array([1.0, 2.0, 3.0]),
                                     np.array([50, 400, 599, 1000]))
    np.testing.assert_array_equal(values, [1.0, 2.0, 2.0, 3.0])


def test_marl_eval_data_has_the_documented_layout():
    entry = grid_lib.Entry("fast", "madqn")
    run_results = [
        results.RunResult(grid_lib.Run(entry, ENV, seed, f"/runs/{seed}"), np.array([5, 10]),
                          np.array([-3.0, -1.0 - seed]), [-1.0, -2.0] if seed else [], 2)
        for seed in range(2)]
    data = results.marl_eval_data(run_results)
    check_marl_eval_layout(data)
    seed_1 = data["debug"]["line_world_v0"]["fast"]["seed_1"]
    assert seed_1["step_1"] == {"step_count": 10, "return": [-2.0]}
    assert seed_1["absolute_metrics"] == {"return": [-1.0, -2.0]}
    # Without a final evaluation, the last round stands in.
    assert data["debug"]["line_world_v0"]["fast"]["seed_0"]["absolute_metrics"] == {
        "return": [-1.0]}
    assert [result.score for result in run_results] == [-1.0, -1.5]



def test_run_arrays_put_each_runs_value_at_its_seed_and_environment_and_leave_gaps_nan():
    fast, slow = grid_lib.Entry("fast", "madqn"), grid_lib.Entry("slow", "vdn")
    other = "debug/two_step_v0"
    run_results = [
        results.RunResult(grid_lib.Run(entry, environment, seed, "/runs"), np.array([5, 10]),
                          np.array([seed, 10.0 * seed + index]), [], 2, average_return=seed + 0.5)
        for index, (entry, environment, seed) in enumerate(
            [(fast, ENV, 0), (fast, other, 1), (slow, ENV, 1)])]
    environments = [ENV, other]
    scores = results.score_matrices(run_results, environments)
    np.testing.assert_array_equal(scores["fast"], [[0.0, np.nan], [np.nan, 11.0]])
    np.testing.assert_array_equal(scores["slow"], [[np.nan, np.nan], [12.0, np.nan]])
    averages = results.average_matrices(run_results, environments)
    np.testing.assert_array_equal(averages["fast"], [[0.5, np.nan], [np.nan, 1.5]])
    curves = results.curve_tensors(run_results, environments)
    assert curves["slow"].shape == (2, 2, 2)
    np.testing.assert_array_equal(curves["slow"][1, 0], [1.0, 12.0])
    assert np.isnan(curves["slow"][0]).all()
    steps = results.run_arrays(run_results, environments, lambda result: result.run.seed * 2)
    np.testing.assert_array_equal(steps["fast"], [[0.0, np.nan], [np.nan, 2.0]])


# ---- a tiny grid end to end ----

def _experiment(out, *extra, steps=STEPS, **popen):
    arguments = [argument.replace(f"={STEPS}", f"={steps}")
                 if argument.startswith("--max_executor_steps=") else argument
                 for argument in GRID_ARGS]
    return subprocess.Popen([sys.executable, "-m", "mava_systems.experiment", *arguments,
                             f"--out={out}", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)


@pytest.fixture(scope="module")
def tiny_grid(tmp_path_factory):
    """A grid of 2 MADQN configurations x line_world x 2 seeds: stopped once mid-run, then resumed.

    Returns its directory and the output of each command.
    """
    out = str(tmp_path_factory.mktemp("experiment") / "grid")
    first = _experiment(out)
    runs = grid_lib.Grid(grid_lib.parse_entries("madqn,fast=madqn"), [ENV], 2, STEPS).runs(out)
    deadline = time.monotonic() + 300
    while first.poll() is None and time.monotonic() < deadline:
        if any(getattr(read_snapshot(run.run_dir), "executor_steps", 0) for run in runs):
            break
        time.sleep(0.2)
    first.send_signal(signal.SIGTERM)
    first_output, _ = first.communicate(timeout=300)
    second = _experiment(out)
    second_output, _ = second.communicate(timeout=600)
    assert second.returncode == 0, second_output
    started = time.monotonic()
    third = _experiment(out)
    third_output, _ = third.communicate(timeout=120)
    return {"out": out, "runs": runs, "first": (first.returncode, first_output),
            "second": second_output, "third": (third.returncode, third_output,
                                               time.monotonic() - started)}


@pytest.mark.slow  # The grid's runs take a minute or more.
def test_an_interrupted_grid_resumes_its_runs_and_skips_finished_ones(tiny_grid):
    code, output = tiny_grid["first"]
    assert code == cli.INTERRUPTED_EXIT_CODE, output
    assert "Stopped by SIGTERM" in output
    assert "4 runs, 0 already finished, 4 to run" in output
    assert "Grid: runs done 0/4 | running: " in output
    assert "4 runs, 0 already finished" in tiny_grid["second"]
    logs = {run.name: open(scheduling.log_path(tiny_grid["out"], run)).read()
            for run in tiny_grid["runs"]}
    resumed = [name for name, log in logs.items() if "Resuming the run in" in log]
    assert resumed, "no run resumed after the stop"
    for name, log in logs.items():
        assert log.count("Starting a fresh run") == 1, name
        assert "Final evaluation (40 greedy episodes)" in log, name
    for run in tiny_grid["runs"]:
        with open(os.path.join(run.run_dir, "final_evaluation.json")) as result_file:
            assert len(json.load(result_file)["returns"]) == 40
        snapshot = read_snapshot(run.run_dir)
        assert snapshot.executor_steps >= STEPS
    assert "All 4 runs finished" in tiny_grid["second"]
    assert "Grid: runs done 4/4" in tiny_grid["second"]


@pytest.mark.slow  # The grid's runs take a minute or more.
def test_a_rerun_with_nothing_left_launches_nothing(tiny_grid):
    code, output, _ = tiny_grid["third"]
    assert code == 0, output
    assert "4 runs, 4 already finished, 0 to run" in output
    assert "Grid:" not in output  # No run was launched, so no progress either.


@pytest.mark.slow  # The grid's runs take a minute or more.
def test_the_report_has_every_figure_and_table(tiny_grid, tmp_path):
    out = tiny_grid["out"]
    report_dir = str(tmp_path / "report")
    assert cli.main(["report", out, f"--out={report_dir}", "--reps=300", "--points=5"]) == 0
    for name in (report_lib.PROFILE_FIGURE, report_lib.SAMPLE_EFFICIENCY_FIGURE,
                 report_lib.AGGREGATE_FIGURE, report_lib.RETURNS_FIGURE):
        with open(os.path.join(report_dir, name), "rb") as figure:
            assert figure.read(8) == b"\x89PNG\r\n\x1a\n", name
    numbers = json.load(open(os.path.join(report_dir, report_lib.NUMBERS_FILE)))
    assert numbers["labels"] == ["madqn", "fast"]
    # Two seeds: no probability of improvement (it needs 3; see tests/test_report_metrics.py).
    assert numbers["improvement"] == {}
    for label in ("madqn", "fast"):
        point, low, high = numbers["aggregate"][label]
        assert low <= point <= high <= 1.0
        point, low, high = numbers["per_task"][ENV][label]
        assert low <= point <= high
        assert len(numbers["sample_efficiency"][label]) == 5
    assert numbers["random_scores"][ENV] < numbers["best_scores"][ENV]
    text = open(os.path.join(report_dir, report_lib.REPORT_FILE)).read()
    for heading in ("## Final score per task", "## Final score of every run",
                    "## Aggregate over tasks", "## Probability of improvement",
                    "![Performance profile]", "![Sample efficiency]", "![Aggregate IQM]",
                    "![Returns per task]"):
        assert heading in text
    assert "it needs at least 3 seeds" in text and "| madqn |" in text
    data = json.load(open(os.path.join(report_dir, results.MARL_EVAL_FILE)))
    check_marl_eval_layout(data)
    runs = data["debug"]["line_world_v0"]
    # Every run's score is its final evaluation's mean, and the table gives their median.
    for label in ("madqn", "fast"):
        scores = [np.mean(runs[label][f"seed_{seed}"]["absolute_metrics"]["return"])
                  for seed in range(2)]
        assert numbers["run_scores"][ENV][label] == pytest.approx(scores)
        assert (f"| {label} | {scores[0]:.3f} | {scores[1]:.3f} | {np.median(scores):.3f} |"
                in text), text
        # With 2 seeds the IQM trims nothing: the curve's last point is the mean of the runs'.
        last = [runs[label][f"seed_{seed}"]["step_4"]["return"][0] for seed in range(2)]
        assert numbers["returns"][ENV][label][-1][0] == pytest.approx(np.mean(last))
    assert set(runs) == {"madqn", "fast"} and set(runs["fast"]) == {"seed_0", "seed_1"}
    assert len(runs["fast"]["seed_0"]["absolute_metrics"]["return"]) == 40
    assert runs["fast"]["seed_0"]["step_4"]["step_count"] == STEPS


@pytest.mark.slow  # The grid's runs take a minute or more.
def test_a_raised_step_budget_continues_the_finished_runs_keeping_their_evaluations(
        tiny_grid, tmp_path):
    out = str(tmp_path / "grid")
    shutil.copytree(tiny_grid["out"], out)  # The other tests keep the finished grid.
    more = STEPS + 150
    command = _experiment(out, steps=more)
    output, _ = command.communicate(timeout=600)
    assert command.returncode == 0, output
    assert "4 runs, 0 already finished, 4 to run" in output
    assert "All 4 runs finished" in output
    for run in grid_lib.read_grid(out).runs(out):
        assert f"{run.name} continues to {more} executor steps" in output
        kept = glob.glob(os.path.join(run.run_dir, "final_evaluation_at_*.json"))
        assert len(kept) == 1
        assert STEPS <= int(kept[0].rsplit("_", 1)[1].split(".")[0]) < more
        assert len(json.load(open(kept[0]))["returns"]) == 40  # The first budget's evaluation.
        assert read_snapshot(run.run_dir).executor_steps >= more
        assert run_one.read_final_evaluation(run.run_dir)["trainer_steps"] > json.load(
            open(kept[0]))["trainer_steps"]
        log = open(scheduling.log_path(out, run)).read()
        assert log.count("Starting a fresh run") == 1 and "Resuming the run in" in log, run.name
    rerun = _experiment(out, steps=more)
    assert "4 runs, 4 already finished, 0 to run" in rerun.communicate(timeout=120)[0]


def test_a_report_on_unfinished_runs_says_which_run_to_finish(tmp_path, capsys):
    out = str(tmp_path / "grid")
    grid_lib.prepare_out(grid_lib.Grid(grid_lib.parse_entries("madqn"), [ENV], 1, 100), out)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report", out])
    assert exit_info.value.code == 2
    assert "run madqn debug/line_world_v0 seed 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["report", str(tmp_path / "nothing")])
    assert "holds no experiment" in capsys.readouterr().err


def test_the_progress_line_counts_runs_done_and_the_running_runs_steps(tmp_path):
    runs = grid_lib.Grid(grid_lib.parse_entries("madqn"), [ENV], 4, 300).runs(str(tmp_path))
    log_dir = os.path.join(runs[2].run_dir, "logs", "executor_0")
    os.makedirs(log_dir)
    with open(os.path.join(log_dir, "logs.csv"), "w") as log_file:
        log_file.write("executor_steps,executor_episodes\n120,12\n")
    progress = scheduling.GridProgress(runs, 300, io.StringIO(), 1.0, is_tty=False)
    line = progress.line(1, runs[2:], failed=1)
    assert line.startswith(f"runs done 1/4 (1 failed) | running: madqn {ENV} seed 2 120/300, "
                           f"madqn {ENV} seed 3 0/300 | elapsed 0:00:00 | remaining ")


def test_runs_go_seed_by_seed_so_a_grid_stopped_part_way_compares_every_entry():
    grid = grid_lib.Grid(grid_lib.parse_entries("madqn,dqn"), [ENV, "gymnasium/CartPole-v1"], 2, 10)
    assert [(run.seed, run.environment, run.entry.label) for run in grid.runs("out")] == [
        (seed, environment, label) for seed in (0, 1)
        for environment in (ENV, "gymnasium/CartPole-v1") for label in ("madqn", "dqn")]


def test_each_run_command_names_its_systems_step_limit_seed_and_overrides(tmp_path):
    entries = grid_lib.parse_entries("madqn,dqn")
    grid = grid_lib.Grid(entries, ["gymnasium/CartPole-v1"], 2, 500,
                         grid_lib.parse_overrides(["dqn.learning_rate=3e-4",
                                                   "madqn.exploration=linear:1,0.05,100"], entries))
    madqn_seed_1, dqn_seed_1 = grid.runs(str(tmp_path))[2:]
    assert "--exploration=linear:1,0.05,100" in scheduling.run_command(grid, madqn_seed_1,
                                                                       "local_mt")
    command = scheduling.run_command(grid, dqn_seed_1, "local_mt")
    assert command[1:3] == ["-m", "mava_systems.experiment.run_one"]
    assert {"--system=dqn", "--env=gymnasium/CartPole-v1", "--max_actor_steps=500", "--seed=1",
            "--learning_rate=3e-4", f"--run_dir={dqn_seed_1.run_dir}"} <= set(command)
    assert dqn_seed_1.run_dir == os.path.join(str(tmp_path), "runs", "gymnasium", "CartPole-v1",
                                              "dqn", "seed_1")
    assert "--max_executor_steps=500" in scheduling.run_command(grid, grid.runs(str(tmp_path))[0],
                                                                "local_mt")


def test_a_failed_final_evaluation_is_recorded_not_raised(tmp_path):
    result = run_one.final_evaluation(str(tmp_path), episodes=2, seed=0)
    assert result["returns"] == [] and result["episodes"] == 0
    assert result["unavailable"].startswith("ValueError: ") and "run.json" in result["unavailable"]
