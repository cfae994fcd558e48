"""End-to-end: the MAPPO example runs as a Launchpad program (local_mt and local_mp), stops,
checkpoints, resumes its counters and weights after a SIGKILL, evaluates, and names bad input.

Runs are subprocesses on the tiny cooperative `debug/line_world_v0` (see
test_madqn_program.py). The queue holds 8 sequences: executors wait for the
trainer, so every run trains before it reaches its step limit.
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

SMALL_CONFIG = ["--env=debug/line_world_v0", "--batch_size=4", "--sequence_length=11",
                "--num_epochs=2", "--max_queue_size=8", "--evaluation_interval_s=1",
                "--terminal_log_interval_s=5"]


def run_example(run_dir, *flags, launch_type="local_mt", timeout=300):
    """Runs examples/mpe/run_mappo.py with the small configuration; its output."""
    return program_helpers.run_example(os.path.join("mpe", "run_mappo.py"), run_dir,
                                       *SMALL_CONFIG, *flags, launch_type=launch_type,
                                       timeout=timeout)


def check_stopped_run(run_dir, output, limit):
    """The program stopped at `limit` steps having trained, with logs and checkpoints."""
    reached, logged_limit = stop_count(output)
    assert logged_limit == limit and reached >= limit
    trainer_rows = read_csv(run_dir, "trainer")
    assert trainer_rows and int(trainer_rows[-1]["trainer_steps"]) > 0
    last = trainer_rows[-1]
    for column in ("policy_lag", "clip_fraction/agent", "approx_kl/agent", "entropy/agent",
                   "value_loss/agent", "dropped_sequences"):
        assert column in last, column
    assert 0.0 <= float(last["clip_fraction/agent"]) <= 1.0
    assert 0.0 < float(last["entropy/agent"]) <= 1.1 + 1e-6  # At most log(3).
    assert float(last["policy_lag"]) >= 0.0
    for executor_id in (0, 1):
        rows = read_csv(run_dir, f"executor_{executor_id}")
        assert rows and int(rows[-1]["episode_length"]) == 10
    assert read_csv(run_dir, "evaluator")
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node
    return int(last["trainer_steps"])


def test_a_killed_mappo_run_resumes_its_counts_and_weights_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    flags = [*SMALL_CONFIG, "--num_executors=2", "--checkpoint_interval_s=2"]
    # A limit the first part never reaches: it is SIGKILLed after two periodic checkpoints.
    kill_after_checkpoints(program_helpers.example_command(
                               os.path.join("mpe", "run_mappo.py"), run_dir, *flags,
                               "--max_executor_steps=100000"),
                           run_dir, tmp_path / "first.log", min_steps=300)
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "mava_systems.mappo.system:MAPPO"
    assert description["config.critic"] == "centralised"
    # The critic sees line_world's state (20) and its agent's observation with its ID (12).
    assert [32, 64] in description["network_variables"]["critic/agent"]

    saved_steps = int(status.counts["executor_steps"])
    limit = saved_steps + 300
    second = program_helpers.run_example(os.path.join("mpe", "run_mappo.py"), run_dir, *flags,
                                         f"--max_executor_steps={limit}")
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      second)
    # The counter and the trainer (policy, critic, optimisers, normalisers) continue from
    # the checkpoints the kill left, not from zero.
    assert match and int(match.group(1)) == status.trainer_steps, second[-3000:]
    assert int(match.group(2)) == saved_steps
    assert "trainer: restored from checkpoint" in second
    assert check_stopped_run(run_dir, second, limit) > status.trainer_steps
    assert int(read_status(run_dir).counts["executor_steps"]) <= limit - 1 + 2 * 10

    with pytest.raises(AssertionError, match="cannot continue"):
        run_example(run_dir, f"--max_executor_steps={limit + 100}", "--num_executors=2",
                    "--critic=decentralised")

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    # Returns of line_world's 10 steps lie in [-16, 0] (2 agents, at most -0.8 each a step).
    assert result["episodes"] == 4 and -16.0 <= result["mean_return"] <= 0.0
    assert result["trainer_steps"] >= int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])


def test_ippo_runs_as_a_multi_process_program(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example(run_dir, "--max_executor_steps=600", "--num_executors=2",
                         "--critic=decentralised", launch_type="local_mp",
                         timeout=600)  # Seven processes import TensorFlow: slow on a busy machine.
    check_stopped_run(run_dir, output, 600)
    assert "Finished." in output


@pytest.mark.parametrize("flag,message", [
    ("--clip_epsilon=0", "error: MAPPOConfig.clip_epsilon=0.0 is out of range: allowed (0.0, inf]"),
    ("--num_epochs=0", "error: MAPPOConfig.num_epochs=0 is out of range: allowed [1, inf]"),
    ("--env_kwargs=[1]", "error: --env_kwargs must be a JSON object, got '[1]'"),
    ("--chunk_length=3", "error: MAPPOConfig.chunk_length (3) applies to recurrent networks "
                         "only: set recurrent=True"),
])
def test_bad_input_is_a_one_line_error_before_any_process_starts(tmp_path, flag, message):
    with pytest.raises(AssertionError) as failure:
        run_example(str(tmp_path / "run"), flag)
    text = str(failure.value)
    assert message in text and "Traceback" not in text
    assert not os.path.exists(tmp_path / "run")
