"""Recurrent MAPPO and IPPO: state handling in executors, chunk training from stored states,
bad input, and the memory task (`debug/memory_v0`) only a recurrent policy solves."""

import json
import os
import threading

import numpy as np
import pytest
import reverb
import sonnet as snt
import tensorflow as tf
import tree

from mava_systems import mappo
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.evaluate import load_system
from mava_systems.happo.config import HAPPOConfig
from mava_systems.mappo.networks import mlp_network_factory
import wrappers
from test_mappo import collect, train_in_process
from test_recurrent import best_fixed_return, greedy_returns, leaving_factory

MEMORY = "debug/memory_v0"
# The MAPPO paper's layout (a recurrent critic too), whose stored critic states these tests check.
SMALL = dict(hidden_sizes=(16,), rnn_hidden_size=16, batch_size=4, num_minibatches=2,
             sequence_length=11, chunk_length=5, normalize_values=False, recurrent_critic=True)


def make_system(run_dir, system_class=mappo.MAPPO, env=MEMORY, factory=None, **config):
    config = mappo.MAPPOConfig(**{"critic": system_class.critic, "recurrent": True, **config})
    return system_class(factory or wrappers.make_environment_factory(env), config=config,
                        run_dir=str(run_dir))


class ObservationRecorder:
    """Records each observation an executor writes (the states are stored with it), and the
    extras of each action."""

    def __init__(self):
        self.steps = []
        self.extras = []

    def add_first(self, timestep):
        self.steps.append({"first": True, "observation": timestep.observation})

    def add(self, action, next_timestep, extras=None):
        self.steps.append({"first": False, "observation": next_timestep.observation})
        self.extras.append(extras)

    def reset(self):
        pass


def user_cores(observation_spec, action_spec, critic_input_spec):
    """A user's own (policy, critic) cores: Sonnet DeepRNNs with a GRU (no NumPy twins)."""
    del observation_spec, critic_input_spec
    policy = snt.DeepRNN([snt.Flatten(), snt.Linear(16), tf.nn.relu, snt.GRU(16),
                          snt.Linear(action_spec.num_values)])
    critic = snt.DeepRNN([snt.Flatten(), snt.Linear(16), tf.nn.relu, snt.GRU(16), snt.Linear(1),
                          lambda values: values[:, 0]])
    return policy, critic


@pytest.mark.parametrize("network_factory", [None, user_cores], ids=["reference", "user_core"])
@pytest.mark.parametrize("greedy", [False, True], ids=["sampling", "greedy"])
def test_states_reset_at_every_episode_start_and_only_there(tmp_path, network_factory, greedy):
    system = mappo.MAPPO(leaving_factory, network_factory=network_factory,
                         config=mappo.MAPPOConfig(recurrent=True, **SMALL), run_dir=str(tmp_path))
    networks = system.builder.make_networks()
    recorder = ObservationRecorder()
    executor = mappo.RecurrentMAPPOExecutor(networks, adder=recorder, seed=0, greedy=greedy,
                                            centralised=True)
    assert executor.acts_in_numpy == (network_factory is None)
    loop = EnvironmentLoop(system.environment_factory(seed=3), executor,
                           stop_event=threading.Event())
    for _ in range(3):
        assert loop.run_episode()["episode_length"] == 5
    assert len(recorder.steps) == 3 * 6 and sum(step["first"] for step in recorder.steps) == 3

    policy, critic = networks.policies["agent"], networks.critics["agent"]
    states = None
    for index, step in enumerate(recorder.steps):
        observation = step["observation"]
        stored = {"policy": observation["policy_state"]["agent"],
                  "critic": observation["critic_state"]["agent"]}
        if step["first"]:  # Reset at every episode start ...
            states = tree.map_structure(np.zeros_like, stored)
        # ... and only there: the states carry over agent_1's termination, and agent_1's stay
        # what they were when it left.
        tree.map_structure(lambda s, e: np.testing.assert_allclose(  # pylint: disable=cell-var-from-loop
            s, e, atol=1e-5, err_msg=f"step {index}"), stored, states)
        agents = observation["agents"]["agent"]
        own = agents.observation.reshape(2, -1).astype(np.float32)  # With the agent IDs.
        critic_inputs = np.concatenate([np.tile(own.reshape(1, -1), (2, 1)), own], axis=-1)
        new = {"policy": policy(tf.constant(agents.observation),
                                tree.map_structure(tf.constant, states["policy"]))[1],
               "critic": critic(tf.constant(critic_inputs),
                                tree.map_structure(tf.constant, states["critic"]))[1]}
        present = (1.0 - agents.terminal.reshape(-1))[:, None]
        states = tree.map_structure(lambda n, o: present * np.asarray(n) + (1.0 - present) * o,
                                    new, states)
    first_episode = recorder.steps[:6]
    assert first_episode[3]["observation"]["agents"]["agent"].terminal[1] == 1
    agent_1 = lambda step: tree.flatten(step["observation"]["policy_state"]["agent"])[0][1]
    assert np.abs(agent_1(first_episode[2])).sum() > 0
    for step in first_episode[3:]:
        np.testing.assert_array_equal(agent_1(step), agent_1(first_episode[2]))
    np.testing.assert_array_equal(agent_1(recorder.steps[6]), 0.0)  # No leak.

    # An episode must start with a FIRST timestep.
    environment = system.environment_factory(seed=0)
    timestep = environment.reset()
    executor.observe_first(timestep)
    executor.select_actions(timestep.observation)
    with pytest.raises(ValueError, match="first timestep"):
        executor.observe_first(environment.step({"agent_0": 0, "agent_1": 0}))


def test_replay_gets_the_policy_version_each_action_was_chosen_with(tmp_path):
    """The trainer's policy lag (and `max_policy_lag`) reads it from each stored step."""
    system = make_system(tmp_path, env="debug/line_world_v0", **SMALL)
    networks = system.builder.make_networks()
    recorder = ObservationRecorder()
    executor = system.builder.make_executor(networks, adder=recorder, seed=0)
    assert isinstance(executor, mappo.RecurrentMAPPOExecutor) and executor.acts_in_numpy
    loop = EnvironmentLoop(system.environment_factory(seed=0), executor,
                           stop_event=threading.Event())
    for version in (7, 12):
        networks.policy_version.assign(version)
        loop.run_episode()  # Its start re-reads the weights (there is no variable client).
    assert [int(extras["policy_version"]) for extras in recorder.extras] == [7] * 10 + [12] * 10


def sampled_steps(system, episodes=12):
    """(networks, one batch of stored sequences), played by those networks."""
    builder = system.builder
    server = reverb.Server(system.replay(), port=None)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        executor = collect(system, client, episodes)
        return executor, next(builder.make_dataset_iterator(client)).data
    finally:
        server.stop()


@pytest.mark.parametrize("system_class", [mappo.MAPPO, mappo.IPPO], ids=["mappo", "ippo"])
def test_chunk_unrolls_give_the_executors_log_probs_and_values(tmp_path, system_class):
    # line_world: 10-step episodes in sequences of 11 steps cut into chunks of 5, so chunks
    # cross episode starts and most start mid-episode (from a stored, non-zero state).
    system = make_system(tmp_path, system_class, env="debug/line_world_v0", **SMALL)
    executor, steps = sampled_steps(system)
    networks = executor._networks  # pylint: disable=protected-access
    builder = system.builder
    trainer = builder.make_trainer(networks, iter([]), checkpoint=False)
    fresh = tf.ones([SMALL["batch_size"]], tf.bool)
    batch = trainer.prepare("agent", steps, fresh)
    assert batch["observation"].shape[:2] == (SMALL["batch_size"] * 2, 5)
    starts_chunk = batch["resets"].numpy()[:, 0]
    assert not starts_chunk.all()
    mask = batch["is_transition"].numpy()
    # The policy unrolled over each chunk from its stored state gives the behaviour
    # log-probabilities the executor recorded, at every transition.
    head = networks.heads["agent"]
    log_probs = head.log_prob(trainer.policy_outputs("agent", batch), batch["legal_actions"],
                              batch["action"]).numpy()
    np.testing.assert_allclose(log_probs[mask], batch["behaviour_log_prob"].numpy()[mask],
                               atol=1e-4)
    assert mask.sum() >= mask.size * 0.8
    # The critic unrolled over each chunk gives the values of the sequence's unroll, and both
    # are the executor's critic stepped from the state stored at each step.
    chunk_values = trainer.critic_values("agent", batch).numpy()
    np.testing.assert_allclose(chunk_values, batch["old_values"].numpy(), atol=1e-4)
    twin = executor._numpy_critics["agent"]  # pylint: disable=protected-access
    inputs = trainer.critic_inputs("agent", steps).numpy()
    stored = steps.observation["critic_state"]["agent"].numpy()
    values = trainer.sequence_values("agent", steps, tf.constant(inputs)).numpy()
    for item in range(inputs.shape[0]):
        for t in range(inputs.shape[1]):
            expected, _ = twin(inputs[item, t], stored[item, t])
            np.testing.assert_allclose(values[item, t], expected, atol=1e-4)


def layer_sizes(module):
    """The output sizes of a module's weight matrices, in order."""
    return [int(variable.shape[1]) for variable in module.trainable_variables
            if len(variable.shape) == 2]


def test_the_default_layout_is_epymarls_gru_agent_with_an_mlp_critic(tmp_path):
    """One input layer before the policy's GRU and a feedforward critic, whose states nobody
    carries: chunk unrolls still give the executors' log-probabilities, and the MLP critic's
    values over chunks are the sequence's."""
    small = {**SMALL, "hidden_sizes": (16, 8), "recurrent_critic": False}
    system = make_system(tmp_path, env="debug/line_world_v0", **small)
    assert "critic_state" not in system.builder.sequence_environment_spec().observations
    executor, steps = sampled_steps(system, episodes=5)
    networks = executor._networks  # pylint: disable=protected-access
    assert not networks.recurrent_critics and executor.critic_states is None
    assert "critic_state" not in steps.observation
    policy, critic = networks.policies["agent"], networks.critics["agent"]
    assert isinstance(critic, mappo.networks.ValueCritic)
    assert layer_sizes(policy.input_layer) == [16] and layer_sizes(critic) == [16, 8, 1]
    trainer = system.builder.make_trainer(networks, iter([]), checkpoint=False)
    batch = trainer.prepare("agent", steps, tf.ones([small["batch_size"]], tf.bool))
    assert "critic_state" not in batch and batch["observation"].shape[:2] == (8, 5)
    mask = batch["is_transition"].numpy()
    log_probs = networks.heads["agent"].log_prob(
        trainer.policy_outputs("agent", batch), batch["legal_actions"], batch["action"]).numpy()
    np.testing.assert_allclose(log_probs[mask], batch["behaviour_log_prob"].numpy()[mask],
                               atol=1e-4)
    np.testing.assert_allclose(trainer.critic_values("agent", batch).numpy(),
                               batch["old_values"].numpy(), atol=1e-5)
    # The MAPPO paper's layout stays reachable by config: every hidden layer before the GRU.
    paper = make_system(tmp_path / "paper", env="debug/line_world_v0",
                        **{**small, "rnn_input_layers": None, "recurrent_critic": True})
    paper_networks = paper.builder.make_networks()
    assert layer_sizes(paper_networks.policies["agent"].input_layer) == [16, 8]
    assert paper_networks.recurrent_critics


def test_steps_that_are_not_transitions_contribute_nothing(tmp_path):
    # memory_v0's episodes end terminally: a final observation's step is only padding
    # (Acme's zeros for its action, log-probability, reward) and its value is never bootstrapped.
    system = make_system(tmp_path, **SMALL)
    executor, steps = sampled_steps(system, episodes=20)
    trainer = system.builder.make_trainer(executor._networks, iter([]),  # pylint: disable=protected-access
                                          checkpoint=False)
    finals = np.zeros(steps.start_of_episode.shape, bool)
    finals[:, :-1] = steps.start_of_episode.numpy()[:, 1:]
    assert finals.any() and not finals.all()
    rng = np.random.default_rng(0)

    def garbled(value):
        array = value.numpy()
        where = finals.reshape(finals.shape + (1,) * (array.ndim - 2))
        noise = (rng.integers(0, 2, array.shape) if array.dtype.kind in "iu"
                 else rng.uniform(-5, 5, array.shape)).astype(array.dtype)
        return tf.constant(np.where(where, noise, array))

    agents = steps.observation["agents"]["agent"]
    garbage = steps._replace(
        observation={**steps.observation,
                     "agents": {"agent": agents._replace(observation=garbled(agents.observation))},
                     "policy_state": tree.map_structure(garbled, steps.observation["policy_state"]),
                     "critic_state": tree.map_structure(garbled, steps.observation["critic_state"])},
        action=tree.map_structure(garbled, steps.action),
        reward=tree.map_structure(garbled, steps.reward),
        extras={**steps.extras, "log_prob": tree.map_structure(garbled, steps.extras["log_prob"])})
    fresh = tf.ones([SMALL["batch_size"]], tf.bool)
    networks = trainer.networks
    variables = (networks.policies["agent"].trainable_variables
                 + networks.critics["agent"].trainable_variables)
    results = []
    for data in (steps, garbage):
        with tf.GradientTape() as tape:
            batch = trainer.prepare("agent", data, fresh)
            loss = trainer.policy_loss("agent", batch)[0] + trainer.value_loss("agent", batch)[0]
        results.append((loss.numpy(), [g.numpy() for g in tape.gradient(loss, variables)]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for first, second in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(first, second, rtol=1e-4, atol=1e-6)


def test_recurrent_mappo_solves_the_memory_task_and_feedforward_mappo_cannot(tmp_path):
    """Each agent sees its cue at the first step only and must pick it 4 steps later:
    optimum 2.0, chance 0.5."""
    config = dict(batch_size=8, sequence_length=11, learning_rate=1e-3,
                  critic_learning_rate=1e-3, seed=1, hidden_sizes=(32,), rnn_hidden_size=32)
    results = {}
    for recurrent, executor_steps in ((True, 3000), (False, 1000)):
        tf.random.set_seed(0)
        system = make_system(tmp_path / str(recurrent), recurrent=recurrent, **config)
        acting = system.builder.make_networks()
        train_in_process(system, executor_steps, evaluations=1, acting=acting)
        results[recurrent] = greedy_returns(system, acting)
    returns, _ = results[True]
    assert returns.mean() >= 0.95 * 2.0, returns.mean()
    returns, cues = results[False]
    assert returns.mean() <= best_fixed_return(cues) + 1e-9 < 1.0


def test_bad_recurrent_input_fails_before_any_process(tmp_path):
    factory = wrappers.make_environment_factory(MEMORY)
    with pytest.raises(ValueError, match=r"network 'agent''s policy \(DeepRNN\) is a recurrent "
                                         r"core .*set the config's recurrent=True"):
        mappo.MAPPO(factory, network_factory=user_cores, run_dir=str(tmp_path / "a"))

    def recurrent_policy_only(observation_spec, action_spec, critic_input_spec):
        _, critic = mlp_network_factory((8,), 0.0)(observation_spec, action_spec,
                                                   critic_input_spec)
        return user_cores(observation_spec, action_spec, critic_input_spec)[0], critic

    with pytest.raises(ValueError, match=r"recurrent=True, but network 'agent''s critic "
                                         r"\(ValueCritic\) is not a recurrent core"):
        mappo.IPPO(factory, network_factory=recurrent_policy_only,
                   config=mappo.MAPPOConfig(critic="decentralised", recurrent=True,
                                            recurrent_critic=True),
                   run_dir=str(tmp_path / "b"))
    with pytest.raises(ValueError, match=r"network 'agent''s critic \(DeepRNN\) is a recurrent "
                                         r"core .*set the config's recurrent_critic=True"):
        mappo.MAPPO(factory, network_factory=user_cores,
                    config=mappo.MAPPOConfig(recurrent=True), run_dir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match=r"rnn_input_layers \(3\) must be at most the number "
                                         r"of hidden_sizes \(2"):
        mappo.MAPPOConfig(recurrent=True, rnn_input_layers=3)
    with pytest.raises(ValueError, match=r"recurrent_critic must be True with recurrent=True"):
        HAPPOConfig(recurrent=True, recurrent_critic=False)
    with pytest.raises(ValueError, match=r"rnn_hidden_size=0 is out of range"):
        mappo.MAPPOConfig(recurrent=True, rnn_hidden_size=0)
    with pytest.raises(ValueError, match=r"chunk_length \(3\) must divide sequence_length - 1 "
                                         r"\(10\)"):
        mappo.MAPPOConfig(recurrent=True, sequence_length=11, chunk_length=3)
    with pytest.raises(ValueError, match=r"chunk_length=0(\.0)? is out of range"):
        mappo.MAPPOConfig(recurrent=True, chunk_length=0)
    with pytest.raises(ValueError, match=r"chunk_length \(5\) applies to recurrent networks only"):
        mappo.MAPPOConfig(sequence_length=11, chunk_length=5)
    assert not os.listdir(tmp_path)  # Nothing written anywhere.


def test_run_json_records_the_recurrent_shapes_and_a_feedforward_config_cannot_resume(tmp_path):
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    run_dir = str(tmp_path / "run")
    config = dict(recurrent=True, rnn_hidden_size=24, hidden_sizes=(32,), recurrent_critic=True)
    mappo.MAPPO(factory, config=mappo.MAPPOConfig(**config), run_dir=run_dir).prepare_run_dir()
    with open(os.path.join(run_dir, "run.json")) as file:
        saved = json.load(file)
    variables = json.dumps(saved["network_variables"])
    assert "[32, 72]" in variables and "[24, 72]" in variables  # The GRUs: 3 x 24 gates.
    items = json.dumps(saved["replay_items"])
    assert "policy_state" in items and "critic_state" in items
    with pytest.raises(ValueError, match=r"holds a run that this configuration cannot continue"):
        mappo.MAPPO(factory, config=mappo.MAPPOConfig(hidden_sizes=(32,)),
                    run_dir=run_dir).prepare_run_dir()
    mappo.MAPPO(factory, config=mappo.MAPPOConfig(**config), run_dir=run_dir).prepare_run_dir()


def test_a_run_saved_before_the_layout_fields_is_evaluated_with_its_layout_or_refused_clearly(
        tmp_path):
    """Runs recorded before `rnn_input_layers` and `recurrent_critic` existed had every hidden
    layer before the GRU and a recurrent critic: `evaluate` rebuilds that, and a resume at
    today's defaults is refused naming the settings that continue it."""
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    run_dir = str(tmp_path / "run")
    old_layout = dict(recurrent=True, rnn_hidden_size=8, hidden_sizes=(16, 8),
                      rnn_input_layers=None, recurrent_critic=True)
    mappo.MAPPO(factory, config=mappo.MAPPOConfig(**old_layout),
                run_dir=run_dir).prepare_run_dir()
    path = os.path.join(run_dir, "run.json")
    with open(path) as file:
        saved = json.load(file)
    del saved["config.rnn_input_layers"], saved["config.recurrent_critic"]  # As saved before.
    with open(path, "w") as file:
        json.dump(saved, file)
    system = load_system(run_dir)
    assert (system.config.rnn_input_layers, system.config.recurrent_critic) == (None, True)
    assert system.builder.make_networks().recurrent_critics
    new_layout = {**old_layout, "rnn_input_layers": 1, "recurrent_critic": False}
    with pytest.raises(ValueError, match=r"cannot continue \(network_variables.*It was saved "
                                         r"before config.recurrent_critic, "
                                         r"config.rnn_input_layers existed, and ran as "
                                         r"recurrent_critic=True, rnn_input_layers=None"):
        mappo.MAPPO(factory, config=mappo.MAPPOConfig(**new_layout),
                    run_dir=run_dir).prepare_run_dir()
    mappo.MAPPO(factory, config=mappo.MAPPOConfig(**old_layout), run_dir=run_dir).prepare_run_dir()
