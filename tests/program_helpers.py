"""Running an example as a subprocess program and reading what it left in its run directory."""

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
from dm_env import specs

from mava_systems.runs import run_directory
import wrappers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def example_command(script, run_dir, *flags, launch_type="local_mt"):
    """The command line running examples/<script>."""
    return [sys.executable, os.path.join(ROOT, "examples", script),
            f"--lp_launch_type={launch_type}", f"--run_dir={run_dir}", *flags]


def run_example(script, run_dir, *flags, launch_type="local_mt", timeout=300):
    """Runs examples/<script> in its own process (Launchpad keeps process-wide state); its output.

    The output is what the terminal got followed by what this launch added to the run's
    output log (the libraries' and nodes' messages).
    """
    command = example_command(script, run_dir, *flags, launch_type=launch_type)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    log_path = os.path.join(run_dir, "output.log")
    log_start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    output = result.stdout + result.stderr + launch_log(log_path, log_start)
    assert result.returncode == 0, f"exit code {result.returncode}:\n{output[-5000:]}"
    return output


def launch_log(log_path, start):
    """What a launch added to a run's output log from byte `start` on ('' if there is none)."""
    if not os.path.exists(log_path):
        return ""
    with open(log_path, errors="replace") as log_file:
        log_file.seek(start)
        return log_file.read()


def read_csv(run_dir, node):
    """The rows node `node` logged."""
    with open(os.path.join(run_dir, "logs", node, "logs.csv")) as csv_file:
        return list(csv.DictReader(csv_file))


def rows_kept_at_resume(run_dir, node, status):
    """How many of node `node`'s logged rows a launch resuming from `status` keeps: those
    before the first that counts past what it resumes from (see
    `run_directory.roll_back_logs`); the resumed launch's rows follow them."""
    counts = run_directory.resumed_counts(status, node)
    rows = read_csv(run_dir, node)
    return next((index for index, row in enumerate(rows)
                 if run_directory.counts_past(row, counts)), len(rows))


def trainer_steps_per_call(run_dir):
    """The trainer steps per compiled call the run in `run_dir` was configured with."""
    with open(os.path.join(run_dir, "config.json")) as config_file:
        return json.load(config_file)["config"]["trainer_steps_per_call"]


def assert_trainer_count_continues(run_dir, first_resumed_row, saved_trainer_steps):
    """The resumed trainer's first row counts on from the saved trainer step: one compiled
    call later, i.e. at most the run's `trainer_steps_per_call` steps (fewer if a call was
    cut short waiting for data). A count that restarted would be far below it."""
    steps_per_call = trainer_steps_per_call(run_dir)
    resumed_steps = int(first_resumed_row["trainer_steps"])
    assert saved_trainer_steps < resumed_steps <= saved_trainer_steps + steps_per_call, (
        resumed_steps, saved_trainer_steps, steps_per_call)


def evaluation_returns(run_dir):
    """The evaluator's mean greedy return per round."""
    return [float(row["evaluation_return"]) for row in read_csv(run_dir, "evaluator")]


def stop_count(output):
    """(executor steps when the coordinator stopped the program, the limit)."""
    match = re.search(r"Coordinator: executor_steps=(\d+) reached (\d+)", output)
    assert match, "the coordinator never stopped the program"
    return int(match.group(1)), int(match.group(2))


def evaluate_checkpoint(run_dir, *flags):
    """`python -m mava_systems.evaluate` on the run's latest checkpoint: its JSON result."""
    command = [sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}", *flags]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def assert_final_checkpoint_evaluates(run_dir, above, episodes=4):
    """`python -m mava_systems.evaluate` restores the run's final trainer checkpoint (its step is
    at least the trainer's last logged one) and its greedy policy scores above `above`.

    The score is required only when the run's own final evaluation round, played with the
    weights the final checkpoint holds (the trainer takes no step after the step limit), scored
    above `above` in a steady way (its mean less its standard deviation above it): a policy
    collapsing at the stop (IMPALA on CartPole sometimes does, for a while) scores like an
    untrained one in some episodes, so its return cannot tell a restored checkpoint from a
    fresh network. (CI once saw a final round of 475 and 9, then 9 to 10 in all 4 episodes
    of the checkpoint; and before the trainer stopped at the limit, a round of 213 then 9.5
    from a checkpoint saved 15 steps later, trained on IMPALA's queue meanwhile.)
    """
    evaluation = evaluate_checkpoint(run_dir, f"--episodes={episodes}", "--seed=1")
    assert evaluation["trainer_steps"] >= int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])
    final_rounds = [row for row in read_csv(run_dir, "evaluator") if row.get("final") == "1"]
    assert final_rounds, "the run played no final evaluation round at its stop"
    final_round = final_rounds[-1]
    if float(final_round["evaluation_return"]) - float(final_round["evaluation_return_std"]) > above:
        assert evaluation["mean_return"] > above, (evaluation, final_round)
    return evaluation


def random_policy_return(env_name, episodes=50, seed=0):
    """Mean episode return of uniformly random actions in the one-agent environment `env_name`."""
    environment = wrappers.make_environment_factory(env_name)(seed=seed)
    (agent,) = environment.agents
    spec = environment.action_spec()[agent]
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(episodes):
        timestep = environment.reset()
        while not timestep.last():
            if isinstance(spec, specs.DiscreteArray):
                action = np.int32(rng.integers(spec.num_values))
            else:
                action = rng.uniform(spec.minimum, spec.maximum).astype(np.float32)
            timestep = environment.step({agent: action})
            total += float(timestep.reward[agent])
    return total / episodes


def check_resumed_part(output, run_dir, status, limit, trainer_rows_before, episode_length=10,
                       num_executors=2):
    """The resumed part of a killed run (`output`) started from the saved trainer step and
    executor count (`status`), restored the trainer and stopped at `limit`; its trainer count
    continues from the saved one (rows from `trainer_rows_before` on)."""
    saved_steps = int(status.counts["executor_steps"])
    assert f"from trainer step {status.trainer_steps} " in output, output[:2000]
    assert f"executor_steps={saved_steps}" in output
    assert "trainer: restored from checkpoint" in output
    reached, logged_limit = stop_count(output)
    assert logged_limit == limit and reached >= limit
    # Each executor stops within one episode of the limit; a run whose count restarted would
    # stop at `limit` steps of its own, far more.
    assert (limit <= int(run_directory.read_status(run_dir).counts["executor_steps"])
            <= limit - 1 + num_executors * episode_length)
    resumed_rows = read_csv(run_dir, "trainer")[trainer_rows_before:]
    assert_trainer_count_continues(run_dir, resumed_rows[0], status.trainer_steps)
