"""The system registry: systems register by being defined; tools find them by name or recorded class."""

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
