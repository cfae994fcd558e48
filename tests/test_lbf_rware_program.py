"""End-to-end: the LBF and RWARE examples run as Launchpad programs, stop, checkpoint, resume (counts
continuing) and evaluate; a user's registered environment runs through the experiment command and
is evaluated in a fresh process. Each run is a short subprocess."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from mava_systems.runs.run_directory import read_status
from mava_systems.experiment.run_one import read_final_evaluation
import program_helpers
from program_helpers import ROOT, evaluate_checkpoint, read_csv, stop_count

FAST = ["--evaluation_interval_s=1", "--terminal_log_interval_s=5", "--progress_interval_s=0"]
LBF_QMIX = ["--min_replay_size=100", "--batch_size=32", "--n_step=3", "--mixing_embed_dim=8",
            "--hypernet_hidden_size=16", *FAST]
# 25-step episodes; MAPPO trains on 2 sequences of 10 steps (and their bootstrap step). A short
# queue makes the executor wait for the trainer, so that it has trained before the stop.
RWARE_MAPPO = ["--env_kwargs={\"max_steps\": 25}", "--batch_size=2", "--sequence_length=11",
               "--num_minibatches=1", "--num_epochs=1", "--max_queue_size=4",
               "--trainer_steps_per_call=1", *FAST]


def run_and_resume(script, run_dir, flags, first_limit, second_limit):
    """Runs examples/<script> to `first_limit` executor steps, then resumes it to `second_limit`;
    checks that the second launch continued the saved counts. Returns the saved status."""
    first = program_helpers.run_example(script, run_dir, *flags, f"--max_executor_steps={first_limit}")
    reached, limit = stop_count(first)
    assert limit == first_limit and reached >= first_limit
    status = read_status(run_dir)
    assert status.trainer_steps > 0
    saved_steps = int(status.counts["executor_steps"])
    assert saved_steps >= first_limit

    second = program_helpers.run_example(script, run_dir, *flags, f"--max_executor_steps={second_limit}")
    match = re.search(r"Resuming the run in .* from trainer step (\d+) \(.*executor_steps=(\d+)", second)
    assert match, second[-3000:]
    assert int(match.group(1)) == status.trainer_steps and int(match.group(2)) == saved_steps
    reached, limit = stop_count(second)
    assert limit == second_limit and reached >= second_limit
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > status.trainer_steps
    return status


def test_lbf_qmix_runs_resumes_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    # Epsilon falls from 1 to 0.05 over the executor's first 400 steps, also across the resume.
    run_and_resume(os.path.join("lbf", "run_qmix.py"), run_dir,
                   [*LBF_QMIX, "--exploration=linear:1,0.05,400"], 300, 500)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["environment_name"] == "lbf/Foraging-8x8-2p-2f-coop-v3"
    assert description["environment_registration"] is None  # Built in.
    assert description["agents"] == ["agent_0", "agent_1"]
    # The mixer reads the state (2 x 12 observations) through hypernetworks of 16 units.
    assert [24, 2 * 16 + 2 * 8] in description["mixer_variables"]
    assert description["exploration_schedules"] == ["LinearEpsilon(1.0, 0.05, 400)"]
    executor_rows = read_csv(run_dir, "executor_0")
    for row in executor_rows:  # Each row's epsilon is the schedule's at (about) its step.
        expected = max(1.0 - 0.95 * int(row["executor_steps"]) / 400, 0.05)
        assert float(row["epsilon"]) == pytest.approx(expected, abs=0.15)
    assert float(executor_rows[-1]["epsilon"]) == pytest.approx(0.05)
    assert all(0.0 <= float(row["episode_return"]) <= 1.0 for row in executor_rows)
    assert all(1 <= int(row["episode_length"]) <= 50 for row in executor_rows)

    result = evaluate_checkpoint(run_dir, "--episodes=2", "--seed=1")
    assert result["episodes"] == 2 and all(0.0 <= value <= 1.0 for value in result["returns"])


@pytest.mark.parametrize("system", ["madqn", "vdn", "qmix"])
def test_the_value_based_lbf_examples_anneal_epsilon_by_default(system):
    """The schedule that took QMIX on LBF from 0.80 to 0.94 (docs/benchmarks.md) is the value-based
    LBF examples' default: --exploration's default, which their runs record (see above)."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "lbf", f"run_{system}.py"),
                             "--helpfull"], capture_output=True, text=True, timeout=300, check=False)
    help_text = result.stdout + result.stderr
    position = help_text.index("--exploration:")
    assert "(default: 'linear:1,0.05,200000')" in help_text[position:position + 400], help_text[-2000:]
    # VDN's step size from its LBF lever (docs/benchmarks.md); the others keep the systems' 1e-3.
    position = help_text.index("--learning_rate:")
    expected = "0.0003" if system == "vdn" else "0.001"
    assert f"(default: '{expected}')" in help_text[position:position + 400], help_text[-2000:]


def test_rware_mappo_runs_resumes_and_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    run_and_resume(os.path.join("rware", "run_mappo.py"), run_dir, RWARE_MAPPO, 200, 350)
    executor_rows = read_csv(run_dir, "executor_0")
    assert {int(row["episode_length"]) for row in executor_rows} == {25}
    assert all(float(row["episode_return"]) >= 0.0 for row in executor_rows)
    result = evaluate_checkpoint(run_dir, "--episodes=2", "--seed=1")
    assert result["episodes"] == 2 and all(value >= 0.0 for value in result["returns"])


def test_an_unknown_lbf_id_is_a_one_line_error_before_any_process_starts(tmp_path):
    run_dir = str(tmp_path / "run")
    with pytest.raises(AssertionError) as failure:
        program_helpers.run_example(os.path.join("lbf", "run_vdn.py"), run_dir,
                                    "--env=lbf/Foraging-8x8-2p-2f-cooop-v3")
    assert re.search(r"error: unknown environment 'lbf/Foraging-8x8-2p-2f-cooop-v3'.*close matches: "
                     r".*Foraging-8x8-2p-2f-coop-v3", str(failure.value))
    assert not os.path.exists(os.path.join(run_dir, "run.json"))


USER_MODULE = """
    import wrappers
    from wrappers import debug_envs

    # A user's own environment, registered when this module is imported.
    wrappers.register_environment("mine/corridor_v0", lambda **kwargs: debug_envs.parallel_env(**kwargs))
"""


USER_SYSTEM = """
    from mava_systems import vdn


    class MyVDN(vdn.VDN):
        \"\"\"A user's own system (here VDN under its own name), defined in a file of theirs.\"\"\"

        system_name = "my_vdn"
"""


def test_a_registered_environment_and_an_own_system_run_in_an_experiment_and_evaluate_in_a_fresh_process(
        tmp_path):
    module_dir = tmp_path / "user_code"
    module_dir.mkdir()
    (module_dir / "my_environments.py").write_text(textwrap.dedent(USER_MODULE))
    (module_dir / "my_systems.py").write_text(textwrap.dedent(USER_SYSTEM))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join([str(module_dir), os.environ.get("PYTHONPATH", ROOT)]))
    out = str(tmp_path / "experiment")
    # The system's file by its path: each run's process imports it before looking the system up.
    command = [sys.executable, "-m", "mava_systems.experiment", "--systems=my_vdn", "--envs=mine/corridor_v0",
               "--env_module=my_environments", f"--system_module={module_dir / 'my_systems.py'}",
               "--seeds=1", "--max_executor_steps=300", f"--out={out}",
               "--set", "my_vdn.min_replay_size=100", "--set", "my_vdn.batch_size=32",
               "--set", "my_vdn.evaluation_interval_s=1", "--progress_interval_s=0"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    run_dir = os.path.join(out, "runs", "mine", "corridor_v0", "my_vdn", "seed_0")
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["environment_name"] == "mine/corridor_v0"
    assert description["environment_registration"] == "my_environments"
    assert description["system_script"] == str(module_dir / "my_systems.py")
    assert description["system_class"].endswith(":MyVDN")
    final = read_final_evaluation(run_dir)
    assert final["episodes"] > 0, final

    # A fresh process imports my_systems.py and my_environments (recorded in run.json) to rebuild
    # the system and the environment.
    evaluation = subprocess.run([sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}",
                                 "--episodes=3"], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=300)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    returns = json.loads(evaluation.stdout.strip().splitlines()[-1])["returns"]
    # line_world's range, summed over its 2 agents: each step's team reward is at least
    # -(2 agents x 4 cells apart) / (2 x 5 cells) = -0.8, for 10 steps, to each agent.
    assert len(returns) == 3 and all(-16.0 <= value <= 0.0 for value in returns), returns

    # Without the module on the path, the error names it.
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", ROOT)
    evaluation = subprocess.run([sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert evaluation.returncode != 0
    assert "cannot import 'my_environments', which registers the environment" in evaluation.stderr
