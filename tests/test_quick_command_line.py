"""A quiet, quick command line (issue 44): `--help` lists every config field with its help, and
`--help`, bad flags and an unknown environment id are answered before TensorFlow (or Reverb,
Acme) is imported, with no library noise on the terminal."""

import ast
import dataclasses
import glob
import json
import os
import subprocess
import sys

import pytest

from program_helpers import ROOT

EXAMPLES = sorted(os.path.relpath(path, os.path.join(ROOT, "examples"))
                  for path in glob.glob(os.path.join(ROOT, "examples", "*", "run_*.py")))
HEAVY_MODULES = ("tensorflow", "reverb", "acme", "sonnet")
# Lines TensorFlow, CUDA and Gym print when imported.
NOISE_MARKERS = ("tensorflow/", "cuda", "dso_loader", "Gym has been unmaintained")

# Loads an example as its command line would (its folder on the path, its flags defined), parses
# a command line naming an unknown environment, runs its main and reports what was imported.
_PROBE = """
import io, json, os, runpy, sys
from absl import flags
path = sys.argv[1]
sys.argv = [path, "--env=mpe/not_an_env_v0", "--verbose"]
sys.path.insert(0, os.path.dirname(path))
main = runpy.run_path(path, run_name="example")["main"]
flags.FLAGS(sys.argv)
heavy = {heavy}
imported_by_parsing = sorted(name for name in heavy if name in sys.modules)
help_text = flags.FLAGS.main_module_help()
errors = io.StringIO()
sys.stderr = errors
try:
    main([path])
    code = 0
except SystemExit as stop:
    code = stop.code
sys.stderr = sys.__stderr__
print(json.dumps({{"parsing": imported_by_parsing, "refusal": errors.getvalue(), "code": code,
                  "after_refusal": sorted(name for name in heavy if name in sys.modules),
                  "help": help_text}}))
""".format(heavy=repr(HEAVY_MODULES))


def _config_class(example):
    """The config class an example passes to `launch.example_main` (read from its source)."""
    source = open(os.path.join(ROOT, "examples", example)).read()
    call = source[source.index("launch.example_main("):]
    package, name = call.split("),", 1)[1].split(",", 1)[0].strip().split(".")
    module = __import__(f"mava_systems.{package}", fromlist=[name])
    return getattr(module, name)


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_parses_and_refuses_an_unknown_environment_without_tensorflow(example):
    result = subprocess.run([sys.executable, "-c", _PROBE,
                             os.path.join(ROOT, "examples", example)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["parsing"] == [], "imported before the flags were parsed"
    assert probe["code"] == 1
    assert probe["refusal"].startswith("error: unknown environment 'mpe/not_an_env_v0'")
    assert probe["after_refusal"] == [], "imported before the environment id was checked"
    # `--help` (the main module's flags) lists every config field with its own help text.
    for field in dataclasses.fields(_config_class(example)):
        doc_start = " ".join(field.metadata["doc"].split()[:2])
        assert f"--{field.name}: {doc_start}" in " ".join(probe["help"].split()).replace(
            f"--[no]{field.name}:", f"--{field.name}:"), field.name
    assert "--lp_launch_type" in probe["help"] and "--max_" in probe["help"]


@pytest.mark.parametrize("command, listed", [
    (["examples/mpe/run_qmix.py"], ["--max_executor_steps", "--env", "--mixing_embed_dim"]),
    (["examples/mpe/run_vdn.py"], ["--max_executor_steps", "--env", "--team_reward"]),
    (["examples/lbf/run_mappo.py"], ["--max_executor_steps", "--env", "--critic"]),
    (["-m", "mava_systems.experiment"], ["--max_executor_steps", "--envs", "--systems"]),
    (["-m", "mava_systems.evaluate"], ["--run_dir", "--episodes", "--record"])])
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


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_s_system_path_names_its_system_and_how_it_explores(example):
    """`SystemPath.load` imports the class and checks `explores_by_schedule` against it."""
    from mava_systems import launch  # pylint: disable=import-outside-toplevel
    tree = ast.parse(open(os.path.join(ROOT, "examples", example)).read())
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
               and getattr(node.func, "attr", None) == "SystemPath"]
    system_path = launch.SystemPath(*[ast.literal_eval(argument) for argument in call.args],
                                    **{keyword.arg: ast.literal_eval(keyword.value)
                                       for keyword in call.keywords})
    system_class = system_path.load()
    assert system_class.config_class is _config_class(example)


def test_a_system_path_that_misstates_exploration_is_refused():
    from mava_systems import launch  # pylint: disable=import-outside-toplevel
    with pytest.raises(TypeError, match="explores_by_schedule is not False"):
        launch.SystemPath("mava_systems.qmix.QMIX").load()


def test_evaluate_parses_and_refuses_a_missing_run_dir_without_tensorflow():
    # (It imports acme.utils' counting and loggers, which do not import TensorFlow.)
    probe = ("import sys\nfrom absl import flags\nfrom mava_systems import evaluate\n"
             "evaluate.define_flags()\nflags.FLAGS(['evaluate'])\n"
             "try:\n    evaluate.main(['evaluate'])\nexcept SystemExit as stop:\n"
             "    print(stop.code, sorted(n for n in ('tensorflow', 'reverb', 'sonnet') "
             "if n in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.stdout.strip() == "1 []", result.stderr
    assert result.stderr.startswith("error: --run_dir is required")
