"""A grid's results: each run's evaluator rounds on common steps, and marl-eval's JSON layout.

Runs evaluated by executor steps (the default) have their rounds at the same
steps: the grid's curves are those rounds themselves, at the steps every run
evaluated at. Runs evaluated on the clock have rounds at different steps; for
comparisons (and for marl-eval, which needs every run to have the same steps)
each run's curve is then read at `points` evenly spaced step counts up to the
step limit: the value at a point is the latest round logged at or before it
(the first round, for points before any round), and the report says so.
"""

import dataclasses
import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from mava_systems import plot
from mava_systems.runs import run_directory
from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import run_one

DEFAULT_POINTS = 10
MARL_EVAL_FILE = "marl_eval.json"
RETURN_METRIC = "return"
ABSOLUTE_METRICS = "absolute_metrics"


@dataclasses.dataclass
class RunResult:
    """One run's evaluator returns at the grid's step points and its final score."""

    run: grid_lib.Run
    steps: np.ndarray  # The grid's steps (see `read_results`).
    returns: np.ndarray  # The run's mean return at each of them.
    # The final evaluation's per-episode returns (empty if the system cannot be evaluated so).
    final_returns: List[float]
    rounds: int  # Evaluator rounds the run logged.
    average_return: float = float("nan")  # The mean of every round's mean return.
    resampled: bool = True  # Whether `returns` were read at points (else they are rounds).

    @property
    def score(self) -> float:
        """The run's final score: its final evaluation's mean return, else its last round's."""
        return float(np.mean(self.final_returns)) if self.final_returns else float(
            self.returns[-1])


def step_points(max_steps: int, points: int = DEFAULT_POINTS) -> np.ndarray:
    """`points` evenly spaced executor step counts, the last one `max_steps`."""
    return np.linspace(max_steps / points, max_steps, points).round().astype(np.int64)


def value_at_points(steps: np.ndarray, values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The latest value logged at or before each point (the first value for earlier points)."""
    indices = np.searchsorted(steps, points, side="right") - 1
    return np.asarray(values)[np.maximum(indices, 0)]


def read_curve(run: grid_lib.Run) -> plot.LearningCurve:
    """A finished run's evaluator rounds.

    Raises:
      ValueError: if the run has not finished (no final evaluation) or logged no evaluation.
    """
    if run_one.read_final_evaluation(run.run_dir) is None:
        raise ValueError(f"run {run.name} in {run.run_dir} has not finished; run the "
                         "experiment command again to finish it")
    try:
        return plot.read_learning_curve(run.run_dir)
    except FileNotFoundError as error:
        raise ValueError(str(error)) from None


def read_run(run: grid_lib.Run, points: np.ndarray,
             curve: Optional[plot.LearningCurve] = None, resampled: bool = True) -> RunResult:
    """A finished run's result, its curve read at `points` (the latest round at or before each),
    or, unless `resampled`, at its rounds of those steps (it must have one at each).

    Raises:
      ValueError: if the run has not finished (no final evaluation) or logged no evaluation.
    """
    curve = curve if curve is not None else read_curve(run)
    final = run_one.read_final_evaluation(run.run_dir) or {}
    if resampled:
        returns = value_at_points(curve.steps, curve.returns, points)
    else:
        returns = curve.returns[np.searchsorted(curve.steps, points)]
    return RunResult(run, points, returns, list(final.get("returns", [])), len(curve.steps),
                     float(np.mean(curve.returns)), resampled)


def evaluated_by_steps(run: grid_lib.Run) -> bool:
    """Whether `run` was launched with evaluation by steps (its config.json has no
    `evaluation_interval_s`); runs made before that schedule existed were evaluated on the clock."""
    path = os.path.join(run.run_dir, run_directory.CONFIG_FILE)
    if not os.path.exists(path):
        return False
    with open(path) as config_file:
        config = json.load(config_file).get("config", {})
    return "evaluation_every_steps" in config and config.get("evaluation_interval_s") is None


def common_steps(curves: List[plot.LearningCurve]) -> Optional[np.ndarray]:
    """The steps every curve has a round at, if they hold at least half of each curve's rounds
    and two or more; else None."""
    common = set(curves[0].steps.tolist())
    for curve in curves[1:]:
        common &= set(curve.steps.tolist())
    if len(common) < 2 or any(len(common) < len(curve.steps) / 2 for curve in curves):
        return None
    return np.array(sorted(common))


def read_results(out: str, points: int = DEFAULT_POINTS) -> List[RunResult]:
    """Every run of the grid saved in `out` (all must have finished): at the steps every run
    evaluated at (see `common_steps`), else at `points` evenly spaced steps."""
    grid = grid_lib.read_grid(out)
    runs = grid.runs(out)
    curves = [read_curve(run) for run in runs]
    # Clock-evaluated rounds can share a few steps by chance: only runs evaluated by steps are
    # read at their rounds.
    steps = common_steps(curves) if all(evaluated_by_steps(run) for run in runs) else None
    if steps is None:
        at = step_points(grid.max_executor_steps, points)
        return [read_run(run, at, curve) for run, curve in zip(runs, curves)]
    return [read_run(run, steps, curve, resampled=False) for run, curve in zip(runs, curves)]


def marl_eval_data(results: List[RunResult]) -> Dict[str, Any]:
    """The results in marl-eval's raw-data layout.

    environment -> task -> algorithm -> "seed_<k>" -> {"step_<i>": {"step_count": steps,
    "return": [mean return of the round]}, ..., "absolute_metrics": {"return":
    [the final evaluation's episode returns]}}. Our evaluator logs each round's
    mean, so a step holds one value; absolute metrics hold every episode of the
    final evaluation (10x a round's episodes), or the last round's mean for a
    system that cannot be evaluated from its checkpoint.
    """
    data: Dict[str, Any] = {}
    for result in results:
        family, task = grid_lib.split_environment(result.run.environment)
        run_data: Dict[str, Any] = {
            f"step_{index}": {"step_count": int(steps), RETURN_METRIC: [float(value)]}
            for index, (steps, value) in enumerate(zip(result.steps, result.returns))}
        run_data[ABSOLUTE_METRICS] = {
            RETURN_METRIC: [float(value) for value in result.final_returns]
            or [float(result.returns[-1])]}
        (data.setdefault(family, {}).setdefault(task, {}).setdefault(result.run.entry.label, {})
         [f"seed_{result.run.seed}"]) = run_data
    return data


def write_marl_eval_json(results: List[RunResult], path: str) -> str:
    """Writes `marl_eval_data(results)` to `path`; returns it."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as json_file:
        json.dump(marl_eval_data(results), json_file, indent=2)
    return path


def run_arrays(results: List[RunResult], environments: List[str],
               value: Callable[[RunResult], Union[float, np.ndarray]],
               shape: Tuple[int, ...] = ()) -> Dict[str, np.ndarray]:
    """Per label, `value(run)` of each of its runs in a (seeds, environments) + `shape` array.

    A run's value sits at its seed's row and its environment's column; a seed or an
    environment a label has no run of stays NaN.
    """
    labels = list(dict.fromkeys(result.run.entry.label for result in results))
    seeds = max(result.run.seed for result in results) + 1
    arrays = {label: np.full((seeds, len(environments)) + tuple(shape), np.nan)
              for label in labels}
    for result in results:
        arrays[result.run.entry.label][
            result.run.seed, environments.index(result.run.environment)] = value(result)
    return arrays


def score_matrices(results: List[RunResult], environments: List[str]
                   ) -> Dict[str, np.ndarray]:
    """Per label, its final scores as a (seeds, environments) matrix."""
    return run_arrays(results, environments, lambda result: result.score)


def average_matrices(results: List[RunResult], environments: List[str]
                     ) -> Dict[str, np.ndarray]:
    """Per label, each run's mean over all its evaluations as a (seeds, environments) matrix."""
    return run_arrays(results, environments, lambda result: result.average_return)


def curve_tensors(results: List[RunResult], environments: List[str]) -> Dict[str, np.ndarray]:
    """Per label, its returns at the step points as a (seeds, environments, points) array."""
    return run_arrays(results, environments, lambda result: result.returns,
                      shape=(len(results[0].steps),))


def random_policy_scores(environments: List[str], episodes: int = 100, seed: int = 0,
                         cache: Optional[str] = None) -> Dict[str, float]:
    """Each environment's mean episode return under uniformly random legal actions.

    Cached in the JSON file `cache` if given (the episodes are played once).
    """
    from mava_systems.experiment import baselines  # pylint: disable=import-outside-toplevel

    saved: Dict[str, float] = {}
    if cache and os.path.exists(cache):
        with open(cache) as cache_file:
            saved = json.load(cache_file)
    missing = [name for name in environments if name not in saved]
    for name in missing:
        saved[name] = baselines.random_policy_return(name, episodes, seed)
    if cache and missing:
        with open(cache, "w") as cache_file:
            json.dump(saved, cache_file, indent=2)
    return {name: saved[name] for name in environments}
