"""IMPALA: the seed's topology, its input checks, and V-trace over sequences that cross episodes."""

import launchpad as lp
import numpy as np
import pytest
import tensorflow as tf

from mava_systems import impala
from topology_helpers import check_cachers, check_picklable, check_replay, is_handle_of, node_of
import wrappers

CASES = [(1, None), (3, 1000), (6, None)]  # (num_actors, max_actor_steps)


@pytest.mark.parametrize("case", CASES, ids=[f"a{a}-s{s}" for a, s in CASES])
def test_impala_topology(cartpole, tmp_run_dir, case):
    num_actors, max_actor_steps = case
    system = impala.IMPALA(cartpole, network_factory=None, num_actors=num_actors,
                           max_actor_steps=max_actor_steps, run_dir=tmp_run_dir)
    program = system.build()
    assert program.name == "impala"
    assert list(program.groups) == ["replay", "counter", "learner", "evaluator", "cacher", "actor"]

    queue = check_replay(program, system)
    (table,) = system.replay()
    assert table.info.rate_limiter_info.max_diff == pytest.approx(system.config.max_queue_size)
    assert table.info.sampler_options.fifo and table.info.remover_options.fifo  # A queue.

    counter_group = program.groups["counter"]
    assert len(counter_group) == (2 if max_actor_steps else 1)
    counter = counter_group[0]
    (learner,) = program.groups["learner"]
    assert learner._constructor == system.trainer
    assert is_handle_of(learner._args[0], queue) and node_of(learner._args[1], program) is counter
    (evaluator,) = program.groups["evaluator"]
    assert node_of(evaluator._args[0], program) is learner  # The evaluator reads the learner.
    (cacher,) = check_cachers(program, learner, 1)  # One cache, in front of the learner.

    actors = program.groups["actor"]
    assert len(actors) == num_actors
    for actor_id, actor in enumerate(actors):
        assert type(actor) is lp.CourierNode and actor._constructor == system.executor
        index, queue_handle, source, counter_handle = actor._args
        assert index == actor_id and is_handle_of(queue_handle, queue)
        assert node_of(source, program) is cacher  # Every actor reads the one cache.
        assert node_of(counter_handle, program) is counter
    check_picklable(program)


def test_continuous_actions_are_refused_naming_the_problem(tmp_run_dir):
    pendulum = wrappers.make_environment_factory("gymnasium/Pendulum-v1")
    with pytest.raises(ValueError, match="IMPALA needs discrete actions.*Pendulum-v1"):
        impala.IMPALA(pendulum, run_dir=tmp_run_dir)


def test_bad_network_and_config_are_refused(cartpole, tmp_run_dir):
    import sonnet as snt

    with pytest.raises(ValueError, match=r"must return \(logits, value\)"):
        impala.IMPALA(cartpole, run_dir=tmp_run_dir, network_factory=lambda o, a: (
            lambda x: (snt.Linear(3)(x), tf.zeros([tf.shape(x)[0]]))))
    with pytest.raises(ValueError, match="config must be a IMPALAConfig"):
        impala.IMPALA(cartpole, run_dir=tmp_run_dir, config={"batch_size": 8})
    with pytest.raises(ValueError, match="num_actors must be an integer >= 1"):
        impala.IMPALA(cartpole, run_dir=tmp_run_dir, num_actors=0)
    with pytest.raises(ValueError, match="sequence_length"):
        impala.IMPALAConfig(sequence_length=1)


def test_sequences_from_the_queue_train_and_exclude_final_observations(tmp_run_dir):
    """Actors' sequences cross episode boundaries; the final-observation steps weigh nothing."""
    import reverb

    factory = wrappers.make_environment_factory("gymnasium/CartPole-v1", max_episode_steps=7)
    config = impala.IMPALAConfig(sequence_length=10, batch_size=4)
    system = impala.IMPALA(factory, config=config, run_dir=tmp_run_dir)
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        builder = system.builder
        executor = builder.make_executor(builder.make_networks(), adder=builder.make_adder(client))
        environment = factory(seed=0)
        for _ in range(12):  # 12 episodes of at most 7 steps: sequences cross episodes.
            timestep = environment.reset()
            executor.observe_first(timestep)
            while not timestep.last():
                actions = executor.select_actions(timestep.observation)
                timestep = environment.step(actions)
                executor.observe(actions, timestep)
        dataset = builder.make_dataset_iterator(client)
        sample = next(dataset)
        steps = sample.data
        assert steps.observation["agent"].observation.shape == (4, 10, 1, 4)
        assert steps.extras["logits"]["agent"].shape == (4, 10, 1, 2)
        starts = steps.start_of_episode.numpy()
        assert starts[:, 1:].any()  # Some sequence holds a new episode's first step.

        trainer = builder.make_trainer(builder.make_networks(), iter([sample]), checkpoint=False)
        losses = trainer.network_loss("agent", steps)
        # Transitions: every step but the last of a sequence, less one final observation per
        # episode start inside the sequence.
        expected = starts[:, 1:].size - starts[:, 1:].sum()
        assert losses["transitions"].numpy() == expected
        assert np.isfinite(losses["loss"].numpy())
        before = [v.numpy().copy() for v in trainer._networks.networks["agent"].variables]
        result = trainer.step()
        assert trainer.num_steps == 1 and np.isfinite(result["loss/agent"])
        after = trainer._networks.networks["agent"].variables
        assert any(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))
    finally:
        server.stop()
