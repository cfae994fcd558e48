"""End-to-end: a MADQN program whose executor steps 4 environments stops exactly, counts every
environment's episodes, and resumes (examples/mpe/run_madqn.py on debug/line_world_v0, whose
episodes last 10 steps); recurrent QMIX and MAPPO programs with 2 environments per executor
train on the sequences they write; a MAPPO program stepping 4 vectorised LBF environments per
executor (one batched step) stops exactly, counts every environment's steps and resumes."""

import json
import math
import os
import subprocess

import pytest

from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import read_csv, stop_count
from test_recurrent_program import (MAPPO_FLAGS, MAPPO_RECURRENT_FLAGS, QMIX_FLAGS,
                                    QMIX_RECURRENT_FLAGS)

SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5",
                "--num_envs_per_executor=4"]
NUM_ENVS, EPISODE_LENGTH = 4, 10


def run_example(run_dir, *flags):
    return program_helpers.run_example(os.path.join("mpe", "run_madqn.py"), run_dir,
                                       *SMALL_CONFIG, *flags)


def test_four_environments_per_executor_stop_exactly_and_resume(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example(run_dir, "--max_executor_steps=400")
    reached, limit = stop_count(output)
    counts = read_status(run_dir).counts
    final_steps = int(counts["executor_steps"])
    # Within one episode per environment of the limit.
    assert 400 <= reached <= final_steps <= 400 - 1 + NUM_ENVS * EPISODE_LENGTH
    assert int(counts["executor_episodes"]) == final_steps // EPISODE_LENGTH
    rows = read_csv(run_dir, "executor_0")
    # One row per environment episode, each a whole episode.
    assert len(rows) == final_steps // EPISODE_LENGTH
    assert all(int(row["episode_length"]) == EPISODE_LENGTH for row in rows)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > 0

    resumed = run_example(run_dir, "--max_executor_steps=600")
    reached, limit = stop_count(resumed)
    counts = read_status(run_dir).counts
    assert limit == 600
    assert 600 <= int(counts["executor_steps"]) <= 600 - 1 + NUM_ENVS * EPISODE_LENGTH
    assert int(counts["executor_episodes"]) == int(counts["executor_steps"]) // EPISODE_LENGTH
    assert int(counts["executor_0_steps"]) == int(counts["executor_steps"])


LBF = "lbf/Foraging-8x8-2p-2f-coop-v3"
LBF_EPISODE_LIMIT = 50  # Its max_episode_steps; its episodes may end sooner.


def assert_every_environment_step_counted(run_dir, limit):
    """The run stopped within one episode per environment of `limit`, and its executor's episode
    rows (one per environment episode) add up to every step the counter counted."""
    counts = read_status(run_dir).counts
    steps = int(counts["executor_steps"])
    assert limit <= steps <= limit - 1 + NUM_ENVS * LBF_EPISODE_LIMIT
    assert int(counts["executor_0_steps"]) == steps
    rows = read_csv(run_dir, "executor_0")
    assert sum(int(row["episode_length"]) for row in rows) == steps
    assert len(rows) == int(counts["executor_episodes"])
    return steps


def test_four_vectorised_lbf_environments_stop_exactly_and_resume(tmp_path):
    run_dir = str(tmp_path / "run")
    flags = [f"--env={LBF}", "--num_executors=1", "--num_envs_per_executor=4",
             "--evaluation_interval_s=1", "--terminal_log_interval_s=5", *MAPPO_FLAGS]
    output = program_helpers.run_example(os.path.join("lbf", "run_mappo.py"), run_dir, *flags,
                                         "--max_executor_steps=400")
    with open(os.path.join(run_dir, "config.json")) as config_file:
        assert json.load(config_file)["environment_implementation"] == (
            "vectorised (wrappers.vectorised, 4 environments per call)")
    reached, limit = stop_count(output)
    assert limit == 400 and reached >= 400
    first_steps = assert_every_environment_step_counted(run_dir, 400)
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > 0

    resumed = program_helpers.run_example(os.path.join("lbf", "run_mappo.py"), run_dir, *flags,
                                          "--max_executor_steps=700")
    assert stop_count(resumed)[1] == 700
    assert assert_every_environment_step_counted(run_dir, 700) > first_steps


@pytest.mark.parametrize("script, flags, loss", [
    ("run_qmix.py", [*QMIX_FLAGS, *QMIX_RECURRENT_FLAGS], "loss"),
    ("run_mappo.py", [*MAPPO_FLAGS, *MAPPO_RECURRENT_FLAGS], "value_loss/agent")],
    ids=["qmix", "mappo"])
def test_recurrent_agents_with_two_environments_per_executor_train_on_their_sequences(
        tmp_path, script, flags, loss):
    run_dir = str(tmp_path / "run")
    output = program_helpers.run_example(
        os.path.join("mpe", script), run_dir, "--env=debug/line_world_v0", "--num_executors=1",
        "--num_envs_per_executor=2", "--evaluation_interval_s=1", "--terminal_log_interval_s=5",
        "--max_executor_steps=300", *flags)
    reached, limit = stop_count(output)
    counts = read_status(run_dir).counts
    final_steps = int(counts["executor_steps"])
    assert limit == 300 and 300 <= reached <= final_steps <= 300 - 1 + 2 * EPISODE_LENGTH
    assert int(counts["executor_episodes"]) == final_steps // EPISODE_LENGTH
    rows = read_csv(run_dir, "executor_0")
    assert len(rows) == final_steps // EPISODE_LENGTH
    assert all(int(row["episode_length"]) == EPISODE_LENGTH for row in rows)
    # Replay accepted every sequence under its table's signature (states included) and the
    # trainer unrolled batches of them from their stored states.
    trainer_rows = read_csv(run_dir, "trainer")
    assert int(trainer_rows[-1]["trainer_steps"]) > 0
    assert all(math.isfinite(float(row[loss])) for row in trainer_rows)


def test_a_bad_num_envs_per_executor_flag_stops_before_launch(tmp_path):
    run_dir = str(tmp_path / "run")
    command = program_helpers.example_command(os.path.join("mpe", "run_madqn.py"), run_dir,
                                              "--num_envs_per_executor=-2")
    result = subprocess.run(command, cwd=program_helpers.ROOT, capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode != 0
    assert "num_envs_per_executor=-2 is out of range" in result.stdout + result.stderr
    assert not os.path.exists(run_dir)  # Nothing launched, nothing written.
