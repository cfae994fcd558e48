"""The metrics papers report, from a grid's logs: final, maximum and average returns over seeds,
curves at the evaluation steps, fixed normalisers and honest intervals (experiment/report.py)."""

import csv
import json
import os

import numpy as np
import pytest

from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import report as report_lib
from mava_systems.experiment import results

ENV = "debug/line_world_v0"
OTHER_ENV = "debug/memory_v0"
STEPS = 1000


def write_run(run_dir, steps, returns, final_returns):
    """A finished run evaluated by steps: its config, evaluator log (a round per step) and final
    evaluation."""
    os.makedirs(os.path.join(run_dir, "logs", "evaluator"))
    with open(os.path.join(run_dir, "config.json"), "w") as config:
        json.dump({"config": {"evaluation_every_steps": 200, "evaluation_interval_s": None}},
                  config)
    with open(os.path.join(run_dir, "logs", "evaluator", "logs.csv"), "w", newline="") as log:
        writer = csv.DictWriter(log, ["executor_steps", "evaluation_return",
                                      "evaluation_return_std", "final"])
        writer.writeheader()
        for index, (step, value) in enumerate(zip(steps, returns)):
            writer.writerow({"executor_steps": step, "evaluation_return": value,
                             "evaluation_return_std": 0.1,
                             "final": int(index == len(steps) - 1)})
    with open(os.path.join(run_dir, "final_evaluation.json"), "w") as result:
        json.dump({"returns": list(final_returns), "episodes": len(final_returns)}, result)


def make_grid(out, curves, environments=(ENV,), steps=None):
    """A finished grid in `out`: `curves[label][seed]` is (returns per round, final returns),
    the same for every environment; rounds at `steps` (by default every 200 executor steps),
    or, per run, `steps[label][seed]`."""
    labels = list(curves)
    seeds = len(curves[labels[0]])
    grid = grid_lib.Grid([grid_lib.Entry(label, "madqn") for label in labels],
                         list(environments), seeds, STEPS)
    os.makedirs(out)
    with open(os.path.join(out, grid_lib.SETTINGS_FILE), "w") as settings:
        json.dump(grid.settings(), settings)
    with open(os.path.join(out, report_lib.RANDOM_SCORES_FILE), "w") as scores:
        json.dump({name: -3.0 for name in environments}, scores)
    for run in grid.runs(out):
        returns, final = curves[run.entry.label][run.seed]
        run_steps = (list(range(0, STEPS + 1, 200)) if steps is None
                     else steps[run.entry.label][run.seed])
        write_run(run.run_dir, run_steps, returns, final)
    return grid


# Two entries, two seeds, rounds at 0, 200, ..., 1000.
TWO_SEEDS = {
    "a": [([-3.0, -2.0, -1.0, -0.5, -0.8, -0.9], [-0.9, -0.7]),
          ([-3.0, -2.5, -1.5, -0.9, -0.7, -0.6], [-0.6, -0.4])],
    "b": [([-3.0, -3.0, -2.0, -2.0, -1.0, -1.0], [-1.0, -1.2]),
          ([-3.0, -2.0, -2.0, -1.0, -1.0, -1.5], [-1.5, -1.3])],
}


def test_paper_metrics_are_means_over_seeds_at_the_evaluation_steps(tmp_path):
    out = str(tmp_path / "grid")
    make_grid(out, TWO_SEEDS)
    report, run_results, scaled = report_lib.compute_report(out, reps=200)
    # Curves are the rounds themselves, at the steps every run evaluated at.
    assert report.step_points == [0, 200, 400, 600, 800, 1000]
    assert not report.curves_resampled and not run_results[0].resampled
    a = report.paper[ENV]["a"]
    # Final: the mean over seeds of each run's final evaluation.
    assert a["final"][0] == pytest.approx(np.mean([-0.8, -0.5]))
    # Maximum: the step with the highest mean over seeds (600: -0.7), that mean.
    assert report.maximum_steps[ENV]["a"] == 600
    assert a["maximum"][0] == pytest.approx(-0.7)
    assert a["maximum"][1] <= -0.9 + 1e-9 and a["maximum"][2] >= -0.5 - 1e-9
    assert report.maximum_steps[ENV]["b"] == 800
    # Average: each run's mean over all its rounds, then their mean over seeds.
    assert a["average"][0] == pytest.approx(np.mean([np.mean(TWO_SEEDS["a"][0][0]),
                                                     np.mean(TWO_SEEDS["a"][1][0])]))
    for metric in report_lib.PAPER_METRICS:
        point, low, high = report.paper[ENV]["b"][metric]
        assert low <= point <= high
    # The curve's value at a step is the seeds' rounds there (2 seeds: nothing trimmed).
    assert report.returns[ENV]["a"][3][0] == pytest.approx(np.mean([-0.5, -0.9]))
    # One task: the aggregate is on raw returns, never normalised by the grid's best run.
    assert scaled is not None and report.aggregate["a"][0] == pytest.approx(-0.65)
    assert report.normaliser.startswith("none: one task, raw returns (random policy -3.000)")


def test_under_five_seeds_intervals_are_marked_and_under_three_no_improvement_is_given(tmp_path):
    out = str(tmp_path / "grid")
    make_grid(out, TWO_SEEDS)
    files = report_lib.write_report(out, str(tmp_path / "report"), reps=200)
    report = json.load(open(files["numbers"]))
    assert report["improvement"] == {}
    text = open(files["markdown"]).read()
    assert "Not given: it needs at least 3 seeds per entry (this grid has 2)" in text
    assert "stratified bootstrap over seeds" in text and "from 2 seeds" in text
    assert "Normaliser: none: one task, raw returns" in text
    rows = [line for line in text.splitlines() if line.startswith(f"| {ENV} | a |")]
    assert len(rows) == 1 and rows[0].count("(n=2)") == 3  # final, maximum, average.
    assert "| 600 |" in rows[0]
    assert "at every evaluation step of the runs" in text


def test_three_seeds_on_two_tasks_give_improvement_but_no_aggregate_without_a_reference(
        tmp_path):
    curves = {label: runs + [runs[0]] for label, runs in TWO_SEEDS.items()}
    out = str(tmp_path / "grid")
    make_grid(out, curves, environments=(ENV, OTHER_ENV))
    files = report_lib.write_report(out, str(tmp_path / "report"), reps=200)
    report = json.load(open(files["numbers"]))
    assert set(report["improvement"]) == {"a > b", "b > a"}
    assert report["improvement"]["a > b"][0] == pytest.approx(1.0)  # a's runs all beat b's.
    assert report["aggregate"] == {} and report["sample_efficiency"] == {}
    assert "aggregate" not in files and "performance_profile" not in files
    text = open(files["markdown"]).read()
    assert "needs a fixed reference score per task" in text
    assert "(n=3)" in text and "| a > b | 1.00 [" in text


def test_runs_evaluated_on_the_clock_are_resampled_and_the_report_says_so(tmp_path):
    steps = {label: [[0, 150, 420, 610, 905, 1010], [0, 230, 380, 700, 850, 1020]]
             for label in TWO_SEEDS}
    out = str(tmp_path / "grid")
    make_grid(out, TWO_SEEDS, steps=steps)
    files = report_lib.write_report(out, str(tmp_path / "report"), points=5, reps=200)
    report = json.load(open(files["numbers"]))
    assert report["step_points"] == list(results.step_points(STEPS, 5))
    assert report["curves_resampled"]
    assert "resampled at 5 evenly spaced steps" in open(files["markdown"]).read()
