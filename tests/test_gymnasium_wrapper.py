"""Single-agent Gymnasium environments as one-agent multi-agent environments ("gymnasium/<EnvId>")."""

import pickle

from dm_env import specs
import dm_env
import gymnasium
import numpy as np
import pytest

from mava_systems.specs import MAEnvironmentSpec
import wrappers
from wrappers.gymnasium_env import AGENT, SingleAgentParallelEnv


def play_episode(environment, action):
    timestep = environment.reset()
    assert timestep.first()
    steps, total = 0, 0.0
    while not timestep.last():
        timestep = environment.step({AGENT: action})
        steps += 1
        total += float(timestep.reward[AGENT])
    return timestep, steps, total


def test_cartpole_is_one_discrete_agent():
    environment = wrappers.make_environment_factory("gymnasium/CartPole-v1")(seed=0)
    assert isinstance(environment, wrappers.MultiAgentEnvironment)
    assert environment.agents == [AGENT]
    observation_spec = environment.observation_spec()[AGENT]
    assert observation_spec.observation.shape == (4,)
    assert observation_spec.observation.dtype == np.float32
    assert observation_spec.legal_actions.shape == (2,)
    action_spec = environment.action_spec()[AGENT]
    assert isinstance(action_spec, specs.DiscreteArray) and action_spec.num_values == 2

    # Always pushing right topples the pole within a few steps: termination, discount 0.
    timestep, steps, total = play_episode(environment, np.int32(1))
    assert timestep.step_type == dm_env.StepType.LAST
    assert 5 <= steps < 50 and total == steps
    assert timestep.discount[AGENT] == 0.0
    assert timestep.observation[AGENT].terminal == 1.0
    assert np.array_equal(timestep.observation[AGENT].legal_actions, [1.0, 1.0])


def test_pendulum_is_one_continuous_agent_truncated_with_discount_one():
    environment = wrappers.make_environment_factory("gymnasium/Pendulum-v1")(seed=0)
    action_spec = environment.action_spec()[AGENT]
    assert isinstance(action_spec, specs.BoundedArray)
    assert not isinstance(action_spec, specs.DiscreteArray)
    assert action_spec.shape == (1,) and action_spec.dtype == np.float32
    np.testing.assert_array_equal(action_spec.minimum, [-2.0])
    np.testing.assert_array_equal(action_spec.maximum, [2.0])
    timestep, steps, total = play_episode(environment, np.array([0.5], np.float32))
    assert steps == 200 and total < 0
    assert timestep.discount[AGENT] == 1.0  # A time limit is not a terminal state.


def test_seeded_environments_repeat_and_differ_across_seeds():
    factory = wrappers.make_environment_factory("gymnasium/CartPole-v1")
    first = [factory(seed=seed).reset().observation[AGENT].observation for seed in (3, 3, 4)]
    np.testing.assert_array_equal(first[0], first[1])
    assert not np.array_equal(first[0], first[2])


def test_step_after_last_starts_a_new_episode():
    environment = wrappers.make_environment_factory("gymnasium/CartPole-v1")(seed=0)
    play_episode(environment, np.int32(0))
    assert environment.step({AGENT: np.int32(0)}).first()


def test_factory_kwargs_reach_gymnasium_make_and_the_factory_pickles():
    factory = wrappers.make_environment_factory("gymnasium/CartPole-v1", max_episode_steps=7)
    factory = pickle.loads(pickle.dumps(factory))
    environment = factory(seed=0)
    timestep = environment.reset()
    steps = 0
    while not timestep.last():
        timestep = environment.step({AGENT: np.int32(steps % 2)})
        steps += 1
    assert steps == 7 and timestep.discount[AGENT] == 1.0
    assert "CartPole-v1" in repr(factory) and "max_episode_steps=7" in repr(factory)


def test_system_spec_of_a_gymnasium_environment():
    environment = wrappers.make_environment_factory("gymnasium/Acrobot-v1")()
    spec = MAEnvironmentSpec.from_environment(environment)
    assert spec.agents == [AGENT]
    assert spec.actions[AGENT].num_values == 3


def test_unknown_gymnasium_id_names_the_problem():
    with pytest.raises(ValueError, match="unknown environment 'gymnasium/CartPole-v9'.*close matches: CartPole-v1"):
        wrappers.make_environment_factory("gymnasium/CartPole-v9")


def test_only_gymnasium_envs_and_the_single_agent_are_accepted():
    with pytest.raises(ValueError, match="expected a gymnasium.Env"):
        SingleAgentParallelEnv(object())
    env = SingleAgentParallelEnv(gymnasium.make("CartPole-v1"))
    with pytest.raises(KeyError, match="only 'agent_0'"):
        env.action_space("agent_1")
