"""The report of a finished grid: robust statistics, figures, a Markdown summary and marl-eval's JSON.

Scores: a run's final score is its final evaluation's mean return (see
`results.RunResult.score`). Per task, entries are compared on raw returns:
the final return, EPyMARL's "maximum return" (the evaluation step with the
highest mean over seeds: that mean) and "average return" (each run's mean over
all its evaluations), each a mean over seeds with its interval, and the IQM of
final scores. Aggregates over tasks need scores on one scale: with one task
they are its raw returns; normalising several tasks needs a fixed reference
per task besides the measured random policy (never a grid's own best run), and
without one the report says so and leaves them out. Every interval is a 95%
stratified-bootstrap interval over seeds, marked with the seed count under
`FULL_SEEDS` seeds; probabilities of improvement need `MIN_IMPROVEMENT_SEEDS`.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import presets
from mava_systems.experiment import results as results_lib
from mava_systems.experiment import statistics

REPORT_FILE = "report.md"
NUMBERS_FILE = "report.json"
PROFILE_FIGURE = "performance_profile.png"
SAMPLE_EFFICIENCY_FIGURE = "sample_efficiency.png"
AGGREGATE_FIGURE = "aggregate_iqm.png"
RETURNS_FIGURE = "returns.png"
RANDOM_SCORES_FILE = "random_scores.json"
PROFILE_THRESHOLDS = 41
# Under this many seeds every interval is marked with its seed count.
FULL_SEEDS = 5
# Probabilities of improvement are given from this many seeds on.
MIN_IMPROVEMENT_SEEDS = 3
PAPER_METRICS = ("final", "maximum", "average")

Interval = Tuple[float, float, float]


@dataclasses.dataclass
class Report:
    """The numbers of a report (also saved as report.json)."""

    labels: List[str]
    environments: List[str]
    seeds: int
    max_executor_steps: int
    random_scores: Dict[str, float]
    best_scores: Dict[str, float]
    per_task: Dict[str, Dict[str, Interval]]  # environment -> label -> IQM of raw scores.
    # environment -> label -> each seed's final score (raw), by seed.
    run_scores: Dict[str, Dict[str, List[float]]]
    aggregate: Dict[str, Interval]  # label -> IQM of final scores over tasks ({}: no scale).
    improvement: Dict[str, Interval]  # "x > y" -> probability of improvement.
    step_points: List[int]
    # label -> (IQM, low, high) of returns at each step ({}: the tasks share no scale).
    sample_efficiency: Dict[str, List[Interval]]
    # environment -> label -> (IQM, low, high) of raw returns over seeds at each step point.
    returns: Dict[str, Dict[str, List[Interval]]]
    rounds: Dict[str, int]  # label -> fewest evaluator rounds of its runs.
    final_episodes: int  # Fewest episodes of a run's final evaluation (0: none could be played).
    # environment -> label -> {"final", "maximum", "average"} -> mean over seeds [95% CI].
    paper: Dict[str, Dict[str, Dict[str, Interval]]] = dataclasses.field(default_factory=dict)
    # environment -> label -> the evaluation step of the maximum return.
    maximum_steps: Dict[str, Dict[str, int]] = dataclasses.field(default_factory=dict)
    curves_resampled: bool = True  # Whether curves were read at points (clock-evaluated runs).
    normaliser: str = ""  # What the aggregate's scores are, as the report prints it.


def compute_report(out: str, points: int = results_lib.DEFAULT_POINTS,
                   reps: int = statistics.DEFAULT_REPS, random_episodes: int = 100) -> Tuple[
                       Report, List[results_lib.RunResult], Optional[Dict[str, np.ndarray]]]:
    """Reads every run of the grid in `out` and computes the report's numbers.

    Returns the report, every run's result, and per label its final scores on
    the aggregate's scale as a (seeds, environments) matrix (None when the
    tasks have no common scale, see the module docstring).
    """
    grid = grid_lib.read_grid(out)
    # The random policy plays the grid's environments: a researcher's are registered by its modules.
    grid_lib.import_modules({"environments": grid.modules.get("environments", [])})
    run_results = results_lib.read_results(out, points)
    environments = list(grid.environments)
    labels = [entry.label for entry in grid.entries]
    scores = results_lib.score_matrices(run_results, environments)
    curves = results_lib.curve_tensors(run_results, environments)
    averages = results_lib.average_matrices(run_results, environments)
    random_scores = results_lib.random_policy_scores(
        environments, random_episodes, cache=os.path.join(out, RANDOM_SCORES_FILE))
    best_scores = {name: float(max(max(scores[label][:, index].max(),
                                       curves[label][:, index].max()) for label in labels))
                   for index, name in enumerate(environments)}
    per_task = {name: {label: statistics.interval_estimate(scores[label][:, [index]], reps=reps)
                       for label in labels}
                for index, name in enumerate(environments)}
    paper: Dict[str, Dict[str, Dict[str, Interval]]] = {}
    maximum_steps: Dict[str, Dict[str, int]] = {}
    for index, name in enumerate(environments):
        paper[name], maximum_steps[name] = {}, {}
        for label in labels:
            best, *maximum = statistics.maximum_over_steps(curves[label][:, index], reps=reps)
            maximum_steps[name][label] = int(run_results[0].steps[best])
            paper[name][label] = {
                "final": statistics.interval_estimate(scores[label][:, [index]],
                                                      aggregate=statistics.mean, reps=reps),
                "maximum": tuple(maximum),
                "average": statistics.interval_estimate(averages[label][:, [index]],
                                                        aggregate=statistics.mean, reps=reps)}
    run_scores = {name: {label: [float(score) for score in scores[label][:, index]]
                         for label in labels}
                  for index, name in enumerate(environments)}
    # One task: raw returns are one scale. Several: no fixed reference yet, so no common scale.
    common_scale = len(environments) == 1
    scaled_scores = scores if common_scale else None
    normaliser = (f"none: one task, raw returns (random policy {random_scores[environments[0]]:.3f})"
                  if common_scale else
                  "none: normalising several tasks needs a fixed reference score per task "
                  "beside the random policy, and these tasks have none; aggregates over tasks "
                  "are left out")
    aggregate = ({label: statistics.interval_estimate(scores[label], reps=reps)
                  for label in labels} if common_scale else {})
    # Compared per task, so raw returns do (any per-task normalisation gives the same).
    improvement = ({f"{x} > {y}": interval for (x, y), interval in
                    statistics.pairwise_improvements(scores, reps=reps).items()}
                   if grid.seeds >= MIN_IMPROVEMENT_SEEDS else {})
    sample_efficiency = ({label: [statistics.interval_estimate(curves[label][:, :, point],
                                                               reps=reps)
                                  for point in range(len(run_results[0].steps))]
                          for label in labels} if common_scale else {})
    returns = {name: {label: [statistics.interval_estimate(curves[label][:, [index], point],
                                                           reps=reps)
                              for point in range(len(run_results[0].steps))]
                      for label in labels}
               for index, name in enumerate(environments)}
    rounds = {label: min(result.rounds for result in run_results
                         if result.run.entry.label == label) for label in labels}
    report = Report(labels, environments, grid.seeds, grid.max_executor_steps, random_scores,
                    best_scores, per_task, run_scores, aggregate, improvement,
                    [int(step) for step in run_results[0].steps], sample_efficiency, returns,
                    rounds, min(len(result.final_returns) for result in run_results),
                    paper, maximum_steps, run_results[0].resampled, normaliser)
    return report, run_results, scaled_scores


def _interval_text(interval: Interval, digits: int = 3, seeds: Optional[int] = None) -> str:
    """`point [low, high]`, marked `(n=seeds)` when `seeds` is under `FULL_SEEDS`."""
    point, low, high = interval
    mark = f" (n={seeds})" if seeds is not None and seeds < FULL_SEEDS else ""
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]{mark}"


def intervals_text(seeds: int) -> str:
    """What the report's intervals are, and what the seed count allows."""
    text = (f"Intervals: 95% percentile stratified bootstrap over seeds (seeds resampled with "
            f"replacement within each task), from {seeds} seed{'s' if seeds != 1 else ''}.")
    if seeds < FULL_SEEDS:
        text += (f" With fewer than {FULL_SEEDS} seeds an interval says little (with 2 it "
                 "lies within the two runs' range): each is marked with its seed count (n=...).")
    return text


def markdown(report: Report, grid: grid_lib.Grid) -> str:
    """The Markdown summary: settings, the metrics papers report per task, per-task IQMs and
    every run's score, aggregates over tasks where the tasks share a scale, probabilities of
    improvement from `MIN_IMPROVEMENT_SEEDS` seeds, figures. A preset's part opens with the
    preset's name and scale."""
    seeds = report.seeds
    entries = ", ".join(f"`{entry.label}` = {entry.system}"
                        + "".join(f", {field}={value}" for field, value in
                                  grid.overrides.get(entry.label, {}).items())
                        for entry in grid.entries)
    curves = ("at every evaluation step of the runs (evaluation by executor steps)"
              if not report.curves_resampled else
              f"resampled at {len(report.step_points)} evenly spaced steps, the latest round at "
              "or before each (the runs were evaluated on the clock, at different steps)")
    lines = [
        f"# {presets.part_heading(grid.preset)}" if grid.preset else "# Experiment report", "",
        f"Entries: {entries}. Environments: {', '.join(report.environments)}. "
        f"Seeds: {seeds}. Budget: {report.max_executor_steps:,} executor steps per run.",
        "",
        f"Final return of a run: the mean greedy return of its last checkpoint over "
        f"{report.final_episodes} episodes (10 evaluator rounds' worth)"
        + ("" if report.final_episodes else "; the last evaluator round's where none could "
           "be played") + ". Maximum return (EPyMARL's): the evaluation step whose mean over "
        "seeds is highest, that mean. Average return (EPyMARL's): each run's mean over all its "
        f"evaluations. Curves and evaluation steps: {curves}. " + intervals_text(seeds)
        + " IQM: interquartile mean over seeds (and tasks); with fewer than 4 scores nothing is "
        "trimmed (their mean).", "",
        "## Returns per task (mean over seeds [95% CI])", "",
        "| Task | Entry | final return | maximum return | at step | average return |",
        "|---|---|---|---|---|---|"]
    for name in report.environments:
        for label in report.labels:
            paper = report.paper[name][label]
            lines.append(f"| {name} | {label} | {_interval_text(paper['final'], seeds=seeds)} | "
                         f"{_interval_text(paper['maximum'], seeds=seeds)} | "
                         f"{report.maximum_steps[name][label]:,} | "
                         f"{_interval_text(paper['average'], seeds=seeds)} |")
    lines += ["", "## Final score per task (IQM of raw returns over seeds)", "",
              "| Entry | " + " | ".join(report.environments) + " |",
              "|---|" + "---|" * len(report.environments)]
    for label in report.labels:
        lines.append(f"| {label} | " + " | ".join(
            _interval_text(report.per_task[name][label], seeds=seeds)
            for name in report.environments) + " |")
    lines += ["", "| Task | random policy (measured) | best score in the grid (not a "
              "normaliser) |", "|---|---|---|"]
    lines += [f"| {name} | {report.random_scores[name]:.3f} | {report.best_scores[name]:.3f} |"
              for name in report.environments]
    lines += ["", "## Final score of every run (raw returns)", ""]
    for name in report.environments:
        lines += [f"{name}:", "",
                  "| Entry | " + " | ".join(f"seed {seed}" for seed in range(seeds))
                  + " | median |", "|---|" + "---|" * (seeds + 1)]
        lines += [f"| {label} | " + " | ".join(f"{score:.3f}" for score in scores)
                  + f" | {float(np.median(scores)):.3f} |"
                  for label, scores in report.run_scores[name].items()]
        lines.append("")
    lines.pop()  # The next section opens with its own blank line.
    lines += ["", "## Aggregate over tasks", "", f"Normaliser: {report.normaliser}.", ""]
    if report.aggregate:
        lines += ["| Entry | IQM of final scores [95% CI] | evaluator rounds (fewest of its "
                  "runs) |", "|---|---|---|"]
        lines += [f"| {label} | {_interval_text(report.aggregate[label], seeds=seeds)} | "
                  f"{report.rounds[label]} |" for label in report.labels]
    lines += ["", "## Probability of improvement", ""]
    if report.improvement:
        lines += ["P(X > Y): the chance that a run of X scores above a run of Y on the same task "
                  "(averaged over tasks).", "", "| X > Y | P [95% CI] |", "|---|---|"]
        lines += [f"| {pair} | {_interval_text(interval, 2, seeds)} |"
                  for pair, interval in report.improvement.items()]
    else:
        lines.append(f"Not given: it needs at least {MIN_IMPROVEMENT_SEEDS} seeds per entry "
                     f"(this grid has {seeds}); with fewer it is 0, 1 or a tie by chance.")
    lines += ["", "## Figures", ""]
    if report.aggregate:
        lines += [f"![Aggregate IQM]({AGGREGATE_FIGURE})", "",
                  f"![Performance profile]({PROFILE_FIGURE})", "",
                  f"![Sample efficiency]({SAMPLE_EFFICIENCY_FIGURE})", ""]
    lines += [f"![Returns per task]({RETURNS_FIGURE})", "",
              f"Raw data in marl-eval's layout: `{results_lib.MARL_EVAL_FILE}`.", ""]
    return "\n".join(lines)


def _figure(width: float, height: float, rows: int = 1) -> Tuple[Any, Any]:
    """A figure and its axes (an array of `rows` axes, one above the other, when rows > 1)."""
    # A Figure without pyplot: no global backend or figure registry is touched.
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    figure = Figure(figsize=(width, height), dpi=100)
    return figure, figure.subplots(rows, 1)


def _save(figure: Any, path: str) -> str:
    figure.tight_layout()
    figure.savefig(path, format="png")
    return path


def plot_aggregate(report: Report, path: str) -> str:
    """The aggregate IQM of each entry with its interval, as horizontal bars."""
    figure, axes = _figure(6, 1 + 0.6 * len(report.labels))
    for index, label in enumerate(report.labels):
        point, low, high = report.aggregate[label]
        axes.barh(index, high - low, left=low, height=0.6, color=f"C{index % 10}", alpha=0.6)
        axes.plot([point, point], [index - 0.3, index + 0.3], color="black")
    axes.set_yticks(range(len(report.labels)), report.labels)
    axes.invert_yaxis()  # The first entry on top.
    axes.set_xlabel("IQM of final scores (95% CI)")
    return _save(figure, path)


def _plot_bands(x: np.ndarray, bands: Dict[str, Tuple[np.ndarray, np.ndarray, np.ndarray]],
                xlabel: str, ylabel: str, path: str, marker: Optional[str] = None) -> str:
    """One line per label with its shaded (low, high) band, saved as a PNG."""
    figure, axes = _figure(7, 4.5)
    for index, (label, (middle, low, high)) in enumerate(bands.items()):
        axes.plot(x, middle, color=f"C{index % 10}", marker=marker, label=label)
        axes.fill_between(x, low, high, color=f"C{index % 10}", alpha=0.2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(loc="best")
    axes.grid(True, alpha=0.3)
    return _save(figure, path)


def plot_performance_profile(report: Report, scaled_scores: Dict[str, np.ndarray],
                             path: str, reps: int) -> str:
    """The fraction of runs scoring above each threshold, per entry, with bands."""
    values = np.concatenate([scores.ravel() for scores in scaled_scores.values()])
    low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low - 1.0, high + 1.0
    thresholds = np.linspace(low, high, PROFILE_THRESHOLDS)
    bands = {label: statistics.performance_profile(scaled_scores[label], thresholds,
                                                   reps=reps) for label in report.labels}
    return _plot_bands(thresholds, bands, "final score τ",
                       "fraction of runs with score > τ (95% CI)", path)


def plot_sample_efficiency(report: Report, path: str) -> str:
    """IQM of returns over seeds and tasks against executor steps, with bands."""
    bands = {label: tuple(np.asarray(report.sample_efficiency[label]).T)
             for label in report.labels}
    return _plot_bands(np.asarray(report.step_points), bands, "executor steps",
                       "IQM of return (95% CI)", path, marker="o")


def plot_returns(report: Report, path: str) -> str:
    """Per task, the IQM over seeds of the raw evaluator return against executor steps, with
    bands, beside the random policy's score (one panel per task)."""
    figure, panels = _figure(7, 3.5 * len(report.environments), rows=len(report.environments))
    steps = np.asarray(report.step_points)
    for axes, name in zip(np.atleast_1d(panels), report.environments):
        for index, label in enumerate(report.labels):
            middle, low, high = np.asarray(report.returns[name][label]).T
            axes.plot(steps, middle, color=f"C{index % 10}", marker="o", label=label)
            axes.fill_between(steps, low, high, color=f"C{index % 10}", alpha=0.2)
        axes.axhline(report.random_scores[name], color="gray", linestyle="--",
                     label="random policy")
        axes.set_title(name)
        axes.set_xlabel("executor steps")
        axes.set_ylabel("return, IQM over seeds (95% CI)")
        axes.legend(loc="best")
        axes.grid(True, alpha=0.3)
    return _save(figure, path)


def write_report(out: str, report_dir: str, points: int = results_lib.DEFAULT_POINTS,
                 reps: int = statistics.DEFAULT_REPS) -> Dict[str, str]:
    """Computes the report of the grid in `out` and writes its files to `report_dir`; returns
    them by kind."""
    grid = grid_lib.read_grid(out)
    report, run_results, scaled_scores = compute_report(out, points, reps)
    os.makedirs(report_dir, exist_ok=True)
    files = {
        "marl_eval": results_lib.write_marl_eval_json(
            run_results, os.path.join(report_dir, results_lib.MARL_EVAL_FILE)),
        "returns": plot_returns(report, os.path.join(report_dir, RETURNS_FIGURE)),
        "numbers": os.path.join(report_dir, NUMBERS_FILE),
        "markdown": os.path.join(report_dir, REPORT_FILE),
    }
    if scaled_scores is not None:  # The tasks share a scale.
        files.update(
            aggregate=plot_aggregate(report, os.path.join(report_dir, AGGREGATE_FIGURE)),
            performance_profile=plot_performance_profile(
                report, scaled_scores, os.path.join(report_dir, PROFILE_FIGURE), reps),
            sample_efficiency=plot_sample_efficiency(
                report, os.path.join(report_dir, SAMPLE_EFFICIENCY_FIGURE)))
    with open(files["numbers"], "w") as numbers_file:
        json.dump(dataclasses.asdict(report), numbers_file, indent=2)
    with open(files["markdown"], "w") as markdown_file:
        markdown_file.write(markdown(report, grid))
    return files


def write_preset_report(out: str, report_dir: str, points: int = results_lib.DEFAULT_POINTS,
                        reps: int = statistics.DEFAULT_REPS) -> Dict[str, str]:
    """Writes the report of each finished part of the preset run in `out` to
    `report_dir/<part>`, and `report_dir/report.md`: the preset and its scale on its first
    line, the protocol, the published figures beside ours, and the parts not finished yet;
    returns the files by kind.

    Raises:
      ValueError: if no part has finished.
    """
    record = presets.read(out)
    preset = presets.from_record(record)
    line = presets.scale_line(preset, record["scale"])
    files: Dict[str, str] = {}
    numbers: Dict[str, Any] = {}
    unfinished: Dict[str, str] = {}
    for part in preset.parts:
        try:
            part_files = write_report(os.path.join(out, part.name),
                                      os.path.join(report_dir, part.name), points, reps)
        except ValueError as error:
            unfinished[part.name] = str(error)
            continue
        files.update({f"{part.name} {kind}": path for kind, path in part_files.items()})
        with open(part_files["numbers"]) as numbers_file:
            numbers[part.name] = json.load(numbers_file)
    if not numbers:
        raise ValueError(f"no part of the preset run in {out} can be reported yet: "
                         + "; ".join(f"{name}: {error}" for name, error in unfinished.items()))
    seeds = record["seeds"]
    changes = record.get("changes") or []
    lines = [f"# {line}", "", *presets.protocol_lines(preset, record["scale"], seeds, changes),
             *([f"Changed by --set (each part's report lists its entries' settings): "
                f"{' '.join(changes)}."] if changes else []),
             "", "## Published figures beside ours", "",
             *presets.published_table(preset, numbers,
                                      f" (n={seeds})" if seeds < FULL_SEEDS else ""),
             "", "## Parts", "",
             *(f"- [{part.name}]({part.name}/{REPORT_FILE}): {', '.join(part.systems)} on "
               f"{', '.join(part.environments)}" if part.name in numbers else
               f"- {part.name}: not reported ({unfinished[part.name]})"
               for part in preset.parts), ""]
    files["markdown"] = os.path.join(report_dir, REPORT_FILE)
    with open(files["markdown"], "w") as markdown_file:
        markdown_file.write("\n".join(lines))
    return files
