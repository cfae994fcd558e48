"""R2D2: the seed's topology, its input checks, and sequences with stored LSTM states trained on."""

import launchpad as lp
import numpy as np
import pytest

from mava_systems import r2d2
from topology_helpers import check_cachers, check_picklable, check_replay, is_handle_of, node_of
import wrappers

CASES = [(1, None), (4, 1000), (6, None)]  # (num_actors, max_actor_steps)


@pytest.mark.parametrize("case", CASES, ids=[f"a{a}-s{s}" for a, s in CASES])
def test_r2d2_topology(cartpole, tmp_run_dir, case):
    num_actors, max_actor_steps = case
    system = r2d2.R2D2(cartpole, network_factory=None, num_actors=num_actors,
                       max_actor_steps=max_actor_steps, run_dir=tmp_run_dir)
    program = system.build()
    assert program.name == "r2d2"
    assert list(program.groups) == ["replay", "counter", "learner", "cacher", "evaluator", "actor"]
    replay = check_replay(program, system)
    counter_group = program.groups["counter"]
    assert len(counter_group) == (2 if max_actor_steps else 1)
    counter = counter_group[0]
    if max_actor_steps:
        assert node_of(counter_group[1]._args[0], program) is counter
    (learner,) = program.groups["learner"]
    assert learner._constructor == system.trainer
    assert is_handle_of(learner._args[0], replay) and node_of(learner._args[1], program) is counter
    (cacher,) = check_cachers(program, learner, 1)
    (evaluator,) = program.groups["evaluator"]
    # R2D2's evaluator reads the cache, or the learner when it evaluates by steps (the default).
    assert node_of(evaluator._args[0], program) is (
        learner if system.evaluates_by_steps else cacher)
    actors = program.groups["actor"]
    assert len(actors) == num_actors
    for actor_id, actor in enumerate(actors):
        assert type(actor) is lp.CourierNode and actor._constructor == system.executor
        index, replay_handle, source, counter_handle = actor._args
        assert index == actor_id and is_handle_of(replay_handle, replay)
        assert node_of(source, program) is cacher and node_of(counter_handle, program) is counter
    expected = np.flip(np.logspace(1, 8, num_actors, base=0.4), axis=0)
    np.testing.assert_allclose([s(0) for s in system.exploration_schedules], expected)
    check_picklable(program)


def test_continuous_actions_are_refused_naming_the_problem(tmp_run_dir):
    pendulum = wrappers.make_environment_factory("gymnasium/Pendulum-v1")
    with pytest.raises(ValueError, match="R2D2 needs discrete actions.*Pendulum-v1"):
        r2d2.R2D2(pendulum, run_dir=tmp_run_dir)


def test_bad_config_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="n_step"):
        r2d2.R2D2Config(n_step=20, trace_length=20)
    with pytest.raises(ValueError, match="burn_in_length"):
        r2d2.R2D2Config(burn_in_length=-1)


def test_sequences_store_lstm_states_and_train_with_priorities(cartpole, tmp_run_dir):
    import reverb

    config = r2d2.R2D2Config(burn_in_length=4, trace_length=8, replay_period=4, n_step=3,
                             batch_size=4, min_replay_size=4, samples_per_insert=None)
    system = r2d2.R2D2(cartpole, config=config, run_dir=tmp_run_dir)
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        builder = system.builder
        executor = builder.make_executor(builder.make_networks(), system.exploration_schedules[0],
                                         adder=builder.make_adder(client))
        environment = cartpole(seed=0)
        for _ in range(10):  # Short episodes: about one sequence each.
            timestep = environment.reset()
            executor.observe_first(timestep)
            while not timestep.last():
                actions = executor.select_actions(timestep.observation)
                timestep = environment.step(actions)
                executor.observe(actions, timestep)
        sample = next(builder.make_dataset_iterator(client))
        steps = sample.data
        assert steps.observation["agent"].observation.shape == (4, 13, 1, 4)
        hidden = steps.extras["core_state"]["agent"].hidden.numpy()
        assert hidden.shape == (4, 13, 1, 64)
        # A sequence starting at an episode's first step starts from the zero state; later ones don't.
        starts = steps.start_of_episode.numpy()[:, 0]
        for index in range(4):
            assert (np.abs(hidden[index, 0]).sum() == 0) == bool(starts[index])

        networks = builder.make_networks()
        trainer = builder.make_trainer(networks, iter([sample]), replay_client=client,
                                       checkpoint=False)
        result = trainer.step()
        assert trainer.num_steps == 1 and np.isfinite(result["loss/agent"])
        assert "priorities" not in result
        # The sampled sequences' priorities changed from the adder's initial 1.0.
        updated = set(sample.info.key.numpy())
        seen = next(builder.make_dataset_iterator(client))
        for key, priority in zip(seen.info.key.numpy(), seen.info.priority.numpy()):
            assert (priority != 1.0) == (key in updated)
    finally:
        server.stop()
