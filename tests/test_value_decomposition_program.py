"""End-to-end: the VDN and QMIX examples run as Launchpad programs, stop, checkpoint, resume, evaluate.

Each run is a subprocess on the tiny cooperative `debug/line_world_v0` (see
test_madqn_program.py, whose small configuration these runs share).
"""

import glob
import json
import os
import re


import numpy as np
import pytest
import tensorflow as tf

from mava_systems.runs.run_directory import read_status
import program_helpers
from program_helpers import evaluate_checkpoint, read_csv, stop_count
from test_madqn_program import kill_after_checkpoints

SMALL_CONFIG = ["--env=debug/line_world_v0", "--min_replay_size=100", "--batch_size=32",
                "--n_step=3", "--evaluation_interval_s=1", "--terminal_log_interval_s=5"]


def run_example(system, run_dir, *flags, launch_type="local_mt"):
    """Runs examples/mpe/run_<system>.py with the small configuration; its output."""
    return program_helpers.run_example(os.path.join("mpe", f"run_{system}.py"), run_dir,
                                       *SMALL_CONFIG, *flags, launch_type=launch_type)


def check_stopped_run(run_dir, output, limit):
    """The program stopped at `limit` steps with trainer, executor and evaluator logs and checkpoints."""
    reached, logged_limit = stop_count(output)
    assert logged_limit == limit and reached >= limit
    trainer_rows = read_csv(run_dir, "trainer")
    assert trainer_rows and int(trainer_rows[-1]["trainer_steps"]) > 0
    assert int(trainer_rows[-1]["replay_size"]) >= 100
    assert all(float(row["loss"]) >= 0 for row in trainer_rows)  # One team loss, no per-network one.
    assert "loss/agent" not in trainer_rows[-1]
    for executor_id in (0, 1):
        assert int(read_csv(run_dir, f"executor_{executor_id}")[-1]["episode_length"]) == 10
    assert read_csv(run_dir, "evaluator")
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node


def test_qmix_runs_resumes_with_its_mixer_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    first = run_example("qmix", run_dir, "--max_executor_steps=600", "--num_executors=2",
                        "--mixing_embed_dim=8", "--hypernet_hidden_size=16")
    check_stopped_run(run_dir, first, 600)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "mava_systems.qmix.system:QMIX"
    # line_world's state (20) -> 2 x hypernet hidden (16) + b1 and V's hidden (embed 8 each).
    assert [20, 2 * 16 + 2 * 8] in description["mixer_variables"]
    first_trainer_steps = int(read_csv(run_dir, "trainer")[-1]["trainer_steps"])

    second = run_example("qmix", run_dir, "--max_executor_steps=900", "--num_executors=2",
                         "--mixing_embed_dim=8", "--hypernet_hidden_size=16")
    match = re.search(r"Resuming the run in .* from trainer step (\d+)", second)
    assert match and int(match.group(1)) >= first_trainer_steps > 0, second[-3000:]
    assert "trainer: restored from checkpoint" in second
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > int(match.group(1))

    with pytest.raises(AssertionError, match="cannot continue"):
        run_example("qmix", run_dir, "--max_executor_steps=1000", "--num_executors=2",
                    "--mixing_embed_dim=16", "--hypernet_hidden_size=16")

    result = evaluate_checkpoint(run_dir, "--episodes=4", "--seed=1")
    assert result["episodes"] == 4 and -10.0 <= result["mean_return"] <= 0.0


def test_vdn_runs_as_a_multi_process_program(tmp_path):
    run_dir = str(tmp_path / "run")
    output = run_example("vdn", run_dir, "--max_executor_steps=600", "--num_executors=2",
                         launch_type="local_mp")
    check_stopped_run(run_dir, output, 600)
    assert "Finished." in output


def test_bad_input_is_a_one_line_error_before_any_process_starts(tmp_path):
    with pytest.raises(AssertionError) as failure:
        run_example("qmix", str(tmp_path / "run"), "--team_reward=max")
    message = str(failure.value)
    assert "error: QMIXConfig.team_reward must be one of ('mean', 'sum'), got 'max'" in message
    assert "Traceback" not in message and not os.path.exists(tmp_path / "run")


def mixer_checkpoint(run_dir, trainer_steps):
    """The trainer checkpoint saved at `trainer_steps`: {variable name: value} of its step
    counters, joint optimizer and mixer (online and target)."""
    for index in sorted(glob.glob(os.path.join(run_dir, "checkpoints", "trainer", "ckpt-*.index"))):
        reader = tf.train.load_checkpoint(index[:-len(".index")])
        names = reader.get_variable_to_shape_map()
        (steps_name,) = [name for name in names if name.startswith("num_steps/")]
        if int(reader.get_tensor(steps_name)) == trainer_steps:
            return {name: reader.get_tensor(name) for name in names
                    if re.match(r"(num_steps|optimizer\.Sjoint|module\.S|target_module\.S)", name)}
    raise AssertionError(f"no trainer checkpoint at step {trainer_steps}")


def test_a_killed_qmix_run_resumes_its_counts_mixer_and_optimizer(tmp_path):
    run_dir = str(tmp_path / "run")
    flags = [*SMALL_CONFIG, "--num_executors=2", "--checkpoint_interval_s=2",
             "--mixing_embed_dim=8", "--hypernet_hidden_size=16"]
    script = os.path.join("mpe", "run_qmix.py")
    # A limit the first part never reaches, however fast the machine (see the brief's traps).
    kill_after_checkpoints(program_helpers.example_command(script, run_dir, *flags,
                                                           "--max_executor_steps=1000000"),
                           run_dir, tmp_path / "first.log", min_steps=400)
    status = read_status(run_dir)
    assert status.resumed and status.trainer_steps > 0
    saved = mixer_checkpoint(run_dir, status.trainer_steps)
    saved_steps = int(status.counts["executor_steps"])
    trainer_rows_before = program_helpers.rows_kept_at_resume(run_dir, "trainer", status)

    # The second part runs 300 executor steps past the saved count.
    limit = saved_steps + 300
    second = program_helpers.run_example(script, run_dir, *flags, f"--max_executor_steps={limit}")
    program_helpers.check_resumed_part(second, run_dir, status, limit, trainer_rows_before)

    # The mixer, its target and the joint optimizer continue from the saved ones: the optimizer
    # has counted every step of both parts, and the mixer moved on from the saved weights.
    final_steps = read_status(run_dir).trainer_steps
    assert final_steps > status.trainer_steps
    final = mixer_checkpoint(run_dir, final_steps)
    (optimizer_step,) = [name for name in final if re.match(r"optimizer\.Sjoint/step/", name)]
    # (Sonnet's Adam counts a step as it starts, before its batch arrives, so at a stop its
    # count may be ahead of the trainer's exact one; an optimizer that restarted would have
    # counted only the second part's steps.)
    assert int(saved[optimizer_step]) >= status.trainer_steps
    assert int(final[optimizer_step]) >= final_steps
    mixer_names = [name for name in saved if name.startswith("module.Smixer/")]
    target_names = [name for name in saved if name.startswith("target_module.Smixer/")]
    assert mixer_names and len(target_names) == len(mixer_names)
    moved = [float(np.max(np.abs(final[name] - saved[name]))) for name in mixer_names]
    assert 0.0 < max(moved), "the mixer did not train after the resume"
    # A restarted mixer would start from fresh random weights (about as far from the saved
    # ones as they are from 0); the resumed one stays close to where it was.
    for name in mixer_names:
        if saved[name].ndim == 2:
            assert np.linalg.norm(final[name] - saved[name]) < 0.5 * np.linalg.norm(saved[name])
