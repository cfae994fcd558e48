"""End-to-end: a recurrent HAPPO program (the MaMuJoCo example on the tiny
`debug/line_world_v0`, local_mt) stops at its step limit, resumes its counts and trained
weights, and its checkpoint evaluates greedily with its recurrent states.

The small queue configuration of test_mappo_program.py and the recurrent flags of
test_recurrent_program.py: executors wait for the trainer, so every launch trains.
"""

import json
import os

from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import evaluate_checkpoint, read_csv, stop_count
from test_mappo_program import SMALL_CONFIG
from test_recurrent_program import MAPPO_RECURRENT_FLAGS

SCRIPT = os.path.join("mamujoco", "run_happo.py")
FLAGS = [*SMALL_CONFIG, *MAPPO_RECURRENT_FLAGS, "--checkpoint_interval_s=2"]


def test_a_recurrent_happo_program_stops_resumes_its_counts_and_weights_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    first = program_helpers.run_example(SCRIPT, run_dir, *FLAGS, "--max_executor_steps=200")
    reached, limit = stop_count(first)
    assert limit == 200 and 200 <= reached <= 209  # One executor stops within its episode.
    status = read_status(run_dir)
    assert status.trainer_steps > 0
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "mava_systems.happo.system:HAPPO"
    assert description["config.recurrent"] is True
    variables = description["network_variables"]
    # A GRU policy per agent (3 x 16 gates on its state) and the one recurrent team critic.
    for name in ("policy/agent_0", "policy/agent_1", "critic/team"):
        assert [16, 48] in variables[name], name
    assert not any(name.startswith("critic/agent") for name in variables)
    items = json.dumps(description["replay_items"])
    assert "policy_state" in items and "critic_state" in items
    first_rows = read_csv(run_dir, "trainer")
    for column in ("m_factor/agent_0", "m_factor/agent_1", "value_loss/team"):
        assert column in first_rows[-1], column

    trainer_rows_before = program_helpers.rows_kept_at_resume(run_dir, "trainer", status)
    second = program_helpers.run_example(SCRIPT, run_dir, *FLAGS, "--max_executor_steps=400")
    # Counts and the trainer (policies, critic, optimisers, normalisers) continue from the
    # checkpoints of the stop, not from zero.
    program_helpers.check_resumed_part(second, run_dir, status, 400, trainer_rows_before,
                                       num_executors=1)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > status.trainer_steps

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    # Returns of line_world's 10 steps lie in [-16, 0] (2 agents, at most -0.8 each a step).
    assert result["episodes"] == 4 and -16.0 <= result["mean_return"] <= 0.0
    assert result["trainer_steps"] >= int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])
