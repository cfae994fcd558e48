"""End-to-end DMPO on Pendulum-v1: the example learns, checkpoints, and resumes (slow: ~3 min)."""

import re

import pytest

from program_helpers import (assert_final_checkpoint_evaluates, evaluation_returns,
                             random_policy_return, read_csv, run_example, stop_count)

SCRIPT = "gymnasium/run_dmpo.py"
# Pendulum's returns lie in about [-1600, 0]: the critic's support covers [-1000, 0].
FAST_CONFIG = ["--evaluation_interval_s=5", "--evaluation_episodes=2",
               "--terminal_log_interval_s=20", "--batch_size=128", "--num_samples=10",
               "--policy_learning_rate=0.001", "--critic_learning_rate=0.001", "--vmin=-1000",
               "--vmax=0", "--n_step=3", "--samples_per_insert=64",
               "--policy_hidden_sizes=128,128", "--critic_hidden_sizes=128,128",
               "--dataset_parallel_calls=1", "--prefetch_size=0"]


@pytest.mark.slow
def test_dmpo_learns_pendulum_checkpoints_and_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    # The greedy return leaves the random policy's between about 6,000 and 9,000 steps
    # (seed and timing vary): 11,000 leaves a margin.
    output = run_example(SCRIPT, run_dir, "--max_actor_steps=11000", *FAST_CONFIG, timeout=400)
    reached, limit = stop_count(output)
    assert limit == 11000 and reached >= 11000

    random_return = random_policy_return("gymnasium/Pendulum-v1", episodes=20)
    assert random_return < -1000  # About -1200.
    returns = evaluation_returns(run_dir)
    assert len(returns) >= 5, returns
    # The policy mean swings the pendulum up and holds it (about -150) from most starts.
    best_recent = max(sum(returns[i:i + 2]) / 2 for i in range(len(returns) - 4, len(returns) - 1))
    assert best_recent > -450, (returns, random_return)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > 1000

    # Relaunching in the run directory resumes counts, networks, optimisers and MPO's duals.
    resumed = run_example(SCRIPT, run_dir, "--max_actor_steps=12500", *FAST_CONFIG, timeout=400)
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      resumed)
    assert match, resumed[-3000:]
    assert int(match.group(1)) > 1000 and int(match.group(2)) >= 11000
    assert "trainer: restored from checkpoint" in resumed
    reached, limit = stop_count(resumed)
    assert limit == 12500 and reached >= 12500
    after = evaluation_returns(run_dir)[len(returns):]
    assert after and max(after) > -450, after  # Restored, not retrained from scratch.
    # `evaluate` restores the final checkpoint's policy and acts with its mean (random: -1200).
    assert_final_checkpoint_evaluates(run_dir, above=-800)
