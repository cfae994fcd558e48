"""VDN and QMIX: mixers, the team loss (masking, heterogeneous agents), configs and bad input."""

import dataclasses

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf
import tree

from mava_systems import madqn, qmix, vdn
import wrappers

BATCH = 8


def test_vdns_mixer_is_the_sum_of_the_agents_values():
    q_values = tf.random.normal([BATCH, 3])
    mixed = vdn.SumMixer()(q_values, tf.random.normal([BATCH, 5]))
    np.testing.assert_allclose(mixed.numpy(), q_values.numpy().sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("seed,normalise_states", [(0, False), (1, False), (2, True)])
def test_qmixs_mixer_never_decreases_when_an_agent_value_grows(seed, normalise_states):
    tf.random.set_seed(seed)
    num_agents, state_size = 3, 6
    mixer = qmix.QMixer(num_agents, embed_dim=8, hypernet_hidden_size=16,
                        normalise_states=normalise_states)
    states = tf.random.normal([256, state_size]) * 3.0
    q_values = tf.random.normal([256, num_agents]) * 5.0
    base = mixer(q_values, states).numpy()
    for agent in range(num_agents):
        for step in (0.01, 1.0, 10.0):
            raised = q_values + step * tf.one_hot([agent] * 256, num_agents)
            assert np.all(mixer(raised, states).numpy() >= base - 1e-5), (agent, step)
    with tf.GradientTape() as tape:
        tape.watch(q_values)
        total = tf.reduce_sum(mixer(q_values, states))
    assert np.all(tape.gradient(total, q_values).numpy() >= 0.0)
    # Not a sum: the mixing depends on the state.
    other_states = tf.random.normal([256, state_size]) * 3.0
    assert not np.allclose(mixer(q_values, other_states).numpy(), base)


def test_qmixs_normalised_states_bound_the_mixing_on_states_far_out():
    """With `normalise_states`, a state scaled up mixes as the state itself (layer norm);
    without it, the mixing weights grow with the state."""
    tf.random.set_seed(0)
    states, q_values = tf.random.normal([64, 6]), tf.random.normal([64, 3])
    normalised = qmix.QMixer(3, embed_dim=8, hypernet_hidden_size=16, normalise_states=True)
    np.testing.assert_allclose(normalised(q_values, 20.0 * states).numpy(),
                               normalised(q_values, states).numpy(), rtol=1e-3, atol=1e-3)
    raw = qmix.QMixer(3, embed_dim=8, hypernet_hidden_size=16)
    assert np.mean(np.abs(raw(q_values, 20.0 * states).numpy())) > 10.0 * np.mean(
        np.abs(raw(q_values, states).numpy()))


@pytest.fixture(scope="module")
def speaker_listener(tmp_path_factory):
    """QMIX on heterogeneous agents (speaker: 3 observations, 3 actions; listener: 11 and 5)."""
    system = qmix.QMIX(wrappers.make_environment_factory("mpe/simple_speaker_listener_v4"),
                       config=qmix.QMIXConfig(mixing_embed_dim=4, hypernet_hidden_size=8),
                       run_dir=str(tmp_path_factory.mktemp("qmix") / "run"))
    networks = system.builder.make_networks()
    trainer = system.builder.make_trainer(networks, iter(()), checkpoint=False)
    return system, trainer


def random_batch(signature, seed=0):
    """A batch of BATCH random replay items of `signature`: agents present, every action legal."""
    rng = np.random.default_rng(seed)

    def leaf(path, spec):
        shape = (BATCH,) + tuple(spec.shape)
        name = "/".join(str(part) for part in path)
        if "legal_actions" in name or "discount" in name:
            return tf.ones(shape, spec.dtype)
        if "terminal" in name:
            return tf.zeros(shape, spec.dtype)
        if spec.dtype.is_integer:
            return tf.constant(rng.integers(0, 3, size=shape), spec.dtype)
        return tf.constant(rng.normal(size=shape), spec.dtype)

    return tree.map_structure_with_path(leaf, signature)


def replace_leaf(transitions, field, key, part, index, value):
    """`transitions` with `field[key].part[:, index]` (part None: `field[key][:, index]`) set."""
    data = transitions._asdict()
    olt = data[field][key]
    array = (olt if part is None else getattr(olt, part)).numpy().copy()
    array[:, index] = value
    if part is None:
        data[field] = {**data[field], key: tf.constant(array)}
    else:
        data[field] = {**data[field], key: olt._replace(**{part: tf.constant(array)})}
    return type(transitions)(**data)


def test_team_loss_with_heterogeneous_agents_and_the_environment_state(speaker_listener):
    system, trainer = speaker_listener
    signature = system.builder.transition_signature()
    assert tuple(signature.extras["env_state"].shape) == (14,)  # MPE's state() is stored.
    assert tuple(signature.observation["listener"].observation.shape) == (1, 11)
    mixer_shapes = system.description()["mixer_variables"]
    # The layer reading the state (14): 2 hypernetworks' 8 hidden units, b1 and V's hidden (4 each),
    assert [14, 2 * 8 + 2 * 4] in mixer_shapes
    assert [8, 2 * 4] in mixer_shapes  # and W1's hypernetwork output: 2 agents x embed 4.
    batch = random_batch(signature)
    loss, priorities, fetches = trainer.joint_loss(batch, tf.ones([BATCH]))
    assert loss.shape == () and np.isfinite(loss.numpy())
    assert priorities.shape == (BATCH,) and fetches["q_value"].shape == ()
    # The mixer reads the state: another state gives another loss.
    other = batch._replace(extras={**batch.extras,
                                   "env_state": batch.extras["env_state"] + 1.0})
    assert trainer.joint_loss(other, tf.ones([BATCH])).loss.numpy() != loss.numpy()


def test_an_agent_that_has_left_contributes_nothing(speaker_listener):
    system, trainer = speaker_listener
    batch = random_batch(system.builder.transition_signature(), seed=1)

    def loss_of(transitions):
        return trainer.joint_loss(transitions, tf.ones([BATCH])).loss.numpy()

    def changed_listener(transitions, field):
        return replace_leaf(transitions, field, "listener", "observation", 0, 5.0)

    # Present at both ends: its observations matter.
    assert loss_of(changed_listener(batch, "observation")) != loss_of(batch)
    assert loss_of(changed_listener(batch, "next_observation")) != loss_of(batch)
    # Gone before the item starts (terminal): neither its observation nor its action counts.
    gone = replace_leaf(batch, "observation", "listener", "terminal", 0, 1.0)
    assert loss_of(changed_listener(gone, "observation")) == pytest.approx(loss_of(gone), rel=1e-6)
    other_action = replace_leaf(gone, "action", "listener", None, 0, 4)
    assert loss_of(other_action) == pytest.approx(loss_of(gone), rel=1e-6)
    # Gone by the item's end (its discount 0): its next value does not count.
    ended = replace_leaf(batch, "discount", "listener", None, 0, 0.0)
    assert loss_of(changed_listener(ended, "next_observation")) == pytest.approx(
        loss_of(ended), rel=1e-6)


def test_team_reward_and_discount(line_world_factory):
    """The team reward is the mean or sum of the agents' returns; the team bootstraps while
    any agent does."""
    system = vdn.VDN(line_world_factory, config=vdn.VDNConfig(team_reward="sum"))
    networks = system.builder.make_networks()
    trainer = system.builder.make_trainer(networks, iter(()), checkpoint=False)
    batch = random_batch(system.builder.transition_signature(), seed=2)
    batch = batch._replace(reward={"agent": tf.constant([[1.0, 3.0]] * BATCH)})
    observation = tf.reshape(batch.observation["agent"].observation, [BATCH * 2, -1])
    team_q = tf.gather(networks.q_networks["agent"](observation),
                       tf.reshape(batch.action["agent"], [-1]), batch_dims=1)
    team_q = team_q.numpy().reshape(BATCH, 2).sum(axis=1)

    def td_errors(trainer, discounts):
        items = batch._replace(discount={"agent": tf.constant([discounts] * BATCH)})
        return trainer.joint_loss(items, tf.ones([BATCH])).priorities.numpy()

    # Every agent's episode over: the target is the team reward alone.
    np.testing.assert_allclose(td_errors(trainer, [0.0, 0.0]), np.abs(4.0 - team_q), rtol=1e-5)
    mean_system = vdn.VDN(line_world_factory, config=vdn.VDNConfig(team_reward="mean"))
    mean_trainer = mean_system.builder.make_trainer(networks, iter(()), checkpoint=False)
    np.testing.assert_allclose(td_errors(mean_trainer, [0.0, 0.0]), np.abs(2.0 - team_q),
                               rtol=1e-5)
    # One agent still in the episode: the team bootstraps (from that agent's value only).
    bootstrapped = td_errors(trainer, [1.0, 0.0])
    assert not np.allclose(bootstrapped, td_errors(trainer, [0.0, 0.0]))
    assert not np.allclose(bootstrapped, td_errors(trainer, [1.0, 1.0]))


def test_without_a_global_state_qmix_mixes_on_the_concatenated_observations(tmp_path, caplog):
    system = qmix.QMIX(wrappers.make_environment_factory("classic/rps_v2"),
                       config=qmix.QMIXConfig(mixing_embed_dim=4), run_dir=str(tmp_path))
    assert "concatenation of all agents' observations" in caplog.text
    assert system.builder.transition_signature().extras == ()  # Nothing more in replay.
    state_spec = system.builder.mixer_state_spec()
    assert state_spec.shape == (2 * 1,)  # rps_v2: each agent observes one number.


def test_configs_extend_madqns_and_validate():
    config = qmix.QMIXConfig()
    assert isinstance(config, vdn.VDNConfig)
    assert (config.mixing_embed_dim, config.hypernet_hidden_size, config.team_reward,
            config.normalise_mixer_states) == (32, 64, "mean", False)
    assert {field.name for field in dataclasses.fields(vdn.VDNConfig)} < {
        field.name for field in dataclasses.fields(qmix.QMIXConfig)}
    with pytest.raises(ValueError, match="QMIXConfig.mixing_embed_dim=0 is out of range"):
        qmix.QMIXConfig(mixing_embed_dim=0)
    with pytest.raises(ValueError, match="QMIXConfig.hypernet_hidden_size=0 is out of range"):
        qmix.QMIXConfig(hypernet_hidden_size=0)
    with pytest.raises(ValueError, match=r"VDNConfig.team_reward must be one of \('mean', "
                                         r"'sum'\), got 'max'"):
        vdn.VDNConfig(team_reward="max")
    with pytest.raises(ValueError, match="MADQNConfig.max_replay_size"):
        vdn.VDNConfig(min_replay_size=10, max_replay_size=5)


@pytest.mark.parametrize("system_class", [vdn.VDN, qmix.QMIX])
def test_a_one_agent_environment_is_refused(system_class, cartpole, tmp_path):
    with pytest.raises(ValueError, match=r"mixes the values of several agents, but the "
                                         r"environment has 1: \['agent_0'\]"):
        system_class(cartpole, run_dir=str(tmp_path))


def test_a_mixer_of_the_wrong_shape_is_refused(line_world_factory, tmp_path):
    with pytest.raises(ValueError, match=r"mixer_factory's mixer returns shape \(2, 3\) for "
                                         r"Q-values of shape \(2, 2\)"):
        qmix.QMIX(line_world_factory, run_dir=str(tmp_path),
                  mixer_factory=lambda num_agents, state_spec: lambda q, s: snt.Linear(3)(q))
    with pytest.raises(ValueError, match="needs a VDNConfig"):
        vdn.VDN(line_world_factory, config=madqn.MADQNConfig(), run_dir=str(tmp_path))


def test_a_run_cannot_resume_with_another_mixer_size(line_world_factory, tmp_path):
    run_dir = str(tmp_path / "run")
    qmix.QMIX(line_world_factory, config=qmix.QMIXConfig(mixing_embed_dim=8),
              run_dir=run_dir).prepare_run_dir()
    same = qmix.QMIX(line_world_factory, config=qmix.QMIXConfig(mixing_embed_dim=8),
                     run_dir=run_dir)
    assert same.prepare_run_dir()[1] == []
    with pytest.raises(ValueError, match="mixer_variables"):
        qmix.QMIX(line_world_factory, config=qmix.QMIXConfig(mixing_embed_dim=16),
                  run_dir=run_dir).prepare_run_dir()
