"""One extension route for every system: a builder subclass's `trainer_class` and
`executor_class` are the classes the system's nodes construct."""

from acme.utils import counting, loggers
import pytest

from mava_systems import registry
from mava_systems.acting.exploration import ConstantEpsilon
import wrappers

# A small environment each built-in system can act in.
ENVIRONMENTS = {"maddpg": "debug/reach_v0", "mad4pg": "debug/reach_v0", "matd3": "debug/reach_v0",
                "masac": "debug/reach_v0", "isac": "debug/reach_v0",
                "dqn": "gymnasium/CartPole-v1", "r2d2": "gymnasium/CartPole-v1",
                "impala": "gymnasium/CartPole-v1", "dmpo": "gymnasium/Pendulum-v1"}
BUILTIN = [name for name in registry.system_names()
           if registry.system_class(name).__module__.startswith("mava_systems.")]


def subclass_system(system_class):
    """A subclass of `system_class` whose builder uses subclasses of its trainer and executor."""
    builder_class = system_class.builder_class
    trainer_class = type("MyTrainer", (builder_class.trainer_class,), {})
    executor_class = type("MyExecutor", (builder_class.executor_class,), {})
    builder = type("MyBuilder", (builder_class,),
                   {"trainer_class": trainer_class, "executor_class": executor_class})
    return type("MySystem", (system_class,), {"builder_class": builder})


def test_every_builtin_system_is_covered():
    assert {"madqn", "vdn", "qmix", "mappo", "ippo", "happo", "maddpg", "mad4pg", "matd3", "masac", "isac",
            "dqn", "r2d2", "impala", "dmpo"} <= set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_a_builder_subclass_chooses_the_trainer_and_the_executors(name, tmp_path):
    system_class = subclass_system(registry.system_class(name))
    factory = wrappers.make_environment_factory(ENVIRONMENTS.get(name, "debug/line_world_v0"))
    system = system_class(factory, run_dir=str(tmp_path / "run"))
    builder = system.builder
    trainer = builder.make_trainer(builder.make_networks(), iter(()), counter=counting.Counter(),
                                   logger=loggers.NoOpLogger(), checkpoint=False)
    assert type(trainer) is builder.trainer_class
    assert type(trainer).__name__ == "MyTrainer"

    greedy, _ = system.greedy_executor(trainer, seed=0)
    assert type(greedy) is builder.executor_class
    assert type(greedy).__name__ == "MyExecutor"
    if hasattr(system, "exploration_schedules"):
        acting = builder.make_executor(builder.make_networks(), ConstantEpsilon(0.1))
    else:
        acting = builder.make_executor(builder.make_networks())
    assert type(acting) is builder.executor_class


@pytest.mark.parametrize("name", ["madqn", "qmix", "mappo"])
@pytest.mark.parametrize("attribute", ["trainer_class", "executor_class"])
def test_a_recurrent_builder_that_sets_a_class_without_its_recurrent_twin_is_refused(
        name, attribute, tmp_path):
    """With recurrent=True the builder constructs `recurrent_<attribute>`: a subclass that set
    only `<attribute>` would silently lose its class, so the builder refuses, naming the twin."""
    system_class = registry.system_class(name)
    builder_class = system_class.builder_class
    mine = type("Mine", (getattr(builder_class, attribute),), {})
    builder = type("MyBuilder", (builder_class,), {attribute: mine})
    my_system = type("MySystem", (system_class,), {"builder_class": builder})
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    with pytest.raises(ValueError, match=f"MyBuilder sets {attribute} = Mine but not recurrent_{attribute}"):
        my_system(factory, config=system_class.config_class(recurrent=True),
                  run_dir=str(tmp_path / "recurrent"))
    # Feed-forward, the subclass's class is the one used.
    system = my_system(factory, run_dir=str(tmp_path / "feedforward"))
    assert getattr(system.builder, f"{attribute}_to_use")() is mine
    # Setting the twin too is accepted.
    twin = type("MyRecurrent", (getattr(builder_class, f"recurrent_{attribute}"),), {})
    both = type("BothBuilder", (builder,), {f"recurrent_{attribute}": twin})
    recurrent = type("BothSystem", (system_class,), {"builder_class": both})(
        factory, config=system_class.config_class(recurrent=True),
        run_dir=str(tmp_path / "both"))
    assert getattr(recurrent.builder, f"{attribute}_to_use")() is twin
