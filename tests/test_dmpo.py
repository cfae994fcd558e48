"""DMPO: the seed's topology, its input checks, and one trainer step on real replay data."""

import launchpad as lp
import numpy as np
import pytest

from mava_systems import dmpo
from topology_helpers import check_cachers, check_picklable, check_replay, is_handle_of, node_of
import wrappers

CASES = [(1, 0, None), (4, 2, 1000), (3, 0, 500)]  # (num_actors, num_caches, max_actor_steps)
SMALL = dict(policy_hidden_sizes=(16,), critic_hidden_sizes=(16,))


@pytest.fixture(scope="module")
def pendulum():
    return wrappers.make_environment_factory("gymnasium/Pendulum-v1")


@pytest.mark.parametrize("case", CASES, ids=[f"a{a}-c{c}-s{s}" for a, c, s in CASES])
def test_dmpo_topology(pendulum, tmp_run_dir, case):
    num_actors, num_caches, max_actor_steps = case
    system = dmpo.DMPO(pendulum, network_factory=None, num_actors=num_actors,
                       num_caches=num_caches, max_actor_steps=max_actor_steps,
                       config=dmpo.DMPOConfig(**SMALL), run_dir=tmp_run_dir)
    program = system.build()
    assert program.name == "dmpo"
    expected = ["replay", "counter", "learner", "evaluator"] + (["cacher"] if num_caches else [])
    assert list(program.groups) == expected + ["actor"]

    replay = check_replay(program, system)
    counter_group = program.groups["counter"]
    assert len(counter_group) == (2 if max_actor_steps else 1)  # The coordinator joins the counter.
    counter = counter_group[0]
    (learner,) = program.groups["learner"]
    assert is_handle_of(learner._args[0], replay) and node_of(learner._args[1], program) is counter
    (evaluator,) = program.groups["evaluator"]
    assert node_of(evaluator._args[0], program) is learner
    cachers = check_cachers(program, learner, num_caches)
    actors = program.groups["actor"]
    assert len(actors) == num_actors
    for actor_id, actor in enumerate(actors):
        assert type(actor) is lp.CourierNode and actor._constructor == system.executor
        index, replay_handle, source, counter_handle = actor._args
        assert index == actor_id and is_handle_of(replay_handle, replay)  # Each gets its actor id.
        expected_source = cachers[actor_id % num_caches] if num_caches else learner
        assert node_of(source, program) is expected_source
        assert node_of(counter_handle, program) is counter
    check_picklable(program)


def test_discrete_actions_are_refused_naming_the_problem(tmp_run_dir):
    cartpole = wrappers.make_environment_factory("gymnasium/CartPole-v1")
    with pytest.raises(ValueError, match="DMPO needs continuous actions.*CartPole-v1.*DQN"):
        dmpo.DMPO(cartpole, run_dir=tmp_run_dir)


def test_bad_config_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="vmax"):
        dmpo.DMPOConfig(vmin=10.0, vmax=0.0)
    with pytest.raises(ValueError, match="num_samples"):
        dmpo.DMPOConfig(num_samples=0)
    with pytest.raises(ValueError, match="policy_hidden_sizes"):
        dmpo.DMPOConfig(policy_hidden_sizes=())


def test_executor_actions_stay_within_bounds_and_greedy_is_the_mean(pendulum, tmp_run_dir):
    system = dmpo.DMPO(pendulum, config=dmpo.DMPOConfig(init_scale=5.0, **SMALL),
                       run_dir=tmp_run_dir)
    networks = system.builder.make_networks()
    environment = pendulum(seed=0)
    observation = environment.reset().observation
    explorer = system.builder.make_executor(networks, seed=1)
    actions = np.array([explorer.select_actions(observation)["agent_0"] for _ in range(50)])
    assert actions.shape == (50, 1) and actions.dtype == np.float32
    assert np.all(actions >= -2.0) and np.all(actions <= 2.0) and len(np.unique(actions)) > 10
    greedy = system.builder.make_executor(networks, greedy=True)
    first, second = (greedy.select_actions(observation)["agent_0"] for _ in range(2))
    np.testing.assert_array_equal(first, second)


def test_one_trainer_step_from_replay_changes_policy_and_critic(pendulum, tmp_run_dir):
    import reverb

    config = dmpo.DMPOConfig(min_replay_size=10, batch_size=8, samples_per_insert=None,
                             num_samples=4, **SMALL)
    system = dmpo.DMPO(pendulum, config=config, run_dir=tmp_run_dir)
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        builder = system.builder
        executor = builder.make_executor(builder.make_networks(), adder=builder.make_adder(client))
        environment = pendulum(seed=0)
        timestep = environment.reset()
        executor.observe_first(timestep)
        for _ in range(30):
            actions = executor.select_actions(timestep.observation)
            timestep = environment.step(actions)
            executor.observe(actions, timestep)
        networks = builder.make_networks()
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       checkpoint=False)
        before = {name: [v.numpy().copy() for v in module.variables]
                  for name, module in networks.trained_modules().items()}
        result = trainer.step()
        assert trainer.num_steps == 1
        assert np.isfinite(result["critic_loss/agent"]) and np.isfinite(result["policy_loss/agent"])
        for name, module in networks.trained_modules().items():
            assert any(not np.array_equal(b, v.numpy())
                       for b, v in zip(before[name], module.variables)), name
    finally:
        server.stop()
