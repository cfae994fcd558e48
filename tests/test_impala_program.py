"""End-to-end IMPALA on CartPole-v1: the example learns, checkpoints, and resumes (slow: ~2 min)."""

import re

import pytest

from program_helpers import (assert_final_checkpoint_evaluates, evaluation_returns,
                             random_policy_return, read_csv, run_example, stop_count)

SCRIPT = "gymnasium/run_impala.py"
FAST_CONFIG = ["--evaluation_interval_s=3", "--evaluation_episodes=2",
               "--terminal_log_interval_s=20"]


@pytest.mark.slow
def test_impala_learns_cartpole_checkpoints_and_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example(SCRIPT, run_dir, "--max_actor_steps=30000", *FAST_CONFIG)
    reached, limit = stop_count(output)
    assert limit == 30000 and reached >= 30000

    random_return = random_policy_return("gymnasium/CartPole-v1")
    returns = evaluation_returns(run_dir)
    assert len(returns) >= 3, returns
    # (No check of the first round: on a fast machine it may come after some training, and an
    # untrained network sometimes balances the pole for a while by chance.)
    # Learned by the second half of the run. (IMPALA on CartPole can still collapse for a
    # while after reaching 500, so the very last rounds may not; it passes 4x random by
    # about 14,000 steps.)
    assert max(returns[len(returns) // 2:]) > 4 * random_return, (returns, random_return)
    trainer_rows = read_csv(run_dir, "trainer")
    assert int(trainer_rows[-1]["trainer_steps"]) > 100
    assert 0 < float(trainer_rows[-1]["entropy/agent"]) < 0.7  # Below uniform (ln 2): it learned.

    # Relaunching in the run directory resumes counts, network and optimiser.
    resumed = run_example(SCRIPT, run_dir, "--max_actor_steps=32000", *FAST_CONFIG)
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      resumed)
    assert match, resumed[-3000:]
    assert int(match.group(1)) > 100 and int(match.group(2)) >= 30000
    # The trainer restored the first part's last checkpoint (networks, optimiser, step).
    assert f"trainer: restored from checkpoint {run_dir}/checkpoints/trainer/ckpt-" in resumed
    reached, limit = stop_count(resumed)
    assert limit == 32000 and reached >= 32000
    # `evaluate` restores the final checkpoint's policy: an untrained network's greedy play
    # (always the same push) scores 8-10; a trained one, even mid-collapse, more.
    assert_final_checkpoint_evaluates(run_dir, above=15)
