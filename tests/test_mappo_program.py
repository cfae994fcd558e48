"""End-to-end: the MAPPO example runs as a Launchpad program (local_mt and local_mp), stops,
checkpoints, resumes its counters and weights, evaluates, and names bad input.

Runs are subprocesses on the tiny cooperative `debug/line_world_v0` (see
test_madqn_program.py). The queue holds 8 sequences: executors wait for the
trainer, so every run trains before it reaches its step limit.
"""

import glob
import json
import os
import re

import pytest

import program_helpers
from program_helpers import evaluate_checkpoint, read_csv, stop_count

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


def test_mappo_runs_resumes_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    first = run_example(run_dir, "--max_executor_steps=600", "--num_executors=2")
    first_trainer_steps = check_stopped_run(run_dir, first, 600)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "mava_systems.mappo.system:MAPPO"
    assert description["config.critic"] == "centralised"
    # The critic sees line_world's state (20) and its agent's observation with its ID (12).
    assert [32, 64] in description["network_variables"]["critic/agent"]

    second = run_example(run_dir, "--max_executor_steps=900", "--num_executors=2")
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      second)
    assert match, second[-3000:]
    assert int(match.group(1)) >= first_trainer_steps > 0 and int(match.group(2)) >= 600
    assert "trainer: restored from checkpoint" in second
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > int(match.group(1))
    reached, limit = stop_count(second)
    assert limit == 900 and reached >= 900

    with pytest.raises(AssertionError, match="cannot continue"):
        run_example(run_dir, "--max_executor_steps=1000", "--num_executors=2",
                    "--critic=decentralised")

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    assert result["episodes"] == 4 and -10.0 <= result["mean_return"] <= 0.0


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
])
def test_bad_input_is_a_one_line_error_before_any_process_starts(tmp_path, flag, message):
    with pytest.raises(AssertionError) as failure:
        run_example(str(tmp_path / "run"), flag)
    text = str(failure.value)
    assert message in text and "Traceback" not in text
    assert not os.path.exists(tmp_path / "run")
