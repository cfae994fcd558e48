"""End-to-end: the MADQN example runs as a Launchpad program, stops itself, logs, checkpoints and learns.

Each run is a subprocess (Launchpad keeps process-wide signal state), on the
tiny cooperative `debug/line_world_v0`: 2 agents, 10-step episodes; a random
policy scores about -3.2 per episode and the optimal one about -0.24.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mava_systems.runs.run_directory import read_status
from mava_systems.madqn.builder import REPLAY_TABLE
import program_helpers
from program_helpers import evaluate_checkpoint, launch_log, read_csv, stop_count

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5"]


def run_example(run_dir, *flags, launch_type="local_mt", timeout=300):
    """Runs examples/mpe/run_madqn.py with the small configuration and returns its output."""
    return program_helpers.run_example(os.path.join("mpe", "run_madqn.py"), run_dir, *SMALL_CONFIG,
                                       *flags, launch_type=launch_type, timeout=timeout)


# The flags of the runs `stopped_run` makes.
STOPPED_RUN_FLAGS = ["--max_executor_steps=600", "--num_executors=2"]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """`launch_type` -> (run_dir, output) of a fresh run with `STOPPED_RUN_FLAGS`, stopped at its
    limit. Each launch type's run is made once, when a test first asks for it; a test that
    launches again in it works on a copy."""
    runs = {}

    def run(launch_type):
        if launch_type not in runs:
            run_dir = str(tmp_path_factory.mktemp(f"stopped-{launch_type}") / "run")
            runs[launch_type] = run_dir, run_example(run_dir, *STOPPED_RUN_FLAGS,
                                                     launch_type=launch_type)
        return runs[launch_type]

    return run


@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_program_stops_at_max_executor_steps_with_logs_and_checkpoints(stopped_run, launch_type):
    run_dir, output = stopped_run(launch_type)

    reached, limit = stop_count(output)
    assert limit == 600 and reached >= 600
    assert f"Run directory: {run_dir}" in output and "Finished." in output
    # Within one 10-step episode per executor of the limit: executors sync their count at
    # every episode's end and start none once the limit is counted.
    final_steps = int(read_status(run_dir).counts["executor_steps"])
    assert 600 <= reached <= final_steps <= 600 - 1 + 2 * 10
    assert final_steps % 10 == 0
    # The evaluator's last round was played at the stop, with the final counts.
    last_evaluation = read_csv(run_dir, "evaluator")[-1]
    assert last_evaluation["final"] == "1"
    assert int(last_evaluation["executor_steps"]) >= 600

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
    evaluations = [evaluate_checkpoint(run_dir, "--episodes=20", "--seed=1") for _ in range(2)]
    assert evaluations[0] == evaluations[1]
    assert evaluations[0]["mean_return"] > -2.0
    assert evaluations[0]["ci95_low"] <= evaluations[0]["mean_return"] <= evaluations[0]["ci95_high"]


def test_rerunning_in_the_same_run_dir_resumes_counts_and_weights(stopped_run, tmp_path):
    # The first part: the local_mt run of 600 steps (a copy; the other tests keep it).
    first_run_dir, first = stopped_run("local_mt")
    run_dir = str(tmp_path / "run")
    shutil.copytree(first_run_dir, run_dir)
    assert "Starting a fresh run" in first
    first_trainer_steps = int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])

    flags = ["--num_executors=2"]
    second = run_example(run_dir, *flags, "--max_executor_steps=900", "--learning_rate=0.0005")
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)",
                      second)
    assert match, second[-3000:]
    assert int(match.group(1)) >= first_trainer_steps > 0
    assert int(match.group(2)) >= 600
    assert "Changed since the last launch: config.learning_rate, max_executor_steps" in second
    reached, limit = stop_count(second)
    assert limit == 900 and reached >= 900
    # The counter continued: the second part took about 300 steps, not 900.
    assert "trainer: restored from checkpoint" in second
    trainer_rows = read_csv(run_dir, "trainer")
    assert int(trainer_rows[-1]["trainer_steps"]) > int(match.group(1))

    with pytest.raises(AssertionError, match="cannot continue"):
        run_example(run_dir, *flags, "--max_executor_steps=900", "--hidden_sizes=32")

    # A damaged latest trainer checkpoint: the run resumes from the one before, saying so.
    trainer_checkpoints = os.path.join(run_dir, "checkpoints", "trainer")
    saved = sorted(glob.glob(os.path.join(trainer_checkpoints, "ckpt-*.data-*")))
    assert len(saved) == 3  # The first part's initial state, then one save per part.
    truncate(saved[-1])
    fallback = run_example(run_dir, *flags, "--max_executor_steps=1000")
    assert f"skipping checkpoint {saved[-1].split('.data')[0]} cannot be read" in fallback
    assert f"from trainer step {int(match.group(1))} " in fallback  # The first part's last save.

    # No readable trainer checkpoint at all: a one-line error naming the files, no stack trace.
    for data_file in glob.glob(os.path.join(trainer_checkpoints, "ckpt-*.data-*")):
        truncate(data_file)
    with pytest.raises(AssertionError) as failure:
        run_example(run_dir, *flags, "--max_executor_steps=1100")
    assert re.search(r"error: no checkpoint in \S+trainer can be restored: checkpoint \S+ckpt-",
                     str(failure.value)), str(failure.value)
    assert "Traceback" not in str(failure.value)
    last_trainer_steps = int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])

    fresh = run_example(run_dir, "--max_executor_steps=300", "--hidden_sizes=32", "--start_fresh")
    assert "Starting a fresh run" in fresh
    old = run_dir + ".old-1"
    assert glob.glob(os.path.join(old, "checkpoints", "trainer", "ckpt-*.index"))
    assert int(read_csv(old, "trainer")[-1]["trainer_steps"]) == last_trainer_steps


def truncate(path):
    """Cuts a file to half its size, as a crash or a full disk might."""
    with open(path, "rb+") as damaged:
        damaged.truncate(os.path.getsize(path) // 2)


def example_command(run_dir, *flags, launch_type="local_mt"):
    """The command line `run_example` runs."""
    return program_helpers.example_command(os.path.join("mpe", "run_madqn.py"), run_dir,
                                           *SMALL_CONFIG, *flags, launch_type=launch_type)


def kill_after_checkpoints(command, run_dir, log_path, min_steps):
    """Runs `command` and SIGKILLs its process group once `min_steps` executor steps and two
    periodic trainer checkpoints with replay were saved; returns its output."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", SDL_VIDEODRIVER="dummy")
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 240
        while (sum(1 for save in read_saves(run_dir)
                   if save["node"] == "trainer" and save.get("replay_checkpoint")) < 2
               or read_status(run_dir).counts.get("executor_steps", 0) < min_steps):
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.time() < deadline, "no periodic checkpoints were written"
            time.sleep(0.2)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # It had ended already (the assertion above says why).
            pass
        process.wait()
    output = log_path.read_text() + launch_log(os.path.join(run_dir, "output.log"), 0)
    assert "Coordinator: executor_steps" not in output, "the run ended before the kill"
    return output


def test_a_killed_single_agent_run_resumes_with_its_periodic_replay_checkpoint(tmp_path):
    """DQN (a single-agent system) saves replay with every periodic trainer checkpoint too."""
    run_dir = str(tmp_path / "run")
    flags = ["--checkpoint_interval_s=2", "--min_replay_size=100", "--batch_size=32",
             "--evaluation_interval_s=1", "--progress_interval_s=0"]
    script = os.path.join("gymnasium", "run_dqn.py")
    # A limit the first part never reaches: on a quiet machine CartPole runs 1,200 steps
    # before two periodic checkpoints are saved.
    kill_after_checkpoints(program_helpers.example_command(script, run_dir, *flags,
                                                           "--max_actor_steps=100000"),
                           run_dir, tmp_path / "first.log", min_steps=500)
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0 and status.replay_checkpoint
    assert abs(status.replay_age_s) <= 60  # Taken with the latest trainer checkpoint.

    # The second part runs 300 steps past the saved count.
    limit = int(status.counts["executor_steps"]) + 300
    second = program_helpers.run_example(script, run_dir, *flags, f"--max_actor_steps={limit}")
    assert f"from trainer step {status.trainer_steps} " in second, second[:2000]
    assert f"Replay: restored from {status.replay_checkpoint}, saved with the trainer" in second
    with open(os.path.join(run_dir, "checkpoints", "replay_restore.json")) as restore_file:
        restored = json.load(restore_file)
    assert restored["checkpoint"] == status.replay_checkpoint
    assert sum(restored["items"].values()) >= 100


def read_saves(run_dir):
    """The checkpoint save log: one dict per save, oldest first."""
    path = os.path.join(run_dir, "checkpoints", "saves.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as saves_file:
        return [json.loads(line) for line in saves_file if line.endswith("\n")]


def saved_replay_size(run_dir, replay_checkpoint):
    """How many items a replay checkpoint holds, read by a separate Reverb server."""
    import reverb  # pylint: disable=g-import-not-at-top
    from mava_systems import madqn  # pylint: disable=g-import-not-at-top
    import wrappers  # pylint: disable=g-import-not-at-top
    copy = os.path.join(os.path.dirname(run_dir), "replay_copy")
    shutil.copytree(replay_checkpoint, os.path.join(copy, os.path.basename(replay_checkpoint)))
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=madqn.MADQNConfig(min_replay_size=100, batch_size=32, n_step=3),
                         run_dir=os.path.join(os.path.dirname(run_dir), "unused"))
    server = reverb.Server(system.builder.make_replay_tables(),
                           checkpointer=reverb.checkpointers.DefaultCheckpointer(copy))
    try:
        return {name: info.current_size
                for name, info in server.localhost_client().server_info().items()}
    finally:
        server.stop()


@pytest.mark.parametrize("launch_type", ["local_mt", "local_mp"])
def test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint(tmp_path, launch_type):
    run_dir = str(tmp_path / "run")
    flags = ["--checkpoint_interval_s=2", "--num_executors=2"]
    # A limit the first part never reaches before its two checkpoints (at 2,000+ steps/s it
    # reached 4,000 first once).
    first_output = kill_after_checkpoints(example_command(run_dir, *flags,
                                                          "--max_executor_steps=100000",
                                                          launch_type=launch_type),
                                          run_dir, tmp_path / "first.log", min_steps=1200)
    executed_before_kill = max(int(row["executor_steps"]) for executor_id in (0, 1)
                               for row in read_csv(run_dir, f"executor_{executor_id}"))
    status = read_status(run_dir)
    # The rows logged after the saved counts are set aside at the resume.
    trainer_rows_before = program_helpers.rows_kept_at_resume(run_dir, "trainer", status)
    executor_rows_before = [program_helpers.rows_kept_at_resume(run_dir, f"executor_{i}", status)
                            for i in (0, 1)]
    assert status.resumed and status.trainer_steps > 0
    saved_sizes = saved_replay_size(run_dir, status.replay_checkpoint)
    assert saved_sizes[REPLAY_TABLE] >= 100

    # The second part runs 300 steps past the saved count.
    limit_steps = int(status.counts["executor_steps"]) + 300
    second = run_example(run_dir, *flags, f"--max_executor_steps={limit_steps}",
                         launch_type=launch_type)
    assert f"from trainer step {status.trainer_steps} " in second, second[:2000]
    assert f"executor_steps={int(status.counts['executor_steps'])}" in second
    with open(os.path.join(run_dir, "checkpoints", "replay_restore.json")) as restore_file:
        restored = json.load(restore_file)
    assert restored["checkpoint"] == status.replay_checkpoint
    assert restored["items"] == saved_sizes  # Replay came back exactly as saved.

    resumed_rows = read_csv(run_dir, "trainer")[trainer_rows_before:]
    program_helpers.assert_trainer_count_continues(run_dir, resumed_rows[0], status.trainer_steps)
    reached, limit = stop_count(second)
    assert limit == limit_steps and reached >= limit_steps
    # The second part ran only the steps the first had not saved (plus the stop's overshoot).
    saved_steps = int(status.counts["executor_steps"])
    second_part_steps = sum(int(row["episode_length"]) for i in (0, 1)
                            for row in read_csv(run_dir, f"executor_{i}")[executor_rows_before[i]:])
    assert saved_steps >= 1200
    # Each executor stops within one 10-step episode of the limit. A run that restarted its
    # count would take at least `limit_steps` steps, far above this bound.
    assert limit_steps - saved_steps <= second_part_steps <= limit_steps - 1 + 2 * 10 - saved_steps
    print(f"{launch_type}: executor steps lost to the kill: "
          f"{executed_before_kill - int(status.counts['executor_steps'])} "
          f"(logged {executed_before_kill}, saved {int(status.counts['executor_steps'])})")
