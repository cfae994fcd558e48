"""User errors on the command lines give one line naming the problem (no traceback), and every
printed command is one a shell runs as shown (issue 26)."""

import json
import os
import shlex
import subprocess
import sys
import textwrap
import types

import pytest

from mava_systems import evaluate
from mava_systems.terminal import console, run_summary
from mava_systems.launching import launch
from mava_systems.experiment import __main__ as experiment_main
from mava_systems.madqn import MADQNConfig

from program_helpers import ROOT, example_command

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _run(command, cwd=ROOT):
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True,
                            timeout=120)
    return result.returncode, result.stdout, result.stderr


def _error_lines(stderr):
    """stderr without TensorFlow's and Gym's start-up lines (printed before any code of ours)."""
    return [line for line in stderr.splitlines()
            if line.strip() and not console.is_startup_noise(line)]


def _evaluate(tmp_path, *flags):
    return _run([sys.executable, "-m", "mava_systems.evaluate", *flags])


def test_evaluate_without_run_dir_says_so_in_one_line(tmp_path):
    code, stdout, stderr = _evaluate(tmp_path)
    assert code == 1 and stdout == ""
    assert _error_lines(stderr) == ["error: --run_dir is required: the run directory to "
                                    "evaluate, e.g. --run_dir=runs/spread"]


def test_evaluate_refuses_a_damaged_run_json_in_one_line(tmp_path):
    run_dir = tmp_path / "run dir"
    run_dir.mkdir()
    (run_dir / "run.json").write_text('{"system": "madqn", "environ')
    code, stdout, stderr = _evaluate(tmp_path, f"--run_dir={run_dir}")
    assert code == 1 and stdout == ""
    assert _error_lines(stderr) == [
        f"error: {run_dir}/run.json is damaged (Unterminated string starting at: line 1 column "
        "21 (char 20)): it says which system and environment the run used; restore it to "
        "evaluate the run"]


@pytest.mark.parametrize("run_json, message", [
    (None, "has no run.json: not a run directory"),
    ("[1, 2]", "run.json is damaged (not a JSON object)"),
    (json.dumps({"system": "nosuch", "environment_name": "debug/line_world_v0"}),
     "run.json: unknown system 'nosuch'; available: dmpo"),
], ids=["missing", "not_an_object", "unknown_system"])
def test_evaluate_names_what_is_wrong_with_a_run_directory(tmp_path, run_json, message):
    """What `evaluate`'s command prints as its one error line (see the test above)."""
    if run_json is not None:
        (tmp_path / "run.json").write_text(run_json)
    with pytest.raises(ValueError) as error:
        evaluate.evaluate(str(tmp_path), episodes=2)
    assert str(error.value).startswith(str(tmp_path)) and message in str(error.value)


def test_an_example_flag_that_does_not_parse_is_named(tmp_path):
    code, stdout, stderr = _run(example_command(os.path.join("mpe", "run_madqn.py"),
                                                str(tmp_path / "run"), "--hidden_sizes=64,abc"))
    assert code == 1 and stdout == ""
    assert _error_lines(stderr) == [
        "error: --hidden_sizes=64,abc is not a comma-separated list of integers (e.g. 64,64)"]
    assert not (tmp_path / "run").exists()  # Nothing started.


def test_an_exploration_flag_that_does_not_parse_is_named(tmp_path):
    code, stdout, stderr = _run(example_command(os.path.join("mpe", "run_madqn.py"),
                                                str(tmp_path / "run"), "--exploration=linear:1"))
    assert code == 1 and stdout == ""
    assert _error_lines(stderr) == [
        "error: --exploration: exploration schedule 'linear:1': expected 'constant:EPSILON' "
        "or 'linear:START,END,DECAY_STEPS'"]
    assert not (tmp_path / "run").exists()  # Nothing started.


def test_an_optional_number_flag_that_does_not_parse_is_named():
    assert launch._optional_number_flag("samples_per_insert", "None") is None
    assert launch._optional_number_flag("samples_per_insert", "8") == 8.0
    with pytest.raises(ValueError, match=r"^--samples_per_insert=abc is not a number \(or "
                                         r"'none'\)$"):
        launch._optional_number_flag("samples_per_insert", "abc")


def _experiment(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        experiment_main.main(list(argv))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.err


def _grid_flags(out):
    return ["--systems=madqn", "--envs=debug/line_world_v0", "--max_executor_steps=10",
            f"--out={out}"]


def test_experiment_refuses_a_damaged_settings_file_naming_it(tmp_path, capsys):
    out = tmp_path / "grid"
    out.mkdir()
    (out / "experiment.json").write_text('{"grid": ')
    for argv in (_grid_flags(out), ["report", str(out)]):
        code, stderr = _experiment(capsys, *argv)
        assert code == 2
        assert stderr.startswith(f"error: {out}/experiment.json is damaged (Expecting value"), (
            stderr)
        assert stderr.count("\n") == 1
    assert (out / "experiment.json").read_text() == '{"grid": '


def test_experiment_refuses_an_out_that_is_a_file(tmp_path, capsys):
    out = tmp_path / "afile"
    out.write_text("x")
    code, stderr = _experiment(capsys, *_grid_flags(out))
    assert (code, stderr) == (2, f"error: --out {out} is a file, not a directory; use another "
                                 "--out\n")


def test_the_already_reached_lines_are_printed_once(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent("""
        from mava_systems.terminal import console
        console.quiet_terminal(["program.py"])
        console.say(["Resuming the run in r", "The run in r already reached max=1"])
    """))
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Resuming the run in r\nThe run in r already reached max=1\n"
    assert result.stderr == ""


def _summary(run_dir, argv, max_executor_steps, steps_at_end):
    system = types.SimpleNamespace(run_dir=run_dir, config=MADQNConfig(),
                                   max_executor_steps=max_executor_steps)
    return run_summary.format_summary(system, 0, steps_at_end, 10.0, argv, None, None, [])


def _command(summary, label):
    line = next(line for line in summary.splitlines() if line.startswith(label))
    return shlex.split(line[len(label):])


def test_every_printed_command_survives_a_run_dir_with_spaces(tmp_path):
    run_dir = str(tmp_path / "my runs" / "it's a run")
    argv = ["examples/mpe/run_madqn.py", "--seed=3", "--max_executor_steps=500"]
    summary = _summary(run_dir, argv, 500, 500)
    assert _command(summary, "TensorBoard:")[-1] == os.path.join(run_dir, "tensorboard")
    assert _command(summary, "Plot:")[3:] == [run_dir, "--out",
                                              os.path.join(run_dir, "curves.png")]
    assert _command(summary, "Evaluate:")[3] == f"--run_dir={run_dir}"
    assert _command(summary, "Resume:")[1:] == ["examples/mpe/run_madqn.py", "--seed=3",
                                                f"--run_dir={run_dir}",
                                                "--max_executor_steps=1000"]


def test_the_resume_command_of_an_unlimited_run_stays_unlimited(tmp_path):
    argv = ["examples/mpe/run_madqn.py", "--max_executor_steps=0"]
    resume = _command(_summary(str(tmp_path), argv, None, 9000), "Resume:")
    assert resume[-1] == "--max_executor_steps=0"
    assert sum(argument.startswith("--max_executor_steps") for argument in resume) == 1
