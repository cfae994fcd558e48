"""End-to-end R2D2 on CartPole-v1: the example learns, checkpoints, and resumes (slow: ~2.5 min)."""

import re

import pytest

from program_helpers import (assert_final_checkpoint_evaluates, evaluation_returns,
                             random_policy_return, read_csv, run_example, stop_count)

SCRIPT = "gymnasium/run_r2d2.py"
FAST_CONFIG = ["--evaluation_interval_s=5", "--evaluation_episodes=2",
               "--terminal_log_interval_s=20", "--min_replay_size=50", "--burn_in_length=4",
               "--trace_length=12", "--replay_period=6", "--batch_size=16",
               "--samples_per_insert=8", "--n_step=3"]


@pytest.mark.slow
def test_r2d2_learns_cartpole_checkpoints_and_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example(SCRIPT, run_dir, "--max_actor_steps=16000", *FAST_CONFIG)
    reached, limit = stop_count(output)
    assert limit == 16000 and reached >= 16000

    random_return = random_policy_return("gymnasium/CartPole-v1")
    returns = evaluation_returns(run_dir)
    assert len(returns) >= 3, returns
    # (No check of the first round: on a fast machine it may come after some training, and an
    # untrained network sometimes balances the pole for a while by chance.)
    assert max(returns[-3:]) > 4 * random_return, (returns, random_return)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > 300

    # Relaunching in the run directory resumes counts, network and optimiser.
    resumed = run_example(SCRIPT, run_dir, "--max_actor_steps=18000", *FAST_CONFIG)
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      resumed)
    assert match, resumed[-3000:]
    assert int(match.group(1)) > 300 and int(match.group(2)) >= 16000
    assert "trainer: restored from checkpoint" in resumed
    reached, limit = stop_count(resumed)
    assert limit == 18000 and reached >= 18000
    after = evaluation_returns(run_dir)[len(returns):]
    assert after and after[0] > 2 * random_return, after  # Restored, not retrained from scratch.
    # `evaluate` restores the final checkpoint's recurrent network (untrained greedy play: 8-10).
    assert_final_checkpoint_evaluates(run_dir, above=15)
