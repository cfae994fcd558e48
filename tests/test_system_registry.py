"""The system registry: systems register by being defined; tools find them by name or recorded class."""

import json
import os
import subprocess
import sys

import pytest

from mava_systems import evaluate, madqn, registry
from mava_systems.system import DistributedSystem


def test_builtin_systems_are_registered_by_name():
    assert {"madqn", "dqn", "r2d2", "impala", "dmpo"} <= set(registry.system_names())
    assert registry.system_class("madqn") is madqn.MADQN
    assert registry.system_class("madqn").config_class is madqn.MADQNConfig
    for name in registry.system_names():
        assert registry.system_class(name).system_name == name


def test_unknown_system_names_the_available_ones():
    with pytest.raises(ValueError, match=r"unknown system 'qmax'; available: .*madqn"):
        registry.system_class("qmax")


def test_a_subclass_with_its_own_name_registers_and_one_without_does_not():
    class KeepsItsName(madqn.MADQN):
        pass

    class HasItsOwnName(madqn.MADQN):
        system_name = "test_registry_own_name"

    assert registry.system_class("madqn") is madqn.MADQN
    assert registry.system_class("test_registry_own_name") is HasItsOwnName
    assert KeepsItsName.system_name == "madqn"


def test_a_name_taken_by_another_class_is_refused():
    with pytest.raises(ValueError, match="system name 'madqn' is taken by mava_systems.madqn"):
        class Impostor(DistributedSystem):  # pylint: disable=unused-variable
            system_name = "madqn"
    assert registry.system_class("madqn") is madqn.MADQN


def test_class_paths_round_trip():
    path = registry.class_path(madqn.MADQN)
    assert path == "mava_systems.madqn.system:MADQN"
    assert registry.import_class(path) is madqn.MADQN
    with pytest.raises(ImportError):
        registry.import_class("mava_systems.madqn.system:NoSuchSystem")


def test_evaluate_finds_the_recorded_class_else_the_name():
    by_class = {"system": "madqn", "system_class": "mava_systems.dqn.system:DQN"}
    assert evaluate.recorded_system_class(by_class, "run.json").system_name == "dqn"
    script_subclass = {"system": "madqn", "system_class": "__main__:LogCoshMADQN"}
    assert evaluate.recorded_system_class(script_subclass, "run.json") is madqn.MADQN
    with pytest.raises(ValueError, match="run.json: unknown system 'vdn0'; available:"):
        evaluate.recorded_system_class({"system": "vdn0"}, "run.json")


SCRIPT = '''
import sys
from mava_systems import vdn
import wrappers


class ScriptVDN(vdn.VDN):
    """A VDN defined in the launching script, under its own name."""
    system_name = "test_registry_script_vdn"


def main():
    system = ScriptVDN(wrappers.make_environment_factory("debug/line_world_v0"),
                       run_dir=sys.argv[1])
    system.prepare_run_dir()
    print("prepared")

{launch}
'''


def run_script(tmp_path, launch):
    script = tmp_path / "my_system.py"
    script.write_text(SCRIPT.format(launch=launch))
    run_dir = str(tmp_path / "run")
    result = subprocess.run([sys.executable, str(script), run_dir], capture_output=True,
                            text=True, timeout=300, cwd=str(tmp_path),
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return result, str(script), run_dir


def test_a_class_defined_in_the_launching_script_is_reloaded_from_the_script(tmp_path):
    result, script, run_dir = run_script(tmp_path, 'if __name__ == "__main__":\n    main()')
    assert result.returncode == 0, result.stderr[-3000:]
    with open(f"{run_dir}/run.json") as run_file:
        description = json.load(run_file)
    assert description["system_class"] == "__main__:ScriptVDN"
    assert description["system_script"] == script
    system = evaluate.load_system(run_dir)
    assert type(system).__name__ == "ScriptVDN"
    assert type(system).__module__.startswith(registry.SCRIPT_MODULE_PREFIX + "my_system_")
    assert registry.system_class("test_registry_script_vdn") is type(system)

    (tmp_path / "my_system.py").unlink()
    with pytest.raises(ValueError, match=r"run.json: cannot load the system class ScriptVDN "
                                         r"from .*my_system.py: .* is gone"):
        evaluate.recorded_system_class(description, "run.json")


def test_a_script_that_launches_on_import_is_refused_at_launch(tmp_path):
    result, _, run_dir = run_script(tmp_path, "main()")
    assert result.returncode != 0
    assert ("ScriptVDN ('test_registry_script_vdn') is defined in" in result.stderr
            and "launches on import" in result.stderr
            and "move it into a module" in result.stderr), result.stderr[-3000:]
    assert not os.path.exists(run_dir)


def test_a_named_class_defined_in_a_function_is_refused_at_construction(line_world_factory,
                                                                         tmp_path):
    class LocalVDN(madqn.MADQN):
        system_name = "test_registry_local"

    with pytest.raises(ValueError, match=r"LocalVDN \('test_registry_local'\) is defined inside "
                                         r"a function, .*move it into a module"):
        LocalVDN(line_world_factory, run_dir=str(tmp_path / "run"))

    class KeepsTheName(madqn.MADQN):  # Rebuilt as MADQN by evaluate: accepted.
        pass

    KeepsTheName(line_world_factory, run_dir=str(tmp_path / "run2"))


EXAMPLE_STYLE_SCRIPT = '''
from mava_systems import vdn
from mava_systems.launching import launch


class ExampleVDN(vdn.VDN):
    system_name = "test_registry_example_vdn"


main = launch.example_main(ExampleVDN, vdn.VDNConfig, default_env="debug/line_world_v0")

if __name__ == "__main__":
    from absl import app
    app.run(main)
'''

EVALUATE_LOADS = '''
import sys
from absl import flags
from mava_systems import evaluate
evaluate.define_flags()
flags.FLAGS(["evaluate", "--run_dir=" + sys.argv[1], "--seed=7"])
system = evaluate.load_system(sys.argv[1])
print(type(system).__name__, type(system).__module__, flags.FLAGS.run_dir == sys.argv[1],
      flags.FLAGS.seed, "env" in flags.FLAGS)
'''


def test_evaluate_loads_a_script_that_defines_the_example_flags_on_import(tmp_path):
    """A script written like the examples (flags defined at import) is loaded by evaluate,
    whose own flags of the same names (`--run_dir`, `--seed`) keep their values."""
    script = tmp_path / "example_style.py"
    script.write_text(EXAMPLE_STYLE_SCRIPT)
    run_dir = str(tmp_path / "run")
    prepare = ("import sys, wrappers, example_style as m; "
               "m.ExampleVDN.__module__ = '__main__'; "  # As when the script launches.
               "sys.modules['__main__'].__file__ = sys.argv[1]; "
               "m.ExampleVDN(wrappers.make_environment_factory('debug/line_world_v0'), "
               "run_dir=sys.argv[2]).prepare_run_dir()")
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                       PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-c", prepare, str(script), run_dir], check=True,
                   cwd=str(tmp_path), env=environment, capture_output=True, timeout=300)
    with open(os.path.join(run_dir, "run.json")) as run_file:
        assert json.load(run_file)["system_script"] == str(script)
    result = subprocess.run([sys.executable, "-c", EVALUATE_LOADS, run_dir], cwd=str(tmp_path),
                            env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    name, module, *values = result.stdout.split()
    assert name == "ExampleVDN"
    assert module.startswith(registry.SCRIPT_MODULE_PREFIX + "example_style_")
    assert values == ["True", "7", "False"]  # evaluate's flags kept; the script's dropped.
