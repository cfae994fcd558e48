"""Recurrent MADQN, VDN and QMIX: state handling in executors, sequence training, bad input.

The learning tests (`debug/memory_v0`) fill a local replay with uniformly
random play and train in this process, as test_value_decomposition_training.py
does, then play greedily.
"""

import json
import os
import threading
from typing import Any, Dict, List, Optional

from acme.utils import counting
from gymnasium import spaces
import numpy as np
from pettingzoo.utils.env import ParallelEnv
import pytest
import sonnet as snt
import tensorflow as tf
import tree

from mava_systems import madqn, mappo, qmix, vdn
from mava_systems.mappo.networks import mlp_network_factory
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.data.sequence_adder import STEP_MASK
from mava_systems.data.sequences import n_step_targets
import wrappers
from wrappers.memory_game import chance_return
from test_value_decomposition_training import replay_of_uniform_play

SMALL = dict(hidden_sizes=(16,), rnn_hidden_size=16, min_replay_size=20, samples_per_insert=None,
             prefetch_size=0, sequence_batch_size=16, batch_size=16)


class LeavingEnv(ParallelEnv):
    """Two agents see random 3-vectors; agent_1 terminates after its 2nd action, agent_0 is
    truncated after its 5th (a time limit)."""

    metadata = {"name": "leaving_v0", "is_parallelizable": True}

    def __init__(self):
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents = []
        self._rng = np.random.default_rng(0)
        self._step = 0

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._step = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions):
        self._step += 1
        agents = list(self.agents)
        terminated = {agent: agent == "agent_1" and self._step == 2 for agent in agents}
        truncated = {agent: agent == "agent_0" and self._step == 5 for agent in agents}
        self.agents = [agent for agent in agents if not (terminated[agent] or truncated[agent])]
        return (self._observations(agents), {agent: 0.0 for agent in agents}, terminated,
                truncated, {agent: {} for agent in agents})

    def state(self):
        return np.zeros(6, np.float32)

    def _observations(self, agents=None):
        return {agent: self._rng.uniform(-1, 1, 3).astype(np.float32)
                for agent in (agents if agents is not None else self.agents)}


def leaving_factory(evaluation=False, seed=None):
    return wrappers.ParallelEnvWrapper(LeavingEnv(), seed=seed)


class RecordingAdder:
    """Records what an executor writes: each observation with its extras."""

    stores_environment_extras = False

    def __init__(self):
        self.steps: List[Dict[str, Any]] = []

    def add_first(self, timestep, extras=None):
        self.steps.append({"first": True, "observation": timestep.observation, **extras})

    def add(self, action, next_timestep, extras=None):
        self.steps.append({"first": False, "observation": next_timestep.observation, **extras})

    def reset(self):
        pass


def user_gru_core(observation_spec, action_spec):
    """A user's own recurrent core: a Sonnet DeepRNN with a GRU (it has no NumPy twin)."""
    del observation_spec
    return snt.DeepRNN([snt.Flatten(), snt.Linear(16), tf.nn.relu, snt.GRU(16),
                        snt.Linear(action_spec.num_values)])


@pytest.mark.parametrize("network_factory", [None, user_gru_core], ids=["reference", "user_core"])
def test_states_reset_at_every_episode_start_and_only_there(tmp_path, network_factory):
    system = madqn.MADQN(leaving_factory, network_factory=network_factory,
                         config=madqn.MADQNConfig(recurrent=True, **SMALL), run_dir=str(tmp_path))
    builder = system.builder
    networks = builder.make_networks()
    adder = RecordingAdder()
    executor = builder.make_executor(networks, ConstantEpsilon(0.5), adder=adder, seed=0)
    assert executor.acts_in_numpy == (network_factory is None)
    loop = EnvironmentLoop(leaving_factory(seed=3), executor, stop_event=threading.Event())
    for _ in range(3):
        assert loop.run_episode()["episode_length"] == 5
    assert len(adder.steps) == 3 * 6 and [step["first"] for step in adder.steps].count(True) == 3

    network = networks.q_networks["agent"]
    state = None
    for index, step in enumerate(adder.steps):
        stored = step["core_state"]["agent"]
        if step["first"]:
            state = tree.map_structure(np.zeros_like, stored)  # Reset at every episode start ...
        # ... and only there: the state carries over agent_1's termination, and agent_1's stays
        # what it was when it left.
        tree.map_structure(lambda s, e: np.testing.assert_allclose(  # pylint: disable=cell-var-from-loop
            s, e, atol=1e-5, err_msg=f"step {index}"), stored, state)
        observation = step["observation"]["agent"]
        _, new_state = network(tf.constant(observation.observation),
                               tree.map_structure(tf.constant, state))
        present = (1.0 - observation.terminal.reshape(-1))[:, None]
        state = tree.map_structure(lambda new, old: present * new.numpy() + (1.0 - present) * old,
                                   new_state, state)
    # agent_1 left after its 2nd action, with a state that is not the initial one.
    first_episode = adder.steps[:6]
    assert first_episode[3]["observation"]["agent"].terminal[1] == 1
    agent_1_state = lambda step: tree.flatten(step["core_state"]["agent"])[0][1]
    assert np.abs(agent_1_state(first_episode[2])).sum() > 0
    for step in first_episode[3:]:
        np.testing.assert_array_equal(agent_1_state(step), agent_1_state(first_episode[2]))
    # ... which does not leak into the next episode.
    np.testing.assert_array_equal(tree.flatten(adder.steps[6]["core_state"]["agent"])[0], 0.0)


def test_executor_refuses_a_timestep_that_does_not_start_an_episode(tmp_path):
    system = madqn.MADQN(leaving_factory, config=madqn.MADQNConfig(recurrent=True, **SMALL),
                         run_dir=str(tmp_path))
    executor = system.builder.make_executor(system.builder.make_networks(), ConstantEpsilon(0.0))
    environment = leaving_factory(seed=0)
    timestep = environment.reset()
    executor.observe_first(timestep)
    executor.select_actions(timestep.observation)
    timestep = environment.step({"agent_0": 0, "agent_1": 0})
    with pytest.raises(ValueError, match="first timestep"):
        executor.observe_first(timestep)


def memory_system(system_class, config_class, run_dir, recurrent, seed=0, sequence_length=6,
                  environment="debug/memory_v0"):
    config = config_class(recurrent=recurrent, n_step=1, discount=0.99, batch_size=32,
                          sequence_batch_size=32, min_replay_size=100, samples_per_insert=None,
                          prefetch_size=0, learning_rate=3e-3, huber_loss_parameter=None,
                          target_update_period=50, hidden_sizes=(32,), rnn_hidden_size=32,
                          sequence_length=sequence_length, burn_in_length=2, seed=seed)
    return system_class(wrappers.make_environment_factory(environment), config=config,
                        run_dir=run_dir)


def greedy_returns(system, networks, episodes=100, seed=100):
    """(returns, cues) of `episodes` greedy episodes of the memory task."""
    executor = system.builder.make_evaluation_executor(networks, seed=seed)
    environment = system.environment_factory(evaluation=True, seed=seed)
    loop = EnvironmentLoop(environment, executor, stop_event=threading.Event())
    returns, cues = [], []
    for _ in range(episodes):
        returns.append(loop.run_episode()["episode_return"])
        cues.append(tuple(environment.environment._cues))  # pylint: disable=protected-access
    return np.array(returns), cues


def best_fixed_return(cues, n_agents=2):
    """The best return on these episodes of agents that always take the same actions: what
    agents without memory can reach at most."""
    return max(np.mean([n_agents * float(cue == actions) for cue in cues])
               for actions in set(cues))


@pytest.mark.parametrize("system_class,config_class", [(madqn.MADQN, madqn.MADQNConfig),
                                                       (qmix.QMIX, qmix.QMIXConfig)],
                         ids=["madqn", "qmix"])
def test_recurrent_agents_solve_the_memory_task_and_feedforward_ones_cannot(
        tmp_path, system_class, config_class):
    results = {}
    for recurrent, trainer_steps in ((True, 200), (False, 100)):
        system = memory_system(system_class, config_class, str(tmp_path / str(recurrent)),
                               recurrent)
        builder = system.builder
        with replay_of_uniform_play(system, episodes=300) as client:
            networks = builder.make_networks()
            trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                           counter=counting.Counter(), checkpoint=False)
            for _ in range(trainer_steps):
                trainer.step()
        results[recurrent] = greedy_returns(system, networks)
    optimum = 2.0
    returns, cues = results[True]
    assert returns.mean() >= 0.95 * optimum, returns.mean()
    returns, cues = results[False]
    assert chance_return() == 0.5
    assert returns.mean() <= best_fixed_return(cues) + 1e-9 < optimum / 2


def sampled_batch(system, client):
    """One batch of stored sequences as the trainer sees it."""
    return next(system.builder.make_dataset_iterator(client)).data


def test_stored_state_unrolls_give_the_executors_q_values_and_padding_is_masked(tmp_path):
    # Episodes of 10 actions in sequences of 8, started every 5 steps: steps 0-7, then 5-10
    # (its first 2 a burn-in from the stored state) and 2 steps of padding.
    system = memory_system(qmix.QMIX, qmix.QMIXConfig, str(tmp_path), recurrent=True,
                           sequence_length=8, environment="debug/line_world_v0")
    builder = system.builder
    networks = builder.make_networks()
    # Played by the networks the trainer unrolls: the stored states are theirs.
    with replay_of_uniform_play(system, episodes=40, networks=networks) as client:
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       counter=counting.Counter(), checkpoint=False)
        steps = sampled_batch(system, client)
    # Burn-in from the stored state at each sequence's first step reaches, at every step with an
    # action, the Q-values of the executor's network acting from the state stored there.
    values = trainer.sequence_q_values("agent", steps)
    executor = builder.make_executor(networks, ConstantEpsilon(0.0))
    twin = executor._numpy_networks["agent"]  # pylint: disable=protected-access
    twin.refresh()
    mask = steps.extras[STEP_MASK].numpy()
    observations = steps.observation["agent"].observation.numpy()
    core_states = steps.extras["core_state"]["agent"].numpy()
    batch, length, num_agents = observations.shape[:3]
    q_values = values.q_values.numpy().reshape(length, batch, num_agents, -1)
    checked = 0
    for item in range(batch):
        for t in range(length):
            if mask[item, t]:
                expected, _ = twin(observations[item, t], core_states[item, t])
                np.testing.assert_allclose(q_values[t, item], expected, atol=1e-4)
                checked += 1
    assert checked >= batch * 2
    starts_episode = steps.start_of_episode.numpy()[:, 0]
    assert starts_episode.any() and not starts_episode.all()

    # Padding (after an episode's final observation) contributes nothing to the loss.
    padding = np.zeros_like(mask, bool)
    padding[:, 1:] = (mask[:, 1:] == 0) & (mask[:, :-1] == 0)
    assert padding.any() and not padding.all()
    rng = np.random.default_rng(0)

    def garbled(value):
        array = value.numpy()
        noise = rng.uniform(-5, 5, array.shape).astype(array.dtype)
        where = padding.reshape(padding.shape + (1,) * (array.ndim - 2))
        return tf.constant(np.where(where, noise if array.dtype != np.int32 else 1, array))

    garbage = steps._replace(
        observation=tree.map_structure(garbled, steps.observation),
        action=tree.map_structure(garbled, steps.action),
        reward=tree.map_structure(garbled, steps.reward),
        discount=tree.map_structure(garbled, steps.discount),
        extras={**steps.extras, "core_state": tree.map_structure(
            garbled, steps.extras["core_state"]),
                "env_state": garbled(steps.extras["env_state"])})
    weights = tf.ones([batch])
    variables = [v for module in (networks.q_networks["agent"], trainer.modules["mixer"].online)
                 for v in module.trainable_variables]
    results = []
    for data in (steps, garbage):
        with tf.GradientTape() as tape:
            loss = trainer.joint_loss(data, weights).loss
        results.append((loss.numpy(), [g.numpy() for g in tape.gradient(loss, variables)]))
    assert results[0][0] > 0
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    for first, second in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(first, second, rtol=1e-5, atol=1e-7)
    # MADQN's per-network loss masks the same steps.
    losses = [trainer_loss.numpy() for trainer_loss in (
        madqn.RecurrentMADQNTrainer.network_loss(trainer, "agent", data)[0]
        for data in (steps, garbage))]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-6)


LINE_WORLD = "debug/line_world_v0"


@pytest.mark.parametrize("overrides,match", [
    (dict(rnn_hidden_size=0), r"rnn_hidden_size=0 is out of range"),
    (dict(sequence_length=5, burn_in_length=4), r"sequence_length \(5\) must be at least "
                                                r"burn_in_length \+ 2 \(6\)"),
    (dict(recurrent=True, sequence_length=8, burn_in_length=2, n_step=6),
     r"n_step \(6\) must be below sequence_length - burn_in_length \(6\)"),
])
def test_bad_recurrent_settings_fail_in_the_config(overrides, match):
    for config_class in (madqn.MADQNConfig, vdn.VDNConfig, qmix.QMIXConfig):
        with pytest.raises(ValueError, match=match):
            config_class(**overrides)


def test_a_network_that_does_not_fit_the_recurrent_switch_fails_before_any_process(tmp_path):
    factory = wrappers.make_environment_factory(LINE_WORLD)
    with pytest.raises(ValueError, match=r"recurrent core .*set the config's recurrent=True"):
        qmix.QMIX(factory, network_factory=user_gru_core, run_dir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match=r"recurrent=True, but network 'agent' \(MLPQNetwork\) "
                                         r"is not a recurrent core"):
        madqn.MADQN(factory, network_factory=madqn.make_mlp_q_network,
                    config=madqn.MADQNConfig(recurrent=True), run_dir=str(tmp_path / "b"))

    def recurrent_policy(observation_spec, action_spec, critic_input_spec):
        _, critic = mlp_network_factory((8,), 0.0)(observation_spec, action_spec,
                                                   critic_input_spec)
        return user_gru_core(observation_spec, action_spec), critic

    with pytest.raises(ValueError, match=r"network 'agent''s policy \(DeepRNN\) is a recurrent "
                                         r"core .*set the config's recurrent=True"):
        mappo.MAPPO(factory, network_factory=recurrent_policy, run_dir=str(tmp_path / "c"))
    assert not os.listdir(tmp_path)  # Nothing written anywhere.


def test_run_json_records_the_recurrent_shapes_and_a_feedforward_config_cannot_resume(tmp_path):
    factory = wrappers.make_environment_factory(LINE_WORLD)
    run_dir = str(tmp_path / "run")
    recurrent = qmix.QMIX(factory, config=qmix.QMIXConfig(recurrent=True, rnn_hidden_size=24),
                          run_dir=run_dir)
    recurrent.prepare_run_dir()
    with open(os.path.join(run_dir, "run.json")) as file:
        saved = json.load(file)
    # The GRU's variables: inputs and state to 3 x 24 gates.
    assert [64, 72] in saved["network_variables"]["agent"]
    assert [24, 72] in saved["network_variables"]["agent"]
    assert "core_state" in saved["replay_items"]["priority_table"]
    feedforward = qmix.QMIX(factory, config=qmix.QMIXConfig(), run_dir=run_dir)
    with pytest.raises(ValueError, match=r"holds a run that this configuration cannot continue "
                                         r"\(.*network_variables"):
        feedforward.prepare_run_dir()
    # The recurrent configuration still resumes it.
    qmix.QMIX(factory, config=qmix.QMIXConfig(recurrent=True, rnn_hidden_size=24),
              run_dir=run_dir).prepare_run_dir()


def test_n_step_targets_stop_at_the_final_observation_and_the_sequence_end():
    # One column, 6 steps: actions at steps 0-3, step 4 is the episode's final observation
    # (mask 0; its bootstrap value counts only through a discount of 1, a time limit), step 5
    # padding.
    rewards = tf.constant([[1.0], [2.0], [3.0], [4.0], [0.0], [0.0]])
    values = tf.constant([[10.0], [20.0], [30.0], [40.0], [50.0], [99.0]])
    mask = tf.constant([[1.0], [1.0], [1.0], [1.0], [0.0], [0.0]])
    g = 0.5
    truncated = tf.constant([[1.0], [1.0], [1.0], [1.0], [0.0], [0.0]])
    targets = n_step_targets(rewards, truncated, values, mask, n_step=2, discount=g).numpy()[:, 0]
    np.testing.assert_allclose(targets[:4], [1 + g * 2 + g * g * 30, 2 + g * 3 + g * g * 40,
                                             3 + g * 4 + g * g * 50, 4 + g * 50])
    terminated = tf.constant([[1.0], [1.0], [1.0], [0.0], [0.0], [0.0]])
    targets = n_step_targets(rewards, terminated, values, mask, n_step=2, discount=g).numpy()[:, 0]
    np.testing.assert_allclose(targets[2:4], [3 + g * 4, 4])
    # Without an episode end, the sequence's last step is the furthest a target reaches.
    targets = n_step_targets(rewards, tf.ones_like(mask), values, tf.ones_like(mask), n_step=3,
                             discount=g).numpy()[:, 0]
    np.testing.assert_allclose(targets[3:], [4 + g * 0 + g * g * 99, 0 + g * 99])


def test_the_reference_networks_own_unroll_equals_stepping_it():
    network = madqn.networks.RecurrentQNetwork([16], gru_size=8, num_actions=3)
    observations = tf.random.stateless_normal([7, 5, 2, 3], seed=[1, 2])  # [T, B, *obs]
    state = tf.random.stateless_normal([5, 8], seed=[3, 4])
    stepped, stepped_state = snt.dynamic_unroll(network, observations, state)
    unrolled, unrolled_state = network.unroll(observations, state)  # Known T: in the graph.
    np.testing.assert_allclose(unrolled, stepped, atol=1e-5)
    np.testing.assert_allclose(unrolled_state, stepped_state, atol=1e-5)
    unknown_length = tf.function(network.unroll, input_signature=[
        tf.TensorSpec([None, None, 2, 3]), tf.TensorSpec([None, 8])])
    looped, looped_state = unknown_length(observations, state)  # Unknown T: a graph loop.
    np.testing.assert_allclose(looped, stepped, atol=1e-5)
    np.testing.assert_allclose(looped_state, stepped_state, atol=1e-5)
