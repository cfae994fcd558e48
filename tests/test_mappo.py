"""MAPPO/IPPO: GAE, the clipped surrogate, the policies' distributions, the value normaliser,
replay layout and the policy-lag bound, bad inputs, and short in-process learning runs."""

import threading

import numpy as np
import pytest
import reverb
import tensorflow as tf
import tensorflow_probability as tfp
from dm_env import specs

from mava_systems import mappo
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.mappo.policies import CategoricalHead, SquashedGaussianHead
from mava_systems.mappo.training import POLICY_VERSION, RunningMeanStd
from topology_helpers import check_picklable, check_replay
import wrappers

tfd, tfb = tfp.distributions, tfp.bijectors


def reference_advantages(rewards, discounts, values, is_transition, lambda_):
    """GAE from its definition: A_t = sum_l (lambda^l prod_{j<l} discount_{t+j}) delta_{t+l},
    summed over the steps t, t+1, ... of t's episode that lie in the sequence."""
    steps, columns = rewards.shape
    advantages = np.zeros_like(rewards)
    for column in range(columns):
        for t in range(steps):
            if not is_transition[t, column]:
                continue
            weight, total, k = 1.0, 0.0, t
            while k < steps and is_transition[k, column]:
                delta = (rewards[k, column] + discounts[k, column] * values[k + 1, column]
                         - values[k, column])
                total += weight * delta
                weight *= lambda_ * discounts[k, column]
                k += 1
            advantages[t, column] = total
    return advantages


def test_gae_matches_its_definition_across_episode_ends():
    rng = np.random.default_rng(0)
    steps, columns = 9, 4
    rewards = rng.normal(size=(steps, columns)).astype(np.float32)
    # A termination (discount 0) and truncations (discount 1) inside the sequences.
    discounts = np.full((steps, columns), 0.9, np.float32)
    discounts[2, 0] = 0.0
    values = rng.normal(size=(steps + 1, columns)).astype(np.float32)
    is_transition = np.ones((steps, columns), bool)
    is_transition[3, 0] = False  # Step 3 holds the final observation of column 0's episode.
    is_transition[5, 1] = False  # A truncated episode: step 4 bootstraps from V(o_5).
    is_transition[1, 2] = is_transition[6, 2] = False  # Two episode ends in one sequence.
    for lambda_ in (0.0, 0.95, 1.0):
        got = mappo.generalized_advantages(tf.constant(rewards), tf.constant(discounts),
                                           tf.constant(values), tf.constant(is_transition),
                                           lambda_).numpy()
        want = reference_advantages(rewards, discounts, values, is_transition, lambda_)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # lambda = 0 is the one-step TD error; a truncated episode's last step bootstraps.
    assert got[4, 1] == pytest.approx(want[4, 1])
    assert reference_advantages(rewards, discounts, values, is_transition, 0.0)[4, 1] == \
        pytest.approx(rewards[4, 1] + 0.9 * values[5, 1] - values[4, 1])


def test_masked_actions_are_never_sampled_and_have_no_probability():
    head = CategoricalHead(specs.DiscreteArray(5))
    logits = tf.constant(np.random.default_rng(1).normal(size=(2000, 5)) * 3, tf.float32)
    legal = np.zeros((2000, 5), np.float32)
    legal[:, [1, 3]] = 1.0
    legal[:1000, 4] = 1.0
    actions, log_probs = head.sample(logits, tf.constant(legal), tf.random.Generator.from_seed(0))
    actions = actions.numpy()
    assert np.all(legal[np.arange(2000), actions] == 1.0)
    assert set(actions[:1000]) == {1, 3, 4} and set(actions[1000:]) == {1, 3}
    probabilities = np.exp(head.log_probs(logits, tf.constant(legal)).numpy())
    assert np.all(probabilities[legal == 0] == 0.0)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(log_probs.numpy(),
                               np.log(probabilities[np.arange(2000), actions]), atol=1e-5)
    # The entropy counts only legal actions: uniform logits over 2 legal ones give log 2.
    entropy = head.entropy(tf.zeros([1, 5]), tf.constant(legal[1000:1001]))
    assert entropy.numpy()[0] == pytest.approx(np.log(2.0), rel=1e-5)


def test_squashed_gaussian_log_probs_match_a_reference_and_actions_keep_to_bounds():
    spec = specs.BoundedArray((2,), np.float32, minimum=[-2.0, 0.0], maximum=[1.0, 4.0])
    head = SquashedGaussianHead(spec)
    rng = np.random.default_rng(2)
    mean = tf.constant(rng.normal(size=(500, 2)), tf.float32)
    log_std = tf.constant(rng.uniform(-1.0, 0.5, size=(500, 2)), tf.float32)
    actions, log_probs = head.sample((mean, log_std), None, tf.random.Generator.from_seed(3))
    actions = actions.numpy()
    assert np.all(actions >= spec.minimum) and np.all(actions <= spec.maximum)
    low, high = np.array(spec.minimum, np.float64), np.array(spec.maximum, np.float64)
    reference = tfd.Independent(tfd.TransformedDistribution(
        tfd.Normal(tf.cast(mean, tf.float64), tf.exp(tf.cast(log_std, tf.float64))),
        tfb.Chain([tfb.Shift(low), tfb.Scale((high - low) / 2), tfb.Shift(np.float64(1.0)), tfb.Tanh()])),
        reinterpreted_batch_ndims=1)
    inside = np.all(np.abs((actions - low) / ((high - low) / 2) - 1.0) < 0.999, axis=-1)
    assert inside.mean() > 0.9
    want = reference.log_prob(actions.astype(np.float64)).numpy()
    # The executor's log-probability is the trainer's for the action actually sent.
    np.testing.assert_allclose(log_probs.numpy()[inside], want[inside], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(head.log_prob((mean, log_std), None, actions).numpy(),
                               log_probs.numpy(), rtol=1e-6)
    # Actions on a bound keep a finite log-probability.
    assert np.all(np.isfinite(head.log_prob((mean[:1], log_std[:1]), None,
                                            tf.constant([[1.0, 0.0]])).numpy()))


def test_squashed_gaussian_entropy_is_the_actions_entropy_and_bounded():
    """The entropy maximised is that of the actions sent (a Monte-Carlo reference), so an entropy
    bonus cannot widen the Gaussian without limit and pin the actions to the bounds."""
    spec = specs.BoundedArray((2,), np.float32, minimum=[-2.0, 0.0], maximum=[1.0, 4.0])
    head = SquashedGaussianHead(spec)
    rng = np.random.default_rng(5)
    mean = tf.constant(rng.normal(size=(6, 2)), tf.float32)
    log_std = tf.constant(rng.uniform(-1.5, 1.5, size=(6, 2)), tf.float32)
    entropy = head.entropy((mean, log_std), None).numpy()
    # Reference: -E[log pi(action)] over 400,000 draws per row, in float64, by the change of
    # variables from u = mean + std * noise: log pi(action) = log N(u) - log |d action / du|.
    noise = rng.standard_normal((400_000, 1, 2))
    std = np.exp(log_std.numpy().astype(np.float64))
    unbounded = mean.numpy().astype(np.float64) + std * noise
    half_range = (np.array(spec.maximum, np.float64) - np.array(spec.minimum, np.float64)) / 2.0
    log_normal = -0.5 * noise ** 2 - np.log(std) - 0.5 * np.log(2.0 * np.pi)
    log_jacobian = np.log(half_range) + 2.0 * (np.log(2.0) - np.abs(unbounded)
                                               - np.log1p(np.exp(-2.0 * np.abs(unbounded))))
    reference = -(log_normal - log_jacobian).sum(axis=-1).mean(axis=0)
    np.testing.assert_allclose(entropy, reference, atol=0.01)
    # It is at most the uniform distribution's over the box, log(3) + log(4), and falls again
    # once the Gaussian is much wider than the squashing's range.
    widths = tf.constant(np.linspace(-3.0, 4.0, 71)[:, None] * np.ones((1, 2)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(widths)
        entropies = head.entropy((tf.zeros_like(widths), widths), None)
        total = tf.reduce_sum(entropies)
    gradient = tape.gradient(total, widths).numpy()
    assert entropies.numpy().max() <= np.log(3.0) + np.log(4.0)
    assert gradient[0].min() > 0 and gradient[-1].max() < 0
    assert entropies.numpy()[-1] < entropies.numpy().max() - 1.0


def test_running_mean_std_matches_numpy_over_masked_batches():
    normaliser = RunningMeanStd()
    rng = np.random.default_rng(4)
    seen = []
    for _ in range(3):
        values = rng.normal(3.0, 2.0, size=(6, 5)).astype(np.float32)
        mask = rng.random((6, 5)) > 0.3
        normaliser.update(tf.constant(values), tf.constant(mask))
        seen.append(values[mask])
    seen = np.concatenate(seen)
    assert normaliser.mean.numpy() == pytest.approx(seen.mean(), rel=1e-6)
    assert normaliser.variance.numpy() == pytest.approx(seen.var(), rel=1e-6)
    x = tf.constant([[1.0, 5.0]])
    np.testing.assert_allclose(normaliser.denormalize(normaliser.normalize(x)).numpy(), x.numpy(),
                               rtol=1e-5)


def make_system(tmp_run_dir, system_class=mappo.MAPPO, env="debug/line_world_v0",
                env_kwargs=None, **config):
    factory = wrappers.make_environment_factory(env, **(env_kwargs or {}))
    config = mappo.MAPPOConfig(**{"critic": system_class.critic, **config})
    return system_class(factory, config=config, run_dir=tmp_run_dir)


def test_surrogate_gradient_raises_actions_with_positive_advantage(tmp_run_dir):
    system = make_system(tmp_run_dir, num_epochs=1, num_minibatches=1)
    networks = system.builder.make_networks()
    trainer = system.builder.make_trainer(networks, iter([]), checkpoint=False)
    observation = tf.constant(np.random.default_rng(5).random((1, 1, 2, 12)), tf.float32)
    legal = tf.ones([1, 1, 2, 3])
    action = tf.constant([[[0, 2]]], tf.int32)
    head = networks.heads["agent"]

    def log_prob():
        outputs = networks.policies["agent"](tf.reshape(observation, [2, 12]))
        return head.log_prob(outputs, tf.reshape(legal, [2, 3]), tf.reshape(action, [2])).numpy()

    before = log_prob()
    batch = {"observation": observation, "legal_actions": legal, "action": action,
             "behaviour_log_prob": tf.constant(before.reshape(1, 1, 2)),
             "advantages": tf.constant([[[1.0, -1.0]]]),
             "critic_inputs": tf.zeros([1, 1, 2, 32]), "value_targets": tf.zeros([1, 1, 2]),
             "old_values": tf.zeros([1, 1, 2]), "is_transition": tf.ones([1, 1, 2], tf.bool)}
    with tf.GradientTape() as tape:
        loss, fetches = trainer.policy_loss("agent", batch)
    gradients = tape.gradient(loss, networks.policies["agent"].trainable_variables)
    assert all(gradient is not None for gradient in gradients)
    assert fetches["clip_fraction"].numpy() == 0.0 and abs(fetches["approx_kl"].numpy()) < 1e-6
    for _ in range(3):
        trainer.minibatch_step("agent", batch)
    after = log_prob()
    assert after[0] > before[0]  # Advantage +1: more likely.
    assert after[1] < before[1]  # Advantage -1: less likely.


def test_a_loss_missing_a_fetch_name_is_a_clear_error(tmp_run_dir):
    class ForgetsClipFraction(mappo.MAPPOTrainer):
        def policy_loss(self, key, batch):
            loss, fetches = super().policy_loss(key, batch)
            del fetches["clip_fraction"]
            return loss, {**fetches, "my_statistic": loss}

    class Builder(mappo.MAPPOBuilder):
        trainer_class = ForgetsClipFraction

    class System(mappo.MAPPO):
        builder_class = Builder

    system = System(wrappers.make_environment_factory("debug/line_world_v0"),
                    run_dir=tmp_run_dir)
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter([]),
                                          checkpoint=False)
    batch = {"observation": tf.zeros([1, 1, 2, 12]), "legal_actions": tf.ones([1, 1, 2, 3]),
             "action": tf.zeros([1, 1, 2], tf.int32), "behaviour_log_prob": tf.zeros([1, 1, 2]),
             "advantages": tf.zeros([1, 1, 2]), "critic_inputs": tf.zeros([1, 1, 2, 32]),
             "value_targets": tf.zeros([1, 1, 2]), "old_values": tf.zeros([1, 1, 2]),
             "is_transition": tf.ones([1, 1, 2], tf.bool)}
    with pytest.raises(ValueError, match=r"ForgetsClipFraction: policy_loss and value_loss must "
                                         r"return.*missing \['clip_fraction'\], not listed "
                                         r"\['my_statistic'\]: .*override "
                                         r"ForgetsClipFraction.fetch_names"):
        trainer.minibatch_step("agent", batch)


def collect(system, client, episodes, seed=0, policy_version=0):
    """Plays `episodes` episodes with a sampling executor writing to replay, acting with
    variables of trainer step `policy_version`; the executor."""
    builder = system.builder
    networks = builder.make_networks()
    networks.policy_version.assign(policy_version)
    executor = builder.make_executor(networks, adder=builder.make_adder(client), seed=seed)
    loop = EnvironmentLoop(system.environment_factory(seed=seed), executor,
                           stop_event=threading.Event())
    for _ in range(episodes):
        loop.run_episode()
    return executor


def test_sequences_carry_the_global_state_and_old_ones_are_dropped(tmp_run_dir):
    system = make_system(tmp_run_dir, sequence_length=7, batch_size=4, num_minibatches=2,
                         max_policy_lag=0)
    (table,) = system.replay()
    assert table.info.sampler_options.fifo and table.info.remover_options.fifo  # A queue.
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        # 10-step episodes: sequences cross episode ends. Acted with the variables of step 5.
        collect(system, client, episodes=6, policy_version=5)
        builder = system.builder
        dataset = builder.make_dataset_iterator(client)
        first, second = next(dataset), next(dataset)
        steps = first.data
        assert steps.observation["env_state"].shape == (4, 7, 20)
        assert steps.observation["agents"]["agent"].observation.shape == (4, 7, 2, 12)
        assert steps.extras["log_prob"]["agent"].shape == (4, 7, 2)
        starts = steps.start_of_episode.numpy()
        assert starts[:, 1:].any()
        # Every step that acted has the version; a final observation's step, zeros (Acme's).
        versions = steps.extras["policy_version"].numpy()
        assert np.all(versions[:, :-1][~starts[:, 1:]] == 5)
        assert np.all(versions[:, :-1][starts[:, 1:]] == 0)
        # The final observation's step keeps its global state (it is the bootstrap's input).
        row, column = np.argwhere(starts[:, 1:])[0]
        assert np.any(steps.observation["env_state"].numpy()[row, column] > 0)

        trainer = builder.make_trainer(builder.make_networks(), iter([first, second]),
                                       checkpoint=False)
        trainer.state["num_steps"].assign(5)
        before = [v.numpy().copy() for v in trainer.networks.policies["agent"].variables]
        result = trainer.step()  # Lag 0: trained on.
        assert result["policy_lag"] == 0 and result["policy_lag_max"] == 0
        assert result["dropped_sequences"] == 0
        assert np.isfinite(result["policy_loss/agent"]) and result["entropy/agent"] > 0
        assert 0 <= result["clip_fraction/agent"] <= 1 and "approx_kl/agent" in result
        changed = [v.numpy().copy() for v in trainer.networks.policies["agent"].variables]
        assert any(not np.array_equal(b, a) for b, a in zip(before, changed))
        result = trainer.step()  # Acted one trainer step ago: too old for max_policy_lag=0.
        assert result["policy_lag"] == 1 and result["dropped_sequences"] == 4
        assert trainer.dropped_sequences == 4
        unchanged = trainer.networks.policies["agent"].variables
        assert all(np.array_equal(b, a.numpy()) for b, a in zip(changed, unchanged))

        # The same two steps in one call (trainer_steps_per_call=2): counted as two, the
        # second sees the first's step count (so drops its batch); the row is the second's.
        builder.config.trainer_steps_per_call = 2
        trainer = builder.make_trainer(builder.make_networks(), iter([first, second]),
                                       checkpoint=False)
        trainer.state["num_steps"].assign(5)
        result = trainer.step()
        assert trainer.num_steps == result["trainer_steps"] == 7
        assert result["policy_lag"] == 1 and result["dropped_sequences"] == 4
        assert trainer.dropped_sequences == 4
    finally:
        server.stop()


def test_a_step_waiting_for_its_batch_has_not_counted_itself(tmp_run_dir):
    """The policy version served to executors moves only with the weights: a compiled step
    blocked on the queue has neither counted itself nor changed the step executors see."""
    system = make_system(tmp_run_dir, sequence_length=7, batch_size=4, num_minibatches=2)
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        builder = system.builder
        trainer = builder.make_trainer(builder.make_networks(),
                                       builder.make_dataset_iterator(client), checkpoint=False)
        collect(system, client, episodes=3, policy_version=0)  # At least one batch.
        assert trainer.step()["policy_lag"] == 0 and trainer.num_steps == 1
        (table,) = system.replay()
        client.reset(table.name)  # What the first step left.

        result = {}
        waiting = threading.Thread(target=lambda: result.update(trainer.step()), daemon=True)
        waiting.start()
        waiting.join(timeout=3.0)
        assert waiting.is_alive()  # Blocked on the empty queue.
        assert trainer.num_steps == 1
        assert trainer.get_variables([POLICY_VERSION]) == [[1]]
        collect(system, client, episodes=3, policy_version=1)
        waiting.join(timeout=60.0)
        assert not waiting.is_alive()
        assert trainer.num_steps == 2 and result["trainer_steps"] == 2
        assert result["policy_lag"] == 0 and result["policy_lag_max"] == 0
    finally:
        server.stop()


def test_topology_is_madqns_with_a_queue_and_picklable(tmp_run_dir):
    system = make_system(tmp_run_dir, system_class=mappo.IPPO)
    program = system.build()
    assert program.name == "ippo"
    check_replay(program, system)
    check_picklable(program)
    assert system.run_config()["config"]["critic"] == "decentralised"


def test_bad_inputs_are_refused_naming_the_problem(tmp_run_dir, line_world_factory):
    for field, value, message in [("clip_epsilon", 0.0, r"clip_epsilon=0.0 is out of range"),
                                  ("num_epochs", 0, r"num_epochs=0 is out of range"),
                                  ("critic", "global", r"critic must be one of"),
                                  ("gae_lambda", 1.5, r"gae_lambda=1.5 is out of range"),
                                  ("max_policy_lag", -1, r"max_policy_lag=-1.0 is out of range"),
                                  ("max_policy_lag", 1.5, r"max_policy_lag must be an integer"),
                                  ("hidden_sizes", (), r"MAPPOConfig.hidden_sizes must be")]:
        with pytest.raises(ValueError, match=message):
            mappo.MAPPOConfig(**{field: value})
    with pytest.raises(ValueError, match=r"batch_size \(10\) must be a multiple of num_minibatches"):
        mappo.MAPPOConfig(batch_size=10, num_minibatches=4)
    with pytest.raises(ValueError, match="IPPO has a decentralised critic"):
        mappo.IPPO(line_world_factory, config=mappo.MAPPOConfig(), run_dir=tmp_run_dir)
    with pytest.raises(ValueError, match="policy 'agent' must return"):
        mappo.MAPPO(line_world_factory, run_dir=tmp_run_dir,
                    network_factory=lambda o, a, c: mappo.make_mlp_networks(
                        o, specs.DiscreteArray(4), c))
    with pytest.raises(ValueError, match="num_executors must be an integer >= 1"):
        mappo.MAPPO(line_world_factory, num_executors=0, run_dir=tmp_run_dir)


def train_in_process(system, executor_steps, evaluations=8, evaluation_episodes=10, acting=None):
    """Alternates acting (one sampling executor) and PPO steps on one process; the greedy
    evaluation returns, `evaluations` of them spread over the run. `acting`: the networks
    the executors act with (kept in step with the trainer's), new ones if None."""
    builder = system.builder
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        acting = acting or builder.make_networks()
        executor = builder.make_executor(acting, adder=builder.make_adder(client), seed=1)
        trainer = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client),
                                       checkpoint=False)
        stop = threading.Event()
        loop = EnvironmentLoop(system.environment_factory(seed=0), executor, stop_event=stop)
        evaluation = EnvironmentLoop(system.environment_factory(evaluation=True, seed=7),
                                     builder.make_evaluation_executor(acting), stop_event=stop)
        table = system.replay()[0].name
        returns, steps = [], 0
        while steps < executor_steps:
            if steps >= len(returns) * executor_steps / evaluations:
                returns.append(np.mean([evaluation.run_episode()["episode_return"]
                                        for _ in range(evaluation_episodes)]))
            steps += loop.run_episode()["episode_length"]
            while client.server_info()[table].current_size >= system.config.batch_size:
                trainer.step()
                for key, policy in trainer.networks.policies.items():
                    for target, source in zip(acting.policies[key].variables, policy.variables):
                        target.assign(source)
                acting.policy_version.assign(trainer.num_steps)
        returns.append(np.mean([evaluation.run_episode()["episode_return"]
                                for _ in range(evaluation_episodes)]))
        return returns
    finally:
        server.stop()


LEARNING_CONFIG = {"batch_size": 8, "sequence_length": 11, "learning_rate": 1e-3,
                   "critic_learning_rate": 1e-3, "seed": 1}


def test_mappo_learns_the_line_world(tmp_run_dir):
    """Random play scores about -3.2 per episode, optimal play -0.24."""
    tf.random.set_seed(0)
    returns = train_in_process(make_system(tmp_run_dir, **LEARNING_CONFIG), 5000)
    last = np.mean(returns[-2:])
    assert last > -1.5 and last > returns[0] + 1.0, returns


@pytest.mark.slow
def test_ippo_learns_the_line_world_with_continuous_actions(tmp_run_dir):
    tf.random.set_seed(0)
    system = make_system(tmp_run_dir, system_class=mappo.IPPO,
                         env_kwargs={"continuous_actions": True}, **LEARNING_CONFIG)
    assert isinstance(system.environment_spec.actions["agent_0"], specs.BoundedArray)
    returns = train_in_process(system, 8000)
    last = np.mean(returns[-2:])
    assert last > -2.0 and last > returns[0] + 0.8, returns


def test_heterogeneous_agents_train_their_own_networks(tmp_run_dir):
    """simple_speaker_listener: a speaker and a listener with different observations and actions."""
    system = make_system(tmp_run_dir, env="mpe/simple_speaker_listener_v4", sequence_length=6,
                         batch_size=2, num_minibatches=1, num_epochs=1)
    builder = system.builder
    networks = builder.make_networks()
    assert sorted(networks.policies) == ["listener", "speaker"]
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        collect(system, client, episodes=1)
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       checkpoint=False)
        result = trainer.step()
        for key in ("listener", "speaker"):
            assert np.isfinite(result[f"policy_loss/{key}"]) and result[f"entropy/{key}"] > 0
    finally:
        server.stop()
