"""Aggregate statistics against hand-computed cases, and bootstrap interval coverage."""

import numpy as np
import pytest

from mava_systems.experiment import statistics


def test_iqm_is_the_mean_of_the_middle_half():
    assert statistics.iqm(np.arange(1, 9)) == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    # Outliers in the outer quarters do not move it.
    assert statistics.iqm([0.0, 1, 1, 1, 1, 1, 1, 100]) == pytest.approx(1.0)
    # Runs and tasks are pooled: 8 scores of a (4, 2) matrix, middle four 3..6.
    assert statistics.iqm(np.array([[1, 8], [2, 7], [3, 6], [4, 5]])) == pytest.approx(4.5)


def test_normalise_maps_random_to_zero_and_best_to_one():
    np.testing.assert_allclose(statistics.normalise([-10.0, -5.0, 0.0], -10.0, 0.0),
                               [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="equals random score"):
        statistics.normalise([1.0], 2.0, 2.0)


def test_probability_of_improvement_counts_winning_pairs_with_ties_half():
    # 6 of the 9 (x, y) pairs have x > y.
    assert statistics.probability_of_improvement([3, 5, 7], [2, 4, 6]) == pytest.approx(6 / 9)
    assert statistics.probability_of_improvement([2, 4, 6], [3, 5, 7]) == pytest.approx(3 / 9)
    assert statistics.probability_of_improvement([1, 2, 3], [0, 0, 0]) == pytest.approx(1.0)
    # (2 > 1) + (2 = 2)/2 + (1 = 1)/2 + (1 < 2) = 2 of 4.
    assert statistics.probability_of_improvement([2, 1], [1, 2]) == pytest.approx(0.5)
    # Averaged over tasks: 1.0 on the first, 0.0 on the second.
    x = np.array([[5.0, 0.0], [6.0, 1.0]])
    y = np.array([[1.0, 5.0], [2.0, 6.0]])
    assert statistics.probability_of_improvement(x, y) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="tasks"):
        statistics.probability_of_improvement(np.zeros((2, 2)), np.zeros((2, 3)))


def test_probability_of_improvement_interval_brackets_the_point():
    point, low, high = statistics.probability_of_improvement_interval(
        [3, 5, 7, 9], [2, 4, 6, 8], reps=500)
    assert point == pytest.approx(10 / 16)
    assert 0.0 <= low <= point <= high <= 1.0
    assert high - low > 0.1
    # Complete separation: every resample has X above Y.
    assert statistics.probability_of_improvement_interval(
        [10, 11, 12], [0, 1, 2], reps=200) == pytest.approx((1.0, 1.0, 1.0))


def test_performance_profile_is_the_fraction_of_runs_above_each_threshold():
    scores = np.array([[0.1, 0.6], [0.3, 0.8], [0.5, 1.0]])
    fractions, lows, highs = statistics.performance_profile(scores, [0.0, 0.4, 0.9, 1.0],
                                                            reps=300)
    np.testing.assert_allclose(fractions, [1.0, 4 / 6, 1 / 6, 0.0])
    assert np.all(lows <= fractions + 1e-12) and np.all(fractions <= highs + 1e-12)
    assert lows[0] == highs[0] == 1.0 and lows[-1] == highs[-1] == 0.0


def test_stratified_bootstrap_resamples_runs_within_each_task():
    # Task 0 is always 0 and task 1 always 1: any resample of runs within tasks keeps
    # the mean at exactly 0.5 (a bootstrap mixing tasks would not).
    scores = np.array([[0.0, 1.0]] * 5)
    assert statistics.interval_estimate(scores, lambda s: float(np.mean(s)), reps=300) == (
        pytest.approx(0.5), pytest.approx(0.5), pytest.approx(0.5))


def test_bootstrap_interval_covers_a_known_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    true_mean, trials = 3.0, 150
    covered = 0
    for trial in range(trials):
        sample = rng.normal(true_mean, 2.0, size=(40, 1))
        _, low, high = statistics.interval_estimate(sample, lambda s: float(np.mean(s)),
                                                    reps=400, seed=trial)
        covered += low <= true_mean <= high
    # Percentile intervals of n=40 cover slightly under 95%; 150 trials have a standard
    # error of ~1.8 points, so this fails only for a badly wrong interval.
    assert 0.86 <= covered / trials <= 0.995


def test_iqm_interval_brackets_the_point_and_narrows_with_more_runs():
    rng = np.random.default_rng(0)
    small = rng.normal(0.0, 1.0, size=(8, 2))
    large = rng.normal(0.0, 1.0, size=(128, 2))
    point, low, high = statistics.interval_estimate(small, reps=500)
    assert low <= point <= high
    _, large_low, large_high = statistics.interval_estimate(large, reps=500)
    assert large_high - large_low < (high - low) / 2
