"""DQN: the seed's topology, its epsilons, its config defaults and its input checks."""

import launchpad as lp
import numpy as np
import pytest
import tensorflow as tf

from mava_systems import dqn
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.madqn.networks import variables_as_numpy
from topology_helpers import check_cachers, check_picklable, check_replay, is_handle_of, node_of
import wrappers

CASES = [  # (num_actors, num_caches, max_actor_steps)
    (1, 1, None),
    (4, 2, 1000),
    (5, 3, None),
    (3, 0, 500),  # No caches: the learner is the only variable source.
]


@pytest.mark.parametrize("case", CASES, ids=[f"a{a}-c{c}-s{s}" for a, c, s in CASES])
def test_dqn_topology(cartpole, tmp_run_dir, case):
    num_actors, num_caches, max_actor_steps = case
    system = dqn.DQN(cartpole, network_factory=None, num_actors=num_actors, num_caches=num_caches,
                     max_actor_steps=max_actor_steps, run_dir=tmp_run_dir)
    program = system.build()
    assert program.name == "dqn"
    expected_groups = ["replay", "counter", "learner", "evaluator"]
    expected_groups += ["cacher"] if num_caches else []
    assert list(program.groups) == expected_groups + ["actor"]

    replay = check_replay(program, system)
    counter_group = program.groups["counter"]
    # The coordinator shares the counter's group, as in the seed.
    assert len(counter_group) == (2 if max_actor_steps else 1)
    counter = counter_group[0]
    assert counter._constructor == system.counter
    if max_actor_steps:
        coordinator = counter_group[1]
        assert coordinator._constructor == system.coordinator
        assert node_of(coordinator._args[0], program) is counter
        assert system.coordinator(None)._max_steps == max_actor_steps

    (learner,) = program.groups["learner"]
    assert learner._constructor == system.trainer
    assert is_handle_of(learner._args[0], replay) and node_of(learner._args[1], program) is counter

    (evaluator,) = program.groups["evaluator"]
    assert evaluator._constructor == system.evaluator
    assert node_of(evaluator._args[0], program) is learner  # The evaluator reads the learner.

    cachers = check_cachers(program, learner, num_caches)
    actors = program.groups["actor"]
    assert len(actors) == num_actors
    for actor_id, actor in enumerate(actors):
        assert type(actor) is lp.CourierNode and actor._constructor == system.executor
        index, replay_handle, source, counter_handle = actor._args
        assert index == actor_id and is_handle_of(replay_handle, replay)
        expected_source = cachers[actor_id % num_caches] if num_caches else learner
        assert node_of(source, program) is expected_source  # Round-robin over the caches.
        assert node_of(counter_handle, program) is counter
    check_picklable(program)


def test_actor_epsilons_are_the_seeds_logspace(cartpole, tmp_run_dir):
    system = dqn.DQN(cartpole, num_actors=6, run_dir=tmp_run_dir)
    expected = np.flip(np.logspace(1, 8, 6, base=0.4), axis=0)
    np.testing.assert_allclose([schedule(0) for schedule in system.exploration_schedules], expected)
    np.testing.assert_allclose([schedule(10**6) for schedule in system.exploration_schedules],
                               expected)


def test_dqn_defaults_prioritised_replay_and_describes_itself(cartpole, tmp_run_dir):
    system = dqn.DQN(cartpole, run_dir=tmp_run_dir)
    assert system.config.prioritized_replay and system.num_executors == 1
    description = system.description()
    assert description["system"] == "dqn" and description["agents"] == ["agent_0"]
    assert description["num_caches"] == 1
    assert "/dqn-" not in tmp_run_dir and system.run_dir.endswith("run")
    assert "dqn-" in dqn.DQN(cartpole).run_dir  # The default run directory is named after it.


def test_continuous_actions_are_refused_naming_the_problem(tmp_run_dir):
    pendulum = wrappers.make_environment_factory("gymnasium/Pendulum-v1")
    with pytest.raises(ValueError, match="DQN needs discrete actions.*Pendulum-v1.*DMPO"):
        dqn.DQN(pendulum, run_dir=tmp_run_dir)


def test_multi_agent_environments_are_refused_naming_the_problem(line_world_factory, tmp_run_dir):
    with pytest.raises(ValueError, match="single-agent system.*2 agents.*MADQN"):
        dqn.DQN(line_world_factory, run_dir=tmp_run_dir)


def test_a_one_agent_pettingzoo_environment_is_accepted(tmp_run_dir):
    system = dqn.DQN(wrappers.make_environment_factory("mpe/simple_v3"), run_dir=tmp_run_dir)
    assert system.environment_spec.agents == ["agent_0"]


@pytest.mark.parametrize("kwargs, message", [
    ({"num_actors": 0}, "num_actors must be an integer >= 1"),
    ({"num_caches": -1}, "num_caches must be an integer >= 0"),
    ({"max_actor_steps": 0}, "max_actor_steps must be an integer >= 1"),
    ({"config": "not a config"}, "config"),
])
def test_bad_input_is_refused_naming_it(cartpole, tmp_run_dir, kwargs, message):
    with pytest.raises(ValueError, match=message):
        dqn.DQN(cartpole, run_dir=tmp_run_dir, **kwargs)


def test_executor_update_with_wait_fetches_the_latest_variables_now(cartpole, tmp_run_dir):
    system = dqn.DQN(cartpole, run_dir=tmp_run_dir)
    source_networks = system.builder.make_networks()
    for variable in source_networks.q_networks["agent"].variables:
        variable.assign(tf.ones_like(variable))

    class Source:
        def get_variables(self, names):
            return variables_as_numpy(source_networks.q_networks, names)

    networks = system.builder.make_networks()
    executor = system.builder.make_executor(
        networks, ConstantEpsilon(0.0), variable_client=system.builder.make_variable_client(
            Source(), networks))
    executor.update(wait=True)  # The first call: Acme's own update(wait=True) would not fetch.
    for variable in networks.q_networks["agent"].variables:
        np.testing.assert_array_equal(variable.numpy(), np.ones(variable.shape))
