"""End-to-end: recurrent QMIX and recurrent MAPPO programs run, checkpoint, are killed with
SIGKILL, resume their counts and trainer step (sequence replay and chunk queues included),
refuse a feedforward configuration on their recurrent run, and evaluate greedily with their
recurrent state.

One run of each on the tiny `debug/line_world_v0` (see test_value_decomposition_program.py).
"""

import json
import os

import pytest

from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import evaluate_checkpoint, read_csv
from test_madqn_program import kill_after_checkpoints

COMMON_FLAGS = ["--env=debug/line_world_v0", "--evaluation_interval_s=1",
                "--terminal_log_interval_s=5", "--num_executors=2", "--checkpoint_interval_s=2"]
RECURRENT_FLAGS = ["--recurrent=true", "--rnn_hidden_size=16"]
QMIX_FLAGS = ["--min_replay_size=100", "--sequence_batch_size=8", "--n_step=3",
              "--mixing_embed_dim=8", "--hypernet_hidden_size=16"]
MAPPO_FLAGS = ["--batch_size=4", "--sequence_length=11", "--num_epochs=2", "--max_queue_size=8"]
# What makes each recurrent (test_multi_environment_program.py runs them too).
QMIX_RECURRENT_FLAGS = [*RECURRENT_FLAGS, "--sequence_length=10", "--burn_in_length=2"]
# The MAPPO paper's layout (a recurrent critic, whose stored states resume too; every hidden
# layer before the GRU, 'none' read as None).
MAPPO_RECURRENT_FLAGS = [*RECURRENT_FLAGS, "--chunk_length=5", "--recurrent_critic=true",
                         "--rnn_input_layers=none"]


def kill_and_resume(tmp_path, script, flags, recurrent_flags, min_steps):
    """Runs examples/<script> with `flags` and `recurrent_flags`, SIGKILLs it after two periodic
    checkpoints and resumes it for 300 more executor steps, checking that its counts and trainer
    step continue; then checks that the same flags without `recurrent_flags` (a feedforward
    configuration) are refused with a one-line error that leaves the run as it was.

    Returns (the run directory, its run.json).
    """
    run_dir = str(tmp_path / "run")
    flags = [*COMMON_FLAGS, *flags]
    kill_after_checkpoints(program_helpers.example_command(script, run_dir, *flags,
                                                           *recurrent_flags,
                                                           "--max_executor_steps=1000000"),
                           run_dir, tmp_path / "first.log", min_steps=min_steps)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["config.recurrent"] is True
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0
    saved_steps = int(status.counts["executor_steps"])
    trainer_rows_before = program_helpers.rows_kept_at_resume(run_dir, "trainer", status)

    limit = saved_steps + 300
    second = program_helpers.run_example(script, run_dir, *flags, *recurrent_flags,
                                         f"--max_executor_steps={limit}")
    program_helpers.check_resumed_part(second, run_dir, status, limit, trainer_rows_before)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > status.trainer_steps

    finished = read_status(run_dir)
    with pytest.raises(AssertionError) as failure:
        program_helpers.run_example(script, run_dir, *flags, f"--max_executor_steps={limit + 100}")
    text = str(failure.value)
    assert "holds a run that this configuration cannot continue" in text, text[-3000:]
    assert "network_variables" in text and "Traceback" not in text
    assert read_status(run_dir) == finished  # The refused launch changed nothing.
    return run_dir, description


def test_a_killed_recurrent_qmix_run_resumes_its_counts_and_trainer_step_and_evaluates(tmp_path):
    run_dir, description = kill_and_resume(
        tmp_path, os.path.join("mpe", "run_qmix.py"), QMIX_FLAGS, QMIX_RECURRENT_FLAGS,
        min_steps=400)
    assert [16, 48] in description["network_variables"]["agent"]  # The GRU's state weights.

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    assert result["episodes"] == 4 and -10.0 <= result["mean_return"] <= 0.0


def test_a_killed_recurrent_mappo_run_resumes_its_counts_and_trainer_step_and_evaluates(tmp_path):
    run_dir, description = kill_and_resume(
        tmp_path, os.path.join("mpe", "run_mappo.py"), MAPPO_FLAGS, MAPPO_RECURRENT_FLAGS,
        min_steps=300)
    # The GRUs' state weights (3 x 16 gates), of the policy and of the centralised critic.
    assert [16, 48] in description["network_variables"]["policy/agent"]
    assert [16, 48] in description["network_variables"]["critic/agent"]
    items = json.dumps(description["replay_items"])
    assert "policy_state" in items and "critic_state" in items

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    # Returns of line_world's 10 steps lie in [-16, 0] (2 agents, at most -0.8 each a step).
    assert result["episodes"] == 4 and -16.0 <= result["mean_return"] <= 0.0
