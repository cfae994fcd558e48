"""End-to-end: the MADQN example runs as a Launchpad program, stops itself, logs, checkpoints and learns.

Each run is a subprocess (Launchpad keeps process-wide signal state), on the
tiny cooperative `debug/line_world_v0`: 2 agents, 10-step episodes; a random
policy scores about -3.2 per episode and the optimal one about -0.24.
"""

import csv
import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5"]


def run_example(run_dir, *flags, launch_type="local_mt", timeout=300):
    """Runs examples/mpe/run_madqn.py and returns its combined output."""
    command = [sys.executable, os.path.join(ROOT, "examples", "mpe", "run_madqn.py"),
               f"--lp_launch_type={launch_type}", f"--run_dir={run_dir}", *SMALL_CONFIG, *flags]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"exit code {result.returncode}:\n{output[-5000:]}"
    return output


def read_csv(run_dir, node):
    with open(os.path.join(run_dir, "logs", node, "logs.csv")) as csv_file:
        return list(csv.DictReader(csv_file))


def stop_count(output):
    """The executor step count at which the coordinator stopped the program."""
    match = re.search(r"Coordinator: executor_steps=(\d+) reached (\d+)", output)
    assert match, "the coordinator never stopped the program"
    return int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_program_stops_at_max_executor_steps_with_logs_and_checkpoints(tmp_path, launch_type):
    run_dir = str(tmp_path / "run")
    output = run_example(run_dir, "--max_executor_steps=600", "--num_executors=2",
                         launch_type=launch_type)

    reached, limit = stop_count(output)
    assert limit == 600 and reached >= 600
    assert f"Run directory: {run_dir}" in output and "Finished." in output

    trainer_rows = read_csv(run_dir, "trainer")
    assert trainer_rows, "the trainer never stepped"
    assert int(trainer_rows[-1]["trainer_steps"]) > 0
    assert int(trainer_rows[-1]["replay_size"]) >= 100  # min_replay_size items arrived
    assert all(float(row["loss/agent"]) >= 0 for row in trainer_rows)
    for executor_id in (0, 1):
        rows = read_csv(run_dir, f"executor_{executor_id}")
        assert rows and int(rows[-1]["episode_length"]) == 10
    epsilons = [float(read_csv(run_dir, f"executor_{i}")[0]["epsilon"]) for i in (0, 1)]
    assert epsilons == pytest.approx([0.4 ** 8, 0.4])  # Each executor explores with its own.
    assert read_csv(run_dir, "evaluator")

    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node
    assert glob.glob(os.path.join(run_dir, "tensorboard", "trainer", "*tfevents*"))


def test_madqn_learns_the_cooperative_line_world(tmp_path):
    run_dir = str(tmp_path / "run")
    run_example(run_dir, "--max_executor_steps=3000", "--seed=3")
    returns = [float(row["evaluation_return"]) for row in read_csv(run_dir, "evaluator")]
    assert len(returns) >= 5
    first, last = returns[0], sum(returns[-3:]) / 3
    # Random play scores about -3.2 and optimal play -0.24.
    assert last > -2.0, returns
    assert last > first + 1.0, returns

    # The saved checkpoint evaluates the same way twice, and as well as the trained policy.
    evaluations = [evaluate_run(run_dir, "--episodes=20", "--seed=1") for _ in range(2)]
    assert evaluations[0] == evaluations[1]
    assert evaluations[0]["mean_return"] > -2.0
    assert evaluations[0]["ci95_low"] <= evaluations[0]["mean_return"] <= evaluations[0]["ci95_high"]


def evaluate_run(run_dir, *flags):
    """Runs `python -m mava_systems.evaluate` and returns its JSON result."""
    command = [sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}", *flags]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rerunning_in_the_same_run_dir_resumes_counts_and_weights(tmp_path):
    run_dir = str(tmp_path / "run")
    first = run_example(run_dir, "--max_executor_steps=500")
    assert "Starting a fresh run" in first
    first_trainer_steps = int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])

    second = run_example(run_dir, "--max_executor_steps=1000", "--learning_rate=0.0005")
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      second)
    assert match, second[-3000:]
    assert int(match.group(1)) >= first_trainer_steps > 0
    assert int(match.group(2)) >= 500
    assert "Changed since the last launch: config.learning_rate, max_executor_steps" in second
    reached, limit = stop_count(second)
    assert limit == 1000 and reached >= 1000
    # The counter continued: the second part took about 500 steps, not 1000.
    assert "trainer: restored from checkpoint" in second
    trainer_rows = read_csv(run_dir, "trainer")
    assert int(trainer_rows[-1]["trainer_steps"]) > int(match.group(1))

    with pytest.raises(AssertionError, match="cannot continue"):
        run_example(run_dir, "--max_executor_steps=1000", "--hidden_sizes=32")

    fresh = run_example(run_dir, "--max_executor_steps=300", "--hidden_sizes=32", "--start_fresh")
    assert "Starting a fresh run" in fresh
    old = run_dir + ".old-1"
    assert glob.glob(os.path.join(old, "checkpoints", "trainer", "ckpt-*.index"))
    assert int(read_csv(old, "trainer")[-1]["trainer_steps"]) == int(trainer_rows[-1]["trainer_steps"])
