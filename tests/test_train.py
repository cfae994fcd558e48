"""One entry point, one set of defaults (issue 44): `python -m mava_systems.train` and the
examples take their defaults from the system's config and `mava_systems.family_settings`, say
where each came from, and refuse an unknown system or environment before TensorFlow loads."""

import dataclasses
import json
import os
import subprocess
import sys
import types

import pytest

from mava_systems import family_settings, registry
from mava_systems.terminal import run_summary
from mava_systems.acting import exploration

from program_helpers import ROOT

HEAVY_MODULES = ("tensorflow", "reverb", "acme", "sonnet")


def test_every_family_setting_names_a_registered_system_and_fields_its_config_has():
    for (family, system), settings in family_settings.SETTINGS.items():
        assert settings.family == family and settings.system == system
        systems = (registry.system_names() if system == family_settings.ANY_SYSTEM else [system])
        for name in systems:
            config_class = registry.system_class(name).config_class
            fields = {field.name for field in dataclasses.fields(config_class)}
            applied = family_settings.settings_for(f"{family}/any", name, sorted(fields))
            assert set(applied.config) <= fields, (family, name)
            config_class(**applied.config)  # Values in range.
            if applied.exploration:
                assert registry.system_class(name).explores_by_schedule
                assert exploration.parse_schedule(applied.exploration) is not None


@pytest.mark.parametrize("env, system, config, schedule, env_kwargs", [
    # What the examples set before their settings moved into family_settings.
    ("lbf/Foraging-8x8-2p-2f-coop-v3", "madqn", {"agent_ids": True}, "linear:1,0.05,200000", {}),
    ("lbf/Foraging-8x8-2p-2f-coop-v3", "qmix", {"agent_ids": True}, "linear:1,0.05,200000", {}),
    ("lbf/Foraging-8x8-2p-2f-coop-v3", "vdn", {"agent_ids": True, "learning_rate": 3e-4},
     "linear:1,0.05,200000", {}),
    ("lbf/Foraging-8x8-2p-2f-coop-v3", "mappo", {}, "", {}),
    ("rware/rware-tiny-2ag-v2", "qmix", {"agent_ids": True}, "", {}),
    ("mpe/simple_spread_v3", "madqn", {"discount": 0.9, "agent_ids": True}, "", {}),
    ("mpe/simple_spread_v3", "vdn", {"discount": 0.9, "agent_ids": True}, "", {}),
    ("mpe/simple_spread_v3", "qmix", {"discount": 0.9, "agent_ids": True,
                                      "normalise_mixer_states": True, "learning_rate": 5e-4,
                                      "target_update_period": 200, "n_step": 3}, "", {}),
    ("mpe/simple_spread_v3", "maddpg", {"discount": 0.9}, "", {"continuous_actions": True}),
    ("mpe/simple_spread_v3", "mappo", {}, "", {}),
    ("mamujoco/HalfCheetah-2x3", "matd3", {"shared_weights": False, "agent_ids": False}, "", {}),
    ("sisl/multiwalker_v9", "maddpg", {}, "", {}),
    ("debug/line_world_v0", "qmix", {}, "", {}),
])
def test_a_family_sets_what_its_examples_set(env, system, config, schedule, env_kwargs):
    settings = family_settings.settings_for(env, system)
    assert (dict(settings.config), settings.exploration, dict(settings.env_kwargs)) == (
        config, schedule, env_kwargs)


def test_a_family_wide_setting_keeps_only_the_fields_a_config_has():
    settings = family_settings.settings_for("mamujoco/Ant-4x2", "some_system", ["agent_ids"])
    assert dict(settings.config) == {"agent_ids": False}
    assert settings.source == "family setting (mamujoco, every system)"


def test_the_sources_line_names_each_source_with_its_values():
    line = family_settings.describe_sources("QMIXConfig", {
        "program default": {"trainer_steps_per_call": 4}, "family setting (mpe, qmix)": {},
        "command line": {"n_step": 5, "exploration": "constant:0.1"}})
    assert line == ("Settings: QMIXConfig's defaults, except program default: "
                    "trainer_steps_per_call=4; command line: n_step=5, exploration=constant:0.1")
    assert family_settings.describe_sources("DQNConfig", {"command line": {}}) == (
        "Settings: DQNConfig's defaults")


def test_a_schedule_that_outlasts_the_step_limit_is_noted():
    schedule = exploration.parse_schedule("linear:1,0.05,200000")
    note = exploration.unfinished_schedule_note(schedule, 40_000, 2)
    assert note == ("Exploration: the schedule anneals over each executor's first 200000 steps, "
                    "but the run stops at 40000 executor steps (about 20000 per executor): it "
                    "ends at 0.905, not 0.05.")
    assert exploration.unfinished_schedule_note(schedule, 400_000, 2) is None
    assert exploration.unfinished_schedule_note(schedule, None, 1) is None  # No limit.
    assert exploration.unfinished_schedule_note(
        exploration.parse_schedule("constant:0.1"), 10, 1) is None


def test_the_builtin_names_read_from_source_are_the_registered_ones():
    # Other tests in this process may have registered systems of their own: not built in.
    builtin = [name for name in registry.system_names()
               if registry.system_class(name).__module__.startswith("mava_systems.")]
    assert registry.builtin_system_names() == builtin
    assert "madqn" in builtin and "happo" in builtin


def test_what_train_reads_of_a_builtin_system_s_source_is_what_its_class_says():
    """`train` defines a built-in system's flags from its source (config class, acting group,
    default caches) before importing it: the same as the imported class's."""
    from mava_systems.experiment import systems  # pylint: disable=import-outside-toplevel

    paths = registry.builtin_system_paths()
    for name, path in paths.items():
        system_class = registry.system_class(name)
        assert path == registry.class_path(system_class)
        config_class = system_class.config_class
        assert (registry.declared_class(path, "config_class")
                == f"{config_class.__module__}:{config_class.__qualname__}")
        assert (registry.declared_attribute(path, "executors_group", "executor")
                == systems.acting_node_name(system_class))
        caches = registry.declared_parameter_default(path, "num_caches")
        assert ((None if caches is registry.NO_PARAMETER else caches)
                == systems.default_num_caches(system_class)), name
    # Both kinds occur: systems with cache flags (0 or 1) and systems that fix their own.
    assert {systems.default_num_caches(registry.system_class(name)) for name in paths} >= {
        None, 0, 1}


def test_train_refuses_an_unknown_system_or_environment_without_tensorflow():
    probe = ("import sys\nfrom mava_systems import train\n"
             "for argv in ({!r}, {!r}, {!r}):\n"
             "    try:\n        train.main(argv)\n    except SystemExit as stop:\n"
             "        print(stop.code)\n"
             f"print(sorted(n for n in {HEAVY_MODULES!r} if n in sys.modules))").format(
                 ["train", "--system=nope", "--env=debug/line_world_v0"],
                 ["train", "--system=qmix", "--env=mpe/not_an_env_v0"],
                 ["train", "--help"])
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1", "1"] and lines[-1] == "[]", result.stdout + result.stderr
    assert "systems: dmpo, dqn," in result.stdout  # --help without --system lists them.
    errors = result.stderr.splitlines()
    assert errors[0].startswith("error: unknown system 'nope'; registered: dmpo, dqn, ")
    assert errors[1].startswith("error: unknown environment 'mpe/not_an_env_v0'")


def test_a_resume_command_names_a_module_run_with_dash_m(monkeypatch):
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="mava_systems.train",
                                          origin="/somewhere/mava_systems/train.py")
    monkeypatch.setitem(sys.modules, "__main__", main)
    command = run_summary.resume_command(
        ["/somewhere/mava_systems/train.py", "--system=qmix", "--run_dir=old"], "/tmp/run",
        "max_executor_steps", 800)
    assert command.split()[1:] == ["-m", "mava_systems.train", "--system=qmix",
                                   "--run_dir=/tmp/run", "--max_executor_steps=800"]
    assert run_summary.program_words("/elsewhere/run_qmix.py") == ["/elsewhere/run_qmix.py"]


@pytest.mark.parametrize("limit, steps, ending", [
    (500, 500, "Finished."), (500, 620, "Finished."),
    (500, 499, "Stopped before the step limit (Ctrl-C or a stop signal)."),
    (None, 9000, "Stopped before the step limit (Ctrl-C or a stop signal).")])  # No limit.
def test_a_run_short_of_its_limit_says_stopped_with_its_resume_command(tmp_path, limit, steps,
                                                                      ending):
    from mava_systems.madqn import MADQNConfig  # pylint: disable=import-outside-toplevel
    system = types.SimpleNamespace(run_dir=str(tmp_path), config=MADQNConfig(),
                                   max_executor_steps=limit)
    summary = run_summary.format_summary(system, 0, steps, 10.0, ["run_madqn.py"], None, None,
                                         [])
    assert summary.startswith(f"{ending} {steps:,} executor steps")
    assert "Resume:    " in summary
    assert run_summary.reached_limit(system, steps) == (ending == "Finished.")


def test_train_runs_a_system_with_its_familys_settings_and_says_where_each_came_from(tmp_path):
    run_dir = str(tmp_path / "run")
    command = [sys.executable, "-m", "mava_systems.train", "--system=qmix",
               "--env=lbf/Foraging-8x8-2p-2f-coop-v3", "--lp_launch_type=local_mt",
               f"--run_dir={run_dir}", "--max_executor_steps=60", "--min_replay_size=32",
               "--batch_size=8", "--mixing_embed_dim=8", "--hypernet_hidden_size=16",
               "--evaluation_interval_s=1", "--progress_interval_s=0"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, SDL_VIDEODRIVER="dummy"))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    settings = [line.strip() for line in output.splitlines()
                if line.startswith("  Settings: ")]
    assert settings and settings[0].startswith(
        "Settings: QMIXConfig's defaults, except program default: trainer_steps_per_call=4; "
        "family setting (lbf, qmix): agent_ids=True, exploration=linear:1,0.05,200000; "
        "command line: "), settings
    assert "min_replay_size=32" in settings[0] and "batch_size=8" in settings[0], settings
    assert ("Exploration: the schedule anneals over each executor's first 200000 steps, but the "
            "run stops at 60 executor steps") in output, output[-5000:]
    assert "Finished." in output
    resume = [line for line in output.splitlines() if line.startswith("Resume:")]
    assert resume and " -m mava_systems.train --system=qmix " in resume[0], resume
    with open(os.path.join(run_dir, "config.json")) as config_file:
        assert json.load(config_file)["config"]["agent_ids"] is True
