"""A quiet, quick command line (issue 44): `--help` lists every config field with its help,
`experiment` answers `--help` and an unknown environment id before TensorFlow (or Reverb, Acme)
is imported, and no library noise reaches the terminal."""

import dataclasses
import os
import subprocess
import sys

import pytest

from program_helpers import ROOT

# One example per kind of system (each imports TensorFlow: a few seconds); that every field of
# every config has help is checked in-process (test_config_and_inputs.py).
EXAMPLES = ["mpe/run_qmix.py", "mpe/run_vdn.py", "lbf/run_mappo.py", "gymnasium/run_dqn.py",
            "sisl/run_mad4pg.py", "classic/run_madqn.py"]
HEAVY_MODULES = ("tensorflow", "reverb", "acme", "sonnet")
# Lines TensorFlow, CUDA and Gym print when imported.
NOISE_MARKERS = ("tensorflow/", "cuda", "dso_loader", "Gym has been unmaintained")

def _config_class(example):
    """The config class an example passes to `launch.example_main` (read from its source)."""
    source = open(os.path.join(ROOT, "examples", example)).read()
    arguments = source[source.index("launch.example_main(") + len("launch.example_main("):]
    package, name = arguments.split(",")[1].strip().split(".")
    module = __import__(f"mava_systems.{package}", fromlist=[name])
    return getattr(module, name)


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_lists_every_config_field_in_help_and_refuses_an_unknown_environment(
        example):
    script = os.path.join(ROOT, "examples", example)
    shown = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    help_text = " ".join((shown.stdout + shown.stderr).split())
    for field in dataclasses.fields(_config_class(example)):
        doc_start = " ".join(field.metadata["doc"].split()[:2])
        assert (f"--{field.name}: {doc_start}" in help_text
                or f"--[no]{field.name}: {doc_start}" in help_text), field.name
    assert "--lp_launch_type" in help_text and "--max_" in help_text
    refused = subprocess.run([sys.executable, script, "--env=mpe/not_an_env_v0"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: unknown environment 'mpe/not_an_env_v0'"), refused.stderr


@pytest.mark.parametrize("command, listed", [
    (["examples/mpe/run_qmix.py"], ["--max_executor_steps", "--env", "--mixing_embed_dim"]),
    (["examples/mpe/run_vdn.py"], ["--max_executor_steps", "--env", "--team_reward"]),
    (["examples/lbf/run_mappo.py"], ["--max_executor_steps", "--env", "--critic"]),
    (["-m", "mava_systems.experiment"], ["--max_executor_steps", "--envs", "--systems"])])
def test_help_lists_the_flags_without_library_noise(command, listed):
    result = subprocess.run([sys.executable, *command, "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    output = result.stdout + result.stderr
    assert all(flag in output for flag in listed), output
    noise = [line for line in output.splitlines()
             if any(marker.lower() in line.lower() for marker in NOISE_MARKERS)]
    assert noise == []


def test_experiment_refuses_an_unknown_environment_without_tensorflow():
    probe = ("import sys\nfrom mava_systems.experiment import __main__ as cli\n"
             "try:\n    cli.main(['--systems=qmix', '--envs=mpe/not_an_env_v0', "
             "'--max_executor_steps=10', '--out=unused'])\nexcept SystemExit as stop:\n"
             f"    print(stop.code, sorted(n for n in {HEAVY_MODULES!r} if n in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.stdout.strip() == "2 []", result.stderr
    assert result.stderr.startswith("error: unknown environment 'mpe/not_an_env_v0'")


def test_experiment_keeps_library_noise_off_the_terminal(tmp_path):
    """An unknown system makes the command import every system (and TensorFlow) first."""
    result = subprocess.run([sys.executable, "-m", "mava_systems.experiment", "--systems=nope",
                             "--envs=debug/line_world_v0", "--max_executor_steps=10",
                             f"--out={tmp_path / 'grid'}"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: unknown system 'nope'; available: " + result.stderr.split("available: ")[1]
        .splitlines()[0]]
