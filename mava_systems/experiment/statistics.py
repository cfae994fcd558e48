"""Robust aggregate statistics over runs and tasks (Agarwal et al. 2021), on top of `rliable`.

Scores are matrices of shape (runs, tasks): entry [n, m] is run n's score on
task m (one array per system). Intervals are percentile stratified-bootstrap
intervals: runs (seeds) are resampled with replacement within each task.
"""

import warnings
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
from rliable import library, metrics

DEFAULT_REPS = 2000
CONFIDENCE = 0.95


def _as_scores(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1:
        scores = scores[:, None]
    if scores.ndim != 2 or scores.shape[0] < 1 or scores.shape[1] < 1:
        raise ValueError(f"scores must be a (runs, tasks) matrix with at least one entry, "
                         f"got shape {scores.shape}")
    return scores


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean: the mean of the middle 50% of all scores (runs and tasks pooled)."""
    return float(metrics.aggregate_iqm(_as_scores(scores)))


def mean(scores: np.ndarray) -> float:
    """The mean of all scores (runs and tasks pooled)."""
    return float(np.mean(_as_scores(scores)))


def maximum_over_steps(returns: np.ndarray, reps: int = DEFAULT_REPS, seed: Optional[int] = 0,
                       confidence: float = CONFIDENCE) -> Tuple[int, float, float, float]:
    """EPyMARL's "maximum return": of `returns` (seeds, evaluation steps), the step whose mean over
    seeds is highest, as (its index, the mean, and the mean's bootstrap interval over seeds)."""
    returns = np.asarray(returns, dtype=np.float64)
    if returns.ndim != 2 or not returns.size:
        raise ValueError(f"returns must be a (seeds, steps) matrix, got shape {returns.shape}")
    best = int(np.argmax(returns.mean(axis=0)))
    return (best, *interval_estimate(returns[:, [best]], aggregate=mean, reps=reps, seed=seed,
                                     confidence=confidence))


def normalise(scores: np.ndarray, random_score: float, best_score: float) -> np.ndarray:
    """`(scores - random) / (best - random)`: 0 is a random policy's score, 1 the best score.

    Raises:
      ValueError: if `best_score` equals `random_score` (no range to normalise by).
    """
    if best_score == random_score:
        raise ValueError(f"cannot normalise: best score {best_score} equals random score")
    return (np.asarray(scores, dtype=np.float64) - random_score) / (best_score - random_score)


def _bootstrap(score_dict: Mapping[str, object], func: Callable[..., np.ndarray], reps: int,
               seed: Optional[int], confidence: float) -> Tuple[dict, dict]:
    """rliable's stratified bootstrap: point estimates and (2, ...) intervals per key."""
    with warnings.catch_warnings():
        # arch deprecates the RandomState that rliable hands it; it is still what makes
        # the intervals reproducible from `seed`.
        warnings.filterwarnings("ignore", message="random_state is deprecated",
                                category=FutureWarning)
        return library.get_interval_estimates(
            score_dict, func, reps=reps, confidence_interval_size=confidence,
            random_state=np.random.RandomState(seed))


def interval_estimate(scores: np.ndarray, aggregate: Callable[[np.ndarray], float] = iqm,
                      reps: int = DEFAULT_REPS, seed: Optional[int] = 0,
                      confidence: float = CONFIDENCE) -> Tuple[float, float, float]:
    """`aggregate(scores)` and its stratified-bootstrap confidence interval: (point, low, high)."""
    scores = _as_scores(scores)
    point, interval = _bootstrap({"scores": scores}, lambda sample: np.array([aggregate(sample)]),
                                 reps, seed, confidence)
    return float(point["scores"][0]), float(interval["scores"][0, 0]), float(
        interval["scores"][1, 0])


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """P(X > Y): the chance a run of X beats a run of Y on the same task (ties count half), averaged over tasks.

    Raises:
      ValueError: if X and Y do not have the same tasks (columns).
    """
    scores_x, scores_y = _as_scores(scores_x), _as_scores(scores_y)
    if scores_x.shape[1] != scores_y.shape[1]:
        raise ValueError(f"X has {scores_x.shape[1]} tasks but Y has {scores_y.shape[1]}")
    return float(metrics.probability_of_improvement(scores_x, scores_y))


def probability_of_improvement_interval(
        scores_x: np.ndarray, scores_y: np.ndarray, reps: int = DEFAULT_REPS,
        seed: Optional[int] = 0, confidence: float = CONFIDENCE) -> Tuple[float, float, float]:
    """`probability_of_improvement(X, Y)` with a bootstrap interval resampling X's and Y's runs independently per task."""
    scores_x, scores_y = _as_scores(scores_x), _as_scores(scores_y)
    point = probability_of_improvement(scores_x, scores_y)
    _, interval = _bootstrap(
        {"pair": [scores_x, scores_y]},
        lambda x, y: np.array([metrics.probability_of_improvement(x, y)]), reps, seed, confidence)
    return point, float(interval["pair"][0, 0]), float(interval["pair"][1, 0])


def performance_profile(scores: np.ndarray, thresholds: Sequence[float],
                        reps: int = DEFAULT_REPS, seed: Optional[int] = 0,
                        confidence: float = CONFIDENCE
                        ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fraction of runs (over all tasks) scoring above each threshold, with bootstrap bands.

    Returns (fractions, lows, highs), each of the thresholds' length.
    """
    scores = _as_scores(scores)
    thresholds = np.asarray(thresholds, dtype=np.float64)

    def profile(sample: np.ndarray) -> np.ndarray:
        return np.array([np.mean(sample > threshold) for threshold in thresholds])

    point, interval = _bootstrap({"scores": scores}, profile, reps, seed, confidence)
    return point["scores"], interval["scores"][0], interval["scores"][1]


def pairwise_improvements(score_dict: Mapping[str, np.ndarray], reps: int = DEFAULT_REPS,
                          seed: Optional[int] = 0) -> Dict[Tuple[str, str], Tuple[float, float, float]]:
    """`probability_of_improvement_interval` for every ordered pair of distinct systems."""
    return {(x, y): probability_of_improvement_interval(score_dict[x], score_dict[y], reps, seed)
            for x in score_dict for y in score_dict if x != y}
