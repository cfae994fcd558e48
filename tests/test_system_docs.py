"""Every system documents its own constructor, and its configuration header shows only what
applies to it."""

import inspect

import pytest

from mava_systems import registry
from mava_systems.runs.run_directory import format_run_config
import wrappers

BUILTIN = [name for name in registry.system_names()
           if registry.system_class(name).__module__.startswith("mava_systems.")]
# Words another family's constructor text would bring: Q-learning's networks and epsilons,
# and exploration schedules, which policy-sampling systems do not take.
FOREIGN = {"mappo": ("Q-network", "epsilon", "exploration_schedules"),
           "ippo": ("Q-network", "epsilon", "exploration_schedules"),
           "happo": ("Q-network", "epsilon", "exploration_schedules"),
           "impala": ("Q-network", "epsilon", "exploration_schedules"),
           "dmpo": ("Q-network", "epsilon", "exploration_schedules"),
           "maddpg": ("Q-network", "epsilon"),
           "mad4pg": ("Q-network", "epsilon"),
           "matd3": ("Q-network", "epsilon"),
           "masac": ("Q-network", "epsilon"),
           "isac": ("Q-network", "epsilon")}
ENVIRONMENTS = {"maddpg": "debug/reach_v0", "mad4pg": "debug/reach_v0", "matd3": "debug/reach_v0",
                "masac": "debug/reach_v0", "isac": "debug/reach_v0",
                "dqn": "gymnasium/CartPole-v1", "r2d2": "gymnasium/CartPole-v1",
                "impala": "gymnasium/CartPole-v1", "dmpo": "gymnasium/Pendulum-v1"}


@pytest.mark.parametrize("name", BUILTIN)
def test_every_system_documents_its_own_constructor(name):
    system_class = registry.system_class(name)
    assert system_class.__dict__.get("__doc__"), f"{system_class.__name__} has no docstring"
    constructor_doc = inspect.getdoc(system_class.__init__)
    assert constructor_doc and "Args:" in constructor_doc
    for parameter in inspect.signature(system_class).parameters.values():
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            assert f"{parameter.name}:" in constructor_doc, (name, parameter.name)
    for word in FOREIGN.get(name, ()):
        assert word not in constructor_doc, (name, word, constructor_doc)


@pytest.mark.parametrize("name", BUILTIN)
def test_the_configuration_header_shows_exploration_only_where_it_applies(name, tmp_path):
    system_class = registry.system_class(name)
    factory = wrappers.make_environment_factory(ENVIRONMENTS.get(name, "debug/line_world_v0"))
    system = system_class(factory, run_dir=str(tmp_path / "run"))
    header = format_run_config(system.run_config())
    described = system.description()
    explores = name in ("madqn", "vdn", "qmix", "dqn", "maddpg", "mad4pg", "matd3", "masac", "isac",
                          "r2d2")
    assert ("exploration_schedules" in described) == explores, name
    if name == "r2d2":  # Its actors' epsilons are in run.json; its header shows the config.
        return
    assert ("exploration_schedules=" in header) == explores, header
    assert "ConstantEpsilon(0)" not in header or explores
