"""HAPPO: the M factor of agents updated one after another, the random update order, a policy per
agent and one team critic, a trainer step, bad inputs, and a short in-process learning run."""

import numpy as np
import pytest
import tensorflow as tf

from mava_systems import happo, mappo
from test_mappo import LEARNING_CONFIG, train_in_process
from test_recurrent_mappo import SMALL, sampled_steps
import wrappers


def make_system(tmp_run_dir, env_kwargs=None, system_class=None, env="debug/line_world_v0",
                **config):
    factory = wrappers.make_environment_factory(env, **(env_kwargs or {}))
    return (system_class or happo.HAPPO)(factory, config=happo.HAPPOConfig(**config),
                                         run_dir=tmp_run_dir)


class Recording:
    """Records the advantages every policy loss is given, by agent, in update order (a mixin of
    HAPPO's trainers)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def policy_loss(self, key, batch):
        self.seen.append((key, batch["advantages"].numpy()))
        return super().policy_loss(key, batch)


class RecordingTrainer(Recording, happo.HAPPOTrainer):
    """The feedforward trainer, recording."""


class RecordingRecurrentTrainer(Recording, happo.RecurrentHAPPOTrainer):
    """The recurrent trainer, recording."""


def test_each_agent_is_weighted_by_the_ratios_of_the_agents_updated_before_it(tmp_run_dir):
    """Hand-made batches of two agents updated in the order agent_1, agent_0: agent_1's loss
    gets the team advantages as they are, agent_0's gets them times agent_1's new/old ratio of
    every entry (1 where the entry is not a transition)."""
    system = make_system(tmp_run_dir, num_epochs=1, num_minibatches=1)
    builder = system.builder
    networks = builder.make_networks()
    trainer = RecordingTrainer(networks, iter([]), system.config, state_from_observations=False)
    rng = np.random.default_rng(3)
    advantages = tf.constant(rng.normal(size=(2, 3, 1)), tf.float32)
    is_transition = tf.constant(np.array([True, True, False, True, True, True]).reshape(2, 3, 1))

    def batch_of(key):
        observation = tf.constant(rng.random((2, 3, 1, 12)), tf.float32)
        batch = {"observation": observation, "legal_actions": tf.ones([2, 3, 1, 3]),
                 "action": tf.constant(rng.integers(0, 3, (2, 3, 1)), tf.int32),
                 "advantages": advantages, "is_transition": is_transition}
        batch["behaviour_log_prob"] = trainer.batch_log_probs(key, batch)
        return batch

    batches = {key: batch_of(key) for key in ("agent_0", "agent_1")}
    first_before = trainer.batch_log_probs("agent_1", batches["agent_1"]).numpy()
    fetches = trainer.train_policies(tf.constant([1, 0]), batches)
    first_after = trainer.batch_log_probs("agent_1", batches["agent_1"]).numpy()

    assert [key for key, _ in trainer.seen] == ["agent_1", "agent_0"]
    np.testing.assert_allclose(trainer.seen[0][1], advantages.numpy(), rtol=1e-6)
    ratio = np.where(is_transition.numpy(), np.exp(first_after - first_before), 1.0)
    assert np.abs(ratio - 1.0).max() > 1e-3  # agent_1's update moved its probabilities.
    np.testing.assert_allclose(trainer.seen[1][1], advantages.numpy() * ratio, rtol=1e-4)
    assert fetches["m_factor/agent_1"] == 1.0
    np.testing.assert_allclose(fetches["m_factor/agent_0"],
                               ratio[is_transition.numpy()].mean(), rtol=1e-4)


def test_the_update_order_is_drawn_anew_every_step_from_the_seed(tmp_run_dir):
    def orders(seed):
        system = make_system(tmp_run_dir, seed=seed)
        trainer = system.builder.make_trainer(system.builder.make_networks(), iter([]),
                                              checkpoint=False)
        return [tuple(trainer.update_order().numpy()) for _ in range(12)]

    first = orders(0)
    assert set(first) == {(0, 1), (1, 0)}  # Both orders of the two agents come up.
    assert orders(0) == first and orders(1) != first


def test_continuous_agents_each_train_their_own_policy_and_the_team_critic_trains(tmp_run_dir):
    """Squashed Gaussian policies, one per agent (no variable shared), and the one critic of
    the global state: each moves when trained on hand-made data."""
    system = make_system(tmp_run_dir, env_kwargs={"continuous_actions": True}, num_epochs=1,
                         num_minibatches=1)
    networks = system.builder.make_networks()
    assert sorted(networks.trained_modules()) == ["critic/team", "policy/agent_0",
                                                  "policy/agent_1"]
    first, second = (networks.policies[key].trainable_variables for key in ("agent_0", "agent_1"))
    assert not {id(variable) for variable in first} & {id(variable) for variable in second}
    trainer = system.builder.make_trainer(networks, iter([]), checkpoint=False)
    rng = np.random.default_rng(4)
    mask = tf.ones([2, 3, 1], tf.bool)
    advantages = tf.constant(rng.normal(size=(2, 3, 1)), tf.float32)
    batches = {}
    for key in ("agent_0", "agent_1"):
        batch = {"observation": tf.constant(rng.random((2, 3, 1, 12)), tf.float32),
                 "legal_actions": tf.ones([2, 3, 1, 1]), "advantages": advantages,
                 "action": tf.constant(rng.uniform(-0.9, 0.9, (2, 3, 1, 1)), tf.float32),
                 "is_transition": mask}
        batch["behaviour_log_prob"] = trainer.batch_log_probs(key, batch)
        batches[key] = batch
    team = {"critic_inputs": tf.constant(rng.random((2, 3, 1, 20)), tf.float32),
            "value_targets": tf.ones([2, 3, 1]), "is_transition": mask}
    # The critic's own values as the old ones, as in a prepared batch: with fixed old values an
    # untrained critic above them by more than the clip range gets no gradient.
    team["old_values"] = tf.reshape(trainer.critic_values(happo.TEAM, team), [2, 3, 1])
    before = {name: [variable.numpy().copy() for variable in module.trainable_variables]
              for name, module in networks.trained_modules().items()}
    fetches = trainer.train_policies(tf.constant([0, 1]), batches)
    trainer.critic_step(happo.TEAM, team)
    for name, module in networks.trained_modules().items():
        assert any(not np.array_equal(old, variable.numpy())
                   for old, variable in zip(before[name], module.trainable_variables)), name
    assert fetches["m_factor/agent_0"] == 1.0 and fetches["m_factor/agent_1"] != 1.0


def test_bad_inputs_are_refused_naming_the_problem(tmp_run_dir, line_world_factory):
    for field, value, message in [
            ("shared_weights", True, r"shared_weights must be False for HAPPO"),
            ("critic", "decentralised", r"critic must be 'centralised' for HAPPO.*IPPO"),
            ("separate_optimizers", False, r"separate_optimizers must be True for HAPPO")]:
        with pytest.raises(ValueError, match=message):
            happo.HAPPOConfig(**{field: value})
    with pytest.raises(ValueError, match="HAPPO needs a HAPPOConfig"):
        happo.HAPPO(line_world_factory, config=mappo.MAPPOConfig(), run_dir=tmp_run_dir)


class SnapshotTrainer(happo.HAPPOTrainer):
    """Keeps its modules' initial variables and the agent order of every step (the instances
    made are listed in `made`)."""

    made = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial = {name: [variable.numpy().copy() for variable in module.trainable_variables]
                        for name, module in self.networks.trained_modules().items()}
        self.orders = []
        SnapshotTrainer.made.append(self)

    def step(self):
        result = super().step()
        self.orders.append(tuple(self.agent_order))
        return result


class SnapshotBuilder(happo.HAPPOBuilder):
    trainer_class = SnapshotTrainer


class SnapshotHAPPO(happo.HAPPO):
    """HAPPO whose builder makes `SnapshotTrainer`s (the extension route)."""

    builder_class = SnapshotBuilder


def test_happo_learns_the_line_world(tmp_run_dir):
    """Random play scores about -3.2 per episode, optimal play -0.24 (as MAPPO's test). Every
    step trains both agents' policies and the team critic, the agents in a drawn order."""
    tf.random.set_seed(0)
    SnapshotTrainer.made.clear()
    returns = train_in_process(make_system(tmp_run_dir, system_class=SnapshotHAPPO,
                                           **LEARNING_CONFIG), 5000)
    last = np.mean(returns[-2:])
    assert last > -1.5 and last > returns[0] + 1.0, returns
    (trainer,) = SnapshotTrainer.made  # The builder subclass's trainer class was used.
    for name, module in trainer.networks.trained_modules().items():
        assert any(not np.array_equal(old, variable.numpy())
                   for old, variable in zip(trainer.initial[name], module.trainable_variables))
    assert len(trainer.orders) > 10
    assert set(trainer.orders) == {("agent_0", "agent_1"), ("agent_1", "agent_0")}


def test_recurrent_agents_are_weighted_by_ratios_of_their_policies_unrolled_over_chunks(
        tmp_run_dir):
    """Recurrent HAPPO on stored line-world sequences (11 steps, chunks of 5, most starting
    mid-episode): each agent's policy unrolled over its chunks from the stored states gives the
    executor's log-probabilities, the team critic's chunk unrolls give the sequence's values,
    and the second agent updated gets the team advantages times the first's new/old ratio of
    its chunk unrolls."""
    system = make_system(tmp_run_dir, recurrent=True, **{**SMALL, "seed": 2, "num_epochs": 1,
                                                         "num_minibatches": 1})
    executor, steps = sampled_steps(system)
    assert isinstance(executor, happo.RecurrentHAPPOExecutor)
    networks = executor._networks  # pylint: disable=protected-access
    assert sorted(networks.trained_modules()) == ["critic/team", "policy/agent_0",
                                                  "policy/agent_1"]
    trainer = RecordingRecurrentTrainer(networks, iter([]), system.config,
                                        state_from_observations=not system.builder.replay_environment_extras_spec())
    team = trainer.team_data(steps, tf.ones([SMALL["batch_size"]], tf.bool))
    batches = {key: trainer.agent_batch(key, steps, team) for key in ("agent_0", "agent_1")}
    batch = batches["agent_1"]
    assert batch["observation"].shape[:2] == (SMALL["batch_size"] * 2, 5)
    assert not batch["resets"].numpy()[:, 0].all()  # Chunks start from stored, non-zero states.
    mask = batch["is_transition"].numpy()
    before = trainer.batch_log_probs("agent_1", batch).numpy()
    np.testing.assert_allclose(before[mask], batch["behaviour_log_prob"].numpy()[mask], atol=1e-4)
    critic = trainer.critic_batch(steps, team)
    np.testing.assert_allclose(trainer.critic_values(happo.TEAM, critic).numpy(),
                               critic["old_values"].numpy(), atol=1e-4)

    fetches = trainer.train_policies(tf.constant([1, 0]), batches)
    after = trainer.batch_log_probs("agent_1", batch).numpy()
    ratio = np.where(mask, np.exp(after - before), 1.0)
    assert np.abs(ratio - 1.0).max() > 1e-3
    assert [key for key, _ in trainer.seen] == ["agent_1", "agent_0"]
    # (The one minibatch holds the chunks in a shuffled order.)
    np.testing.assert_allclose(np.sort(trainer.seen[1][1].ravel()),
                               np.sort((batch["advantages"].numpy() * ratio).ravel()),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fetches["m_factor/agent_0"], ratio[mask].mean(), rtol=1e-4)

