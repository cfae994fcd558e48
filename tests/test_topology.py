"""The Launchpad program MADQN builds: groups, node types and who reads variables from whom.

VDN, QMIX, MAPPO and IPPO, MADQN's subclasses, must build the very same program.

Launchpad's `program.add_node` returns `node.create_handle()`, a new handle object
each time that wraps the node's own `Address` object, so a handle found in another
node's constructor arguments (`PyClassNode._args`) is matched to its node by
`handle._address is node._address`.
"""

import os

import cloudpickle
import launchpad as lp
from launchpad.nodes.courier.node import CourierHandle
from launchpad.nodes.reverb.node import ReverbHandle
import pytest

from mava_systems import maddpg, madqn, mappo, masac, matd3, qmix, vdn
from mava_systems.nodes.cacher import CacherNode, VariableCache
import wrappers

CASES = [  # (num_executors, num_caches, max_executor_steps)
    (1, 0, None),
    (3, 0, 1000),
    (4, 2, None),
    (5, 3, 500),
    (2, 4, 1),  # More caches than executors: every cache still exists, only some are read.
]


def node_of(handle, nodes):
    """The one node among `nodes` that `handle` refers to."""
    found = [node for node in nodes if handle._address is node._address]
    assert len(found) == 1, (handle, found)
    return found[0]


SYSTEM_CLASSES = [madqn.MADQN, vdn.VDN, qmix.QMIX, mappo.MAPPO, mappo.IPPO]


def make_system(system_class, factory, case, run_dir):
    """A system of `system_class` with the case's counts."""
    return system_class(factory, num_executors=case[0], num_caches=case[1],
                        max_executor_steps=case[2], run_dir=run_dir)


@pytest.fixture(scope="module")
def systems(line_world_factory, tmp_path_factory):
    """One MADQN system per case (built once: constructing one builds its networks)."""
    return {case: make_system(madqn.MADQN, line_world_factory, case,
                              str(tmp_path_factory.mktemp("topology") / "run"))
            for case in CASES}


# MADQN's subclasses on every case whose counts differ in kind (caches, coordinator).
SUBCLASS_CASES = [(system_class, case) for system_class in SYSTEM_CLASSES[1:]
                  for case in (CASES[1], CASES[3])]


@pytest.mark.parametrize("case", CASES, ids=[f"e{e}-c{c}-s{s}" for e, c, s in CASES])
def test_program_topology(systems, case):
    check_program_topology(systems[case], case)


@pytest.mark.parametrize("system_class,case", SUBCLASS_CASES,
                         ids=[f"{cls.system_name}-e{e}-c{c}-s{s}"
                              for cls, (e, c, s) in SUBCLASS_CASES])
def test_subclass_programs_have_madqns_topology(line_world_factory, tmp_path, system_class, case):
    check_program_topology(make_system(system_class, line_world_factory, case,
                                       str(tmp_path / "run")), case)


CONTINUOUS_CASES = [(system_class, case) for system_class in (maddpg.MADDPG, maddpg.MAD4PG, matd3.MATD3,
                                                              masac.MASAC, masac.ISAC)
                    for case in (CASES[1], CASES[3])]


@pytest.mark.parametrize("system_class,case", CONTINUOUS_CASES,
                         ids=[f"{cls.system_name}-e{e}-c{c}-s{s}"
                              for cls, (e, c, s) in CONTINUOUS_CASES])
def test_continuous_action_programs_have_madqns_topology(tmp_path, system_class, case):
    config = system_class.config_class(policy_hidden_sizes=(8,), critic_hidden_sizes=(8,))
    system = system_class(wrappers.make_environment_factory("debug/reach_v0"),
                          num_executors=case[0], num_caches=case[1], max_executor_steps=case[2],
                          config=config, run_dir=str(tmp_path / "run"))
    check_program_topology(system, case)


def check_program_topology(system, case):
    """`system`'s program is the seed's MADQN program for the counts of `case`."""
    num_executors, num_caches, max_executor_steps = case
    program = system.build()
    assert isinstance(program, lp.Program)
    assert program.name == system.system_name
    groups = program.groups

    # Groups, in the seed's order.
    expected_groups = ["replay", "counter"]
    if max_executor_steps:
        expected_groups.append("coordinator")
    expected_groups += ["trainer", "evaluator"]
    if num_caches:
        expected_groups.append("cacher")
    expected_groups.append("executor")
    assert list(groups) == expected_groups

    # Node counts.
    expected_counts = {"replay": 1, "counter": 1, "coordinator": 1, "trainer": 1, "evaluator": 1,
                       "cacher": num_caches, "executor": num_executors}
    for group, nodes in groups.items():
        assert len(nodes) == expected_counts[group], group
    assert len(program.get_all_nodes()) == sum(expected_counts[g] for g in groups)

    # Node types.
    (replay,) = groups["replay"]
    assert isinstance(replay, lp.ReverbNode)  # Its handle dereferences to a reverb.Client.
    assert replay._priority_tables_fn == system.replay
    for group in ("counter", "coordinator", "trainer", "evaluator", "executor"):
        for node in groups.get(group, []):
            assert type(node) is lp.CourierNode, (group, type(node))
    for node in groups.get("cacher", []):
        assert isinstance(node, CacherNode) and isinstance(node, lp.CourierNode)
        assert node._constructor is VariableCache

    (counter,) = groups["counter"]
    (trainer,) = groups["trainer"]
    (evaluator,) = groups["evaluator"]

    # Every node's constructor is the system's method of the same name.
    assert counter._constructor == system.counter and counter._args == ()
    assert trainer._constructor == system.trainer
    assert evaluator._constructor == system.evaluator

    # Coordinator: watches the counter; at the limit stops the trainer's steps, then has the
    # evaluator play a final round.
    if max_executor_steps:
        (coordinator,) = groups["coordinator"]
        assert coordinator._constructor == system.coordinator
        counter_handle, evaluator_handle, trainer_handle = coordinator._args
        assert isinstance(counter_handle, CourierHandle)
        assert node_of(counter_handle, program.get_all_nodes()) is counter
        assert node_of(evaluator_handle, program.get_all_nodes()) is evaluator
        assert node_of(trainer_handle, program.get_all_nodes()) is trainer
        assert system.coordinator(None)._max_steps == max_executor_steps

    # Trainer: reads replay, writes the counter.
    replay_handle, counter_handle = trainer._args
    assert isinstance(replay_handle, ReverbHandle)
    assert replay_handle._address is replay._address
    assert node_of(counter_handle, program.get_all_nodes()) is counter
    assert trainer._kwargs == {}

    # Evaluator: reads variables straight from the trainer (never from a cache).
    source_handle, counter_handle = evaluator._args
    assert node_of(source_handle, program.get_all_nodes()) is trainer
    assert node_of(counter_handle, program.get_all_nodes()) is counter

    # Cachers: each in front of the trainer, refreshing every 2 s, stale after 4 s.
    cachers = groups.get("cacher", [])
    for cacher in cachers:
        (source_handle,) = cacher._args
        assert isinstance(source_handle, CourierHandle)
        assert node_of(source_handle, program.get_all_nodes()) is trainer
        assert cacher._kwargs == {"refresh_interval_ms": 2000, "stale_after_ms": 4000}
    assert len({id(c._address) for c in cachers}) == num_caches  # Distinct nodes.

    # Executors: (executor_id, replay, variable source, counter), source round-robin over caches.
    executors = groups["executor"]
    for i, executor in enumerate(executors):
        assert executor._constructor == system.executor
        executor_id, replay_handle, source_handle, counter_handle = executor._args
        assert executor._kwargs == {}
        assert executor_id == i
        assert isinstance(replay_handle, ReverbHandle) and replay_handle._address is replay._address
        expected_source = cachers[i % num_caches] if num_caches else trainer
        assert node_of(source_handle, program.get_all_nodes()) is expected_source
        assert node_of(counter_handle, program.get_all_nodes()) is counter

    # Every cache that can be read is read by its share of the executors.
    if num_caches:
        readers = {id(c._address): 0 for c in cachers}
        for executor in executors:
            readers[id(executor._args[2]._address)] += 1
        for j, cacher in enumerate(cachers):
            expected = len(range(j, num_executors, num_caches))
            assert readers[id(cacher._address)] == expected

    # Input handles: Launchpad must know every dependency (it connects them at launch).
    for executor in executors:
        assert len(executor.input_handles) == 3


def test_build_twice_gives_independent_programs(systems):
    system = systems[(4, 2, None)]
    first, second = system.build(), system.build()
    assert list(first.groups) == list(second.groups)
    first_addresses = {id(node._address) for node in first.get_all_nodes()}
    assert not first_addresses & {id(node._address) for node in second.get_all_nodes()}
    assert system.build(name="other").name == "other"


def test_node_constructors_and_arguments_are_picklable(systems):
    """test_mt/local_mp pickle every node's constructor and arguments (cloudpickle)."""
    program = systems[(4, 2, None)].build()
    for label, nodes in program.groups.items():
        for node in nodes:
            if isinstance(node, lp.ReverbNode):
                payload = node._priority_tables_fn
            else:
                payload = (node._constructor, node._args, node._kwargs)
            cloudpickle.loads(cloudpickle.dumps(payload))


def test_run_dir_is_absolute_and_not_created_by_build(tmp_run_dir, line_world_factory):
    system = madqn.MADQN(line_world_factory, run_dir=tmp_run_dir)
    assert os.path.isabs(system.run_dir)
    system.build()
    assert not os.path.exists(tmp_run_dir)
