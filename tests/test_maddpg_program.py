"""End-to-end: the MADDPG and MAD4PG examples run as Launchpad programs, stop, are killed and resume,
and evaluate, on `debug/reach_v0` (2 agents, 10-step episodes, continuous actions).

Each run is a subprocess with small networks (see test_madqn_program.py for the MADQN runs these
follow); the kill-and-resume helper is MADQN's.
"""

import glob
import json
import os
import re

import pytest

from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import evaluate_checkpoint, read_csv, stop_count
from test_madqn_program import kill_after_checkpoints

SMALL_CONFIG = ["--env=debug/reach_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5",
                "--policy_hidden_sizes=32,32", "--critic_hidden_sizes=32,32"]
MAD4PG_SUPPORT = ["--vmin=-10", "--vmax=0", "--num_atoms=21"]


def script(system):
    return os.path.join("sisl", f"run_{system}.py")


def run_example(system, run_dir, *flags, launch_type="local_mt"):
    """Runs examples/sisl/run_<system>.py with the small configuration; its output."""
    return program_helpers.run_example(script(system), run_dir, *SMALL_CONFIG, *flags,
                                       launch_type=launch_type, timeout=600)


def test_maddpg_runs_as_a_multi_process_program_and_stops(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example("maddpg", run_dir, "--max_executor_steps=600", "--num_executors=2",
                         "--critic=centralised", launch_type="local_mp")
    reached, limit = stop_count(output)
    assert limit == 600 and reached >= 600 and "Finished." in output
    final_steps = int(read_status(run_dir).counts["executor_steps"])
    assert 600 <= final_steps <= 600 - 1 + 2 * 10 and final_steps % 10 == 0
    trainer_rows = read_csv(run_dir, "trainer")
    assert trainer_rows and int(trainer_rows[-1]["trainer_steps"]) > 0
    assert int(trainer_rows[-1]["replay_size"]) >= 100
    assert all(float(row["critic_loss"]) >= 0 for row in trainer_rows)
    # Each executor explores with its own noise scale: the smallest and the largest.
    scales = [float(read_csv(run_dir, f"executor_{i}")[0]["noise_scale"]) for i in (0, 1)]
    assert scales == pytest.approx([0.05, 0.3])
    assert int(read_csv(run_dir, "executor_1")[-1]["episode_length"]) == 10
    assert read_csv(run_dir, "evaluator")[-1]["final"] == "1"
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node


def test_a_killed_mad4pg_run_resumes_its_counts_and_weights_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    flags = [*SMALL_CONFIG, *MAD4PG_SUPPORT, "--critic=state", "--num_executors=2",
             "--checkpoint_interval_s=2"]
    # A limit the first part never reaches: it is killed after two periodic checkpoints.
    kill_after_checkpoints(program_helpers.example_command(script("mad4pg"), run_dir, *flags,
                                                           "--max_executor_steps=100000"),
                           run_dir, tmp_path / "first.log", min_steps=300)
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0 and status.replay_checkpoint
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "mava_systems.maddpg.system:MAD4PG"
    assert description["config.critic"] == "state"
    # The state critic's input: 2 agent IDs, the environment's state (2 x 4: no agent IDs in
    # it), both agents' actions (2 x 2).
    assert [2 + 8 + 4, 32] in description["network_variables"]["critic/agent"]

    saved_steps = int(status.counts["executor_steps"])
    limit = saved_steps + 300
    second = program_helpers.run_example(script("mad4pg"), run_dir, *flags,
                                         f"--max_executor_steps={limit}", timeout=600)
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      second)
    assert match and int(match.group(1)) == status.trainer_steps, second[-3000:]
    assert int(match.group(2)) == saved_steps
    assert "trainer: restored from checkpoint" in second
    assert f"Replay: restored from {status.replay_checkpoint}" in second
    reached, logged_limit = stop_count(second)
    assert logged_limit == limit and reached >= limit
    # The counter continued from the saved count; the trainer from its saved step.
    assert int(read_status(run_dir).counts["executor_steps"]) <= limit - 1 + 2 * 10
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > status.trainer_steps

    with pytest.raises(AssertionError, match="cannot continue"):
        program_helpers.run_example(script("mad4pg"), run_dir, *flags,
                                    f"--max_executor_steps={limit + 100}", "--critic=centralised")

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    # Summed over both agents (each gets the team's reward): at worst 10 steps x 2 x sqrt(2).
    assert result["episodes"] == 4 and -2 * 10 * 2 ** 0.5 <= result["mean_return"] < 0.0
    assert result["checkpoint"].startswith(os.path.join(run_dir, "checkpoints", "trainer"))


def test_mpe_example_makes_continuous_actions_and_bad_flags_fail_before_launching(tmp_path):
    with pytest.raises(AssertionError) as failure:
        program_helpers.run_example(os.path.join("mpe", "run_maddpg.py"), str(tmp_path / "run"),
                                    "--critic=joint")
    message = str(failure.value)
    assert ("error: MADDPGConfig.critic must be one of ('decentralised', 'centralised', "
            "'state'), got 'joint'") in message
    assert "Traceback" not in message and not os.path.exists(tmp_path / "run")
    with pytest.raises(AssertionError) as failure:
        program_helpers.run_example(script("maddpg"), str(tmp_path / "run"),
                                    "--env=debug/line_world_v0")
    assert "MADDPG needs continuous actions" in str(failure.value)
    assert not os.path.exists(tmp_path / "run")
