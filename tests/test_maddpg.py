"""MADDPG and MAD4PG: projection, action bounds, critic inputs, input checks, learning, resuming.

Learning runs in this process on `debug/reach_v0` (2 agents, 10 steps, team
reward minus the mean distance to the goals): random play returns about -5.5
per episode and moving straight to the goals about -0.36. An exploring executor
writes to a local replay and the trainer trains between its episodes; the
greedy policies are then evaluated.
"""

import contextlib
import gc
import os
import re
import threading

from acme.tf import networks as acme_networks
from acme.utils import counting
from dm_env import specs
import numpy as np
import pytest
import reverb
import tensorflow as tf

from mava_systems import maddpg
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.maddpg.training import categorical_critic_loss
from mava_systems.specs import MAEnvironmentSpec
import wrappers
from wrappers import OLT

REACH = "debug/reach_v0"
SMALL = dict(policy_hidden_sizes=(64, 64), critic_hidden_sizes=(64, 64))


def reference_projection(rewards, discounts, probabilities, atoms):
    """C51's projection, atom by atom: each target atom r + d * z_j, clipped to the support,
    splits its probability between the two support atoms around it, by proximity."""
    vmin, vmax, spacing = atoms[0], atoms[-1], atoms[1] - atoms[0]
    projected = np.zeros_like(probabilities)
    for row, (reward, discount) in enumerate(zip(rewards, discounts)):
        for atom, probability in zip(atoms, probabilities[row]):
            position = (np.clip(reward + discount * atom, vmin, vmax) - vmin) / spacing
            lower, upper = int(np.floor(position)), int(np.ceil(position))
            if lower == upper:
                projected[row, lower] += probability
            else:
                projected[row, lower] += probability * (upper - position)
                projected[row, upper] += probability * (position - lower)
    return projected


def test_mad4pg_critic_loss_is_the_cross_entropy_with_the_projected_target():
    rng = np.random.default_rng(0)
    atoms = np.linspace(-10.0, 10.0, 11).astype(np.float32)
    batch = 64
    # Rewards and discounts that send atoms between, onto, and beyond the support's ends.
    rewards = np.concatenate([rng.uniform(-15, 15, batch - 4), [0.0, 2.0, 30.0, -30.0]])
    discounts = np.concatenate([rng.uniform(0, 1, batch - 4), [1.0, 1.0, 0.5, 0.0]])
    rewards, discounts = rewards.astype(np.float32), discounts.astype(np.float32)
    logits_t = rng.normal(size=(batch, atoms.size)).astype(np.float32)
    logits_tm1 = rng.normal(size=(batch, atoms.size)).astype(np.float32)
    q_t = acme_networks.DiscreteValuedDistribution(tf.constant(atoms), tf.constant(logits_t))
    q_tm1 = acme_networks.DiscreteValuedDistribution(tf.constant(atoms), tf.constant(logits_tm1))

    loss = categorical_critic_loss(q_tm1, tf.constant(rewards), tf.constant(discounts), q_t).numpy()

    probabilities = np.exp(logits_t) / np.exp(logits_t).sum(axis=1, keepdims=True)
    target = reference_projection(rewards, discounts, probabilities, atoms)
    np.testing.assert_allclose(target.sum(axis=1), 1.0, rtol=1e-5)
    log_predicted = logits_tm1 - np.log(np.exp(logits_tm1).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -(target * log_predicted).sum(axis=1), rtol=1e-4, atol=1e-5)
    # A discount of 0 puts everything on the atoms around the (clipped) reward: here the lowest.
    assert target[-1, 0] == pytest.approx(1.0)


def continuous_spec(bounds, num_agents=3):
    """A multi-agent spec with bounded float actions of the given (low, high) per dimension."""
    low, high = (np.array(values, np.float32) for values in zip(*bounds))
    agents = [f"robot_{i}" for i in range(num_agents)]
    observation = OLT(specs.Array((5,), np.float32), specs.Array((1,), np.float32),
                      specs.Array((), np.float32))
    scalar = specs.Array((), np.float32)
    return MAEnvironmentSpec(
        agents=agents, observations={agent: observation for agent in agents},
        actions={agent: specs.BoundedArray(low.shape, np.float32, low, high) for agent in agents},
        rewards={agent: scalar for agent in agents}, discounts={agent: scalar for agent in agents},
        extras={})


@pytest.mark.parametrize("bounds", [[(-1.0, 1.0)] * 2, [(0.0, 1.0), (-3.0, 0.5), (2.0, 2.5)]])
def test_actions_are_always_inside_the_bounds(bounds):
    spec = continuous_spec(bounds)
    agent_networks = {agent: "robot" for agent in spec.agents}
    builder = maddpg.MADDPGBuilder(maddpg.MADDPGConfig(**SMALL), spec, agent_networks,
                                   maddpg.make_default_networks, run_dir="unused")
    networks = builder.make_networks()
    # Large policy weights drive tanh to its ends; noise of scale 1 pushes far past them.
    for variable in networks.policies["robot"].trainable_variables:
        variable.assign(variable * 0.0 + 50.0 * np.sign(np.random.default_rng(0).normal(
            size=variable.shape)).astype(np.float32))
    low, high = (np.array(values, np.float32) for values in zip(*bounds))
    rng = np.random.default_rng(1)
    for scale in (0.0, 0.3, 1.0):
        executor = builder.make_executor(networks, ConstantEpsilon(scale), seed=2)
        actions = []
        for _ in range(50):
            observations = {agent: OLT(rng.normal(size=5).astype(np.float32) * 10,
                                       np.ones(1, np.float32), np.float32(0))
                            for agent in spec.agents}
            actions += list(executor.select_actions(observations).values())
        actions = np.array(actions)
        assert actions.shape == (150, len(bounds))
        assert np.all(actions >= low) and np.all(actions <= high), scale
        if scale == 1.0:  # Noise spread the actions over the range, to both ends.
            assert np.all(actions.min(axis=0) == low) and np.all(actions.max(axis=0) == high)


def test_centralised_critic_input_holds_every_agents_action_in_a_fixed_order():
    # Two network keys whose agents interleave in the environment's order.
    spec = continuous_spec([(-1.0, 1.0)] * 2, num_agents=4)
    agent_networks = {"robot_0": "a", "robot_1": "b", "robot_2": "a", "robot_3": "b"}
    inputs = maddpg.CriticInputs("centralised", spec, agent_networks)
    batch = 3
    observation = {agent: np.full((batch, 5), 10.0 * i, np.float32)
                   for i, agent in enumerate(spec.agents)}
    action = {agent: np.stack([np.full(batch, 100.0 + i), np.full(batch, -100.0 - i)], axis=1)
              for i, agent in enumerate(spec.agents)}

    def stacked(per_agent):
        return {key: tf.constant(np.stack([per_agent[a] for a in spec.agents
                                           if agent_networks[a] == key], axis=1))
                for key in ("a", "b")}

    own = {agent: np.full((batch, 2), 7.0 + i, np.float32) for i, agent in enumerate(spec.agents)}
    for own_actions in (None, stacked(own)):
        built = inputs(stacked(observation), stacked(action), own_actions=own_actions)
        for key, agents in (("a", ["robot_0", "robot_2"]), ("b", ["robot_1", "robot_3"])):
            assert built[key].shape == (batch, 2, inputs.input_size(key)) == (batch, 2, 2 + 20 + 8)
            for row, agent in enumerate(agents):
                x = built[key].numpy()[:, row]
                np.testing.assert_array_equal(x[:, :2], np.eye(2)[row][None].repeat(batch, 0))
                expected_observations = np.concatenate([observation[a] for a in spec.agents], 1)
                np.testing.assert_array_equal(x[:, 2:22], expected_observations)
                # Every agent's action in the environment's order; with own actions, only the
                # row's own agent takes its own.
                expected_actions = np.concatenate(
                    [own[a] if own_actions is not None and a == agent else action[a]
                     for a in spec.agents], axis=1)
                np.testing.assert_array_equal(x[:, 22:], expected_actions)


def test_discrete_actions_are_refused_pointing_to_discrete_systems(tmp_run_dir, line_world_factory):
    with pytest.raises(ValueError, match=r"MADDPG needs continuous actions.*agent_0.*MADQN, QMIX "
                                         r"or MAPPO"):
        maddpg.MADDPG(line_world_factory, run_dir=tmp_run_dir)


def test_bad_inputs_are_refused_naming_the_problem(tmp_run_dir):
    with pytest.raises(ValueError, match=r"critic must be one of \('decentralised', "
                                         r"'centralised', 'state'\), got 'joint'"):
        maddpg.MADDPGConfig(critic="joint")
    with pytest.raises(ValueError, match="vmax"):
        maddpg.MAD4PGConfig(vmin=1.0, vmax=-1.0)
    with pytest.raises(ValueError, match="target_update_rate=1.5 is out of range"):
        maddpg.MADDPGConfig(target_update_rate=1.5)
    with pytest.raises(ValueError, match="min_noise_scale .* must not exceed noise_scale"):
        maddpg.MADDPGConfig(noise_scale=0.1, min_noise_scale=0.2)
    with pytest.raises(ValueError, match="critic_hidden_sizes must be a non-empty sequence"):
        maddpg.MADDPGConfig(critic_hidden_sizes=())
    reach = wrappers.make_environment_factory(REACH)
    with pytest.raises(ValueError, match="MAD4PG needs a MAD4PGConfig"):
        maddpg.MAD4PG(reach, config=maddpg.MADDPGConfig(), run_dir=tmp_run_dir)
    pendulum = wrappers.make_environment_factory("gymnasium/Pendulum-v1")
    with pytest.raises(ValueError, match="critic='state' needs the environment's global state"):
        maddpg.MADDPG(pendulum, config=maddpg.MADDPGConfig(critic="state"), run_dir=tmp_run_dir)
    with pytest.raises(ValueError, match="got 1 exploration schedules for 2 executors"):
        maddpg.MADDPG(reach, num_executors=2, exploration_schedules=[ConstantEpsilon(0.1)],
                      run_dir=tmp_run_dir)


def test_executors_noise_scales_spread_from_the_smallest_to_the_largest(tmp_run_dir):
    reach = wrappers.make_environment_factory(REACH)
    system = maddpg.MADDPG(reach, num_executors=3, run_dir=tmp_run_dir,
                           config=maddpg.MADDPGConfig(noise_scale=0.4, min_noise_scale=0.1, **SMALL))
    assert [schedule(0) for schedule in system.exploration_schedules] == pytest.approx(
        [0.1, 0.2, 0.4])
    single = maddpg.MADDPG(reach, run_dir=tmp_run_dir, config=maddpg.MADDPGConfig(**SMALL))
    assert [schedule(10) for schedule in single.exploration_schedules] == [0.3]


def reach_system(system_class, critic, run_dir, **overrides):
    """`system_class` on debug/reach_v0, set to learn quickly in this process."""
    settings = dict(critic=critic, n_step=1, discount=0.9, batch_size=64, min_replay_size=100,
                    samples_per_insert=None, prefetch_size=0, policy_learning_rate=1e-3,
                    critic_learning_rate=1e-3, target_update_rate=0.05, **SMALL)
    if system_class is maddpg.MAD4PG:
        settings.update(vmin=-10.0, vmax=0.0, num_atoms=21)
    settings.update(overrides)
    return system_class(wrappers.make_environment_factory(REACH),
                        config=system_class.config_class(**settings), run_dir=run_dir)


@contextlib.contextmanager
def local_replay(system):
    """A replay server with the system's tables in this process; yields (client, adder)."""
    server = reverb.Server(system.replay())
    client = reverb.Client(f"localhost:{server.port}")
    adder = system.builder.make_adder(client)
    try:
        yield client, adder
    finally:
        if adder._writer is not None:  # pylint: disable=protected-access
            adder._writer.close()  # pylint: disable=protected-access
        gc.collect()
        server.stop()


def learn_reach(system, rounds, seed=0, exploration=0.3):
    """Explores (with noise scale `exploration`) and trains for `rounds` (4 episodes, then 60
    trainer steps, each); the greedy returns (mean of 5 episodes) before training and after each
    round, and the trainer."""
    builder = system.builder
    # The initial weights come from TensorFlow's global generator: seed it, so that the
    # outcome does not depend on which tests ran before in this process.
    tf.random.set_seed(seed)
    with local_replay(system) as (client, adder):
        networks = builder.make_networks()
        explorer = builder.make_executor(networks, ConstantEpsilon(exploration), adder=adder,
                                         seed=seed)
        greedy = builder.make_executor(networks, ConstantEpsilon(0.0), seed=seed)
        exploring = EnvironmentLoop(system.environment_factory(seed=seed), explorer,
                                    stop_event=threading.Event())
        evaluating = EnvironmentLoop(system.environment_factory(seed=seed + 100), greedy,
                                     stop_event=threading.Event())

        def greedy_return():
            return np.mean([evaluating.run_episode()["episode_return/agent_0"] for _ in range(5)])

        for _ in range(12):
            exploring.run_episode()
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       counter=counting.Counter(), checkpoint=False)
        returns = [greedy_return()]
        for _ in range(rounds):
            for _ in range(4):
                exploring.run_episode()
            for _ in range(60):
                trainer.step()
            returns.append(greedy_return())
    return returns, trainer


# MAD4PG's categorical critic leaves random play later than MADDPG's (after 4 to 8 rounds, not
# 1 to 2; Reverb's sampling is not seeded), so it gets more rounds. Measured over 6 to 8 runs:
# MADDPG's last three rounds averaged -1.21 to -1.58 after 14; MAD4PG's -0.70 to -1.01 after
# 20 (after 14 they ranged to -2.39, which once failed CI).
@pytest.mark.parametrize("system_class,critic,rounds", [(maddpg.MADDPG, "centralised", 14),
                                                        (maddpg.MAD4PG, "state", 20)])
def test_learns_to_reach_the_goals(tmp_path, system_class, critic, rounds):
    returns, trainer = learn_reach(reach_system(system_class, critic, str(tmp_path)), rounds=rounds)
    # Random play returns about -5.5; straight to the goals about -0.36.
    assert returns[0] < -3.0, returns
    assert np.mean(returns[-3:]) > -2.0, returns
    assert trainer.num_steps == rounds * 60
    # Polyak averaging: the targets lag their online networks, but follow them.
    state = trainer.state
    online, target = (state[f"{kind}/agent"].variables[-1].numpy()
                      for kind in ("policy", "target_policy"))
    assert not np.array_equal(online, target)


def numpy_variables(module):
    return [variable.numpy() for variable in module.variables]


def test_a_resumed_trainer_continues_networks_targets_and_optimizers(tmp_path):
    system = reach_system(maddpg.MADDPG, "decentralised", str(tmp_path / "run"),
                          target_update_rate=None, target_update_period=5)
    builder = system.builder
    with local_replay(system) as (client, adder):
        explorer = builder.make_executor(builder.make_networks(), ConstantEpsilon(1.0),
                                         adder=adder)
        loop = EnvironmentLoop(system.environment_factory(seed=0), explorer,
                               stop_event=threading.Event())
        for _ in range(12):
            loop.run_episode()
        first = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client))
        for _ in range(7):  # Targets copied at step 5, then two more steps of training.
            first.step()
        first._checkpointing.save(force=True)  # pylint: disable=protected-access
        second = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client))
    assert second.num_steps == first.num_steps == 7
    for key in ("policy/agent", "critic/agent", "target_policy/agent", "target_critic/agent"):
        for saved, restored in zip(numpy_variables(first.state[key]),
                                   numpy_variables(second.state[key])):
            np.testing.assert_array_equal(saved, restored)
    for name in ("policy_optimizer", "critic_optimizer"):
        assert int(second.state[name].step.numpy()) == 7
    saved = tf.train.list_variables(tf.train.latest_checkpoint(
        os.path.join(system.run_dir, "checkpoints", "trainer")))
    moments = [name for name, _ in saved if re.match(r"critic_optimizer/[mv]/\d+/", name)]
    assert len(moments) == 2 * len(first.state["critic/agent"].trainable_variables)
    # Periodic copies: equal at step 5, apart after two more steps.
    assert not np.array_equal(numpy_variables(first.state["policy/agent"])[-1],
                              numpy_variables(first.state["target_policy/agent"])[-1])
