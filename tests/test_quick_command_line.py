"""A quiet, quick command line (issue 44): `--help` lists every config field with its help,
the examples, `evaluate` and `experiment` answer `--help` and an unknown id before TensorFlow
(or Reverb, Acme) is imported, and no library noise reaches the terminal."""

import dataclasses
import glob
import json
import os
import subprocess
import sys

import pytest

from mava_systems import registry

from program_helpers import ROOT

# One example per kind of system (a second or two each); that every example's system path
# matches its class is checked in-process below, and that every field of every config has help
# in test_config_and_inputs.py.
EXAMPLES = ["mpe/run_qmix.py", "mpe/run_vdn.py", "lbf/run_mappo.py", "gymnasium/run_dqn.py",
            "sisl/run_mad4pg.py", "classic/run_madqn.py"]
ALL_EXAMPLES = sorted(os.path.relpath(path, os.path.join(ROOT, "examples"))
                      for path in glob.glob(os.path.join(ROOT, "examples", "*", "run_*.py")))
HEAVY_MODULES = ("tensorflow", "reverb", "acme", "sonnet")
# Lines TensorFlow, CUDA and Gym print when imported.
NOISE_MARKERS = ("tensorflow/", "cuda", "dso_loader", "Gym has been unmaintained")
# Runs a command's main module as `python` would and writes, when it exits, its exit status and
# the heavy modules it had imported to a file (its terminal output goes to its log).
PROBE = """import json, runpy, sys
out, sys.argv = sys.argv[1], sys.argv[2:]
try:
    if sys.argv[0] == "-m":
        sys.argv = sys.argv[1:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    with open(out, "w") as result:
        json.dump(sorted(name for name in %r if name in sys.modules), result)
""" % (HEAVY_MODULES,)


def _example_arguments(example):
    """The first two arguments an example passes to `launch.example_main` (from its source)."""
    source = open(os.path.join(ROOT, "examples", example)).read()
    arguments = source[source.index("launch.example_main(") + len("launch.example_main("):]
    return [argument.strip() for argument in arguments.split(",")[:2]]


def _config_class(example):
    """The config class an example passes to `launch.example_main` (read from its source)."""
    package, name = _example_arguments(example)[1].split(".")
    module = __import__(f"mava_systems.{package}", fromlist=[name])
    return getattr(module, name)


def _probe(tmp_path, *command):
    """Runs `python *command` through PROBE: its exit code, output and the heavy modules it had
    imported when it exited."""
    out = tmp_path / "imported.json"
    result = subprocess.run([sys.executable, "-c", PROBE, str(out), *command], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    return result, json.loads(out.read_text())


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_lists_every_config_field_in_help_and_refuses_an_unknown_environment(
        example, tmp_path):
    script = os.path.join(ROOT, "examples", example)
    shown, imported = _probe(tmp_path, script, "--help")
    assert imported == [], f"--help imported {imported}"
    help_text = " ".join((shown.stdout + shown.stderr).split())
    for field in dataclasses.fields(_config_class(example)):
        doc_start = " ".join(field.metadata["doc"].split()[:2])
        assert (f"--{field.name}: {doc_start}" in help_text
                or f"--[no]{field.name}: {doc_start}" in help_text), field.name
    assert "--lp_launch_type" in help_text and "--max_" in help_text
    refused, imported = _probe(tmp_path, script, "--env=mpe/not_an_env_v0")
    assert imported == [], f"the refusal imported {imported}"
    assert refused.returncode == 1 and refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: unknown environment 'mpe/not_an_env_v0'"), refused.stderr


def test_every_example_names_its_system_by_a_path_whose_source_says_what_the_class_is():
    """What `example_main` reads from a system's source without importing it (its name, whether
    it explores by schedule) is what the imported class says, for every example."""
    for example in ALL_EXAMPLES:
        path = _example_arguments(example)[0].strip("\"'")
        system_class = registry.import_class(path)
        assert registry.declared_attribute(path, "system_name") == system_class.system_name
        assert (registry.declared_attribute(path, "explores_by_schedule", False)
                == getattr(system_class, "explores_by_schedule", False)), example


def test_evaluate_answers_help_and_a_missing_run_directory_without_tensorflow(tmp_path):
    shown, imported = _probe(tmp_path, "-m", "mava_systems.evaluate", "--help")
    assert imported == [] and "--run_dir: The run directory to evaluate." in (shown.stdout
                                                                              + shown.stderr)
    refused, imported = _probe(tmp_path, "-m", "mava_systems.evaluate",
                               f"--run_dir={tmp_path / 'missing'}")
    assert imported == []
    assert refused.returncode == 1 and refused.stderr == f"error: no run directory " \
        f"{tmp_path / 'missing'}\n"


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
