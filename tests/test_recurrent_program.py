"""End-to-end: a recurrent QMIX program runs, checkpoints, is killed, resumes its counts and
trainer step (sequence replay included), and evaluates greedily with its recurrent state.

One run on the tiny `debug/line_world_v0` (see test_value_decomposition_program.py), its
trainer step compiled with XLA (`--jit_compile=true`): XLA's step trains, checkpoints (Adam's
slots included) and resumes; the other program tests run TensorFlow's graph.
"""

import json
import os

from mava_systems.components.run_directory import read_status
import program_helpers
from program_helpers import evaluate_checkpoint, read_csv
from test_madqn_program import kill_after_checkpoints

FLAGS = ["--env=debug/line_world_v0", "--min_replay_size=100", "--sequence_batch_size=8",
         "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5",
         "--num_executors=2", "--checkpoint_interval_s=2", "--mixing_embed_dim=8",
         "--hypernet_hidden_size=16", "--recurrent=true", "--rnn_hidden_size=16",
         "--sequence_length=10", "--burn_in_length=2", "--jit_compile=true"]


def test_a_killed_recurrent_qmix_run_resumes_its_counts_and_trainer_step_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    script = os.path.join("mpe", "run_qmix.py")
    kill_after_checkpoints(program_helpers.example_command(script, run_dir, *FLAGS,
                                                           "--max_executor_steps=1000000"),
                           run_dir, tmp_path / "first.log", min_steps=400)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["config.recurrent"] is True
    assert description["config.jit_compile"] is True
    assert [16, 48] in description["network_variables"]["agent"]  # The GRU's state weights.
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0
    saved_steps = int(status.counts["executor_steps"])
    trainer_rows_before = program_helpers.rows_kept_at_resume(run_dir, "trainer", status)

    limit = saved_steps + 300
    second = program_helpers.run_example(script, run_dir, *FLAGS, f"--max_executor_steps={limit}")
    program_helpers.check_resumed_part(second, run_dir, status, limit, trainer_rows_before)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > status.trainer_steps

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    assert result["episodes"] == 4 and -10.0 <= result["mean_return"] <= 0.0
