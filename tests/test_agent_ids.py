"""Agent-ID observations: each agent's observation ends with its one-hot index, specs agree."""

import pickle

import numpy as np
import pytest

import wrappers
from mava_systems import madqn


def test_observations_end_with_the_agents_one_hot_index():
    plain = wrappers.make_environment_factory("mpe/simple_spread_v3")
    factory = wrappers.WithAgentIDs(plain)
    environment, reference = factory(seed=3), plain(seed=3)
    agents = environment.agents
    spec = environment.observation_spec()
    timestep, expected = environment.reset(), reference.reset()
    for step in range(5):
        for index, agent in enumerate(agents):
            observation = timestep.observation[agent].observation
            assert observation.shape == spec[agent].observation.shape == (18 + len(agents),)
            assert observation.dtype == np.float32
            np.testing.assert_array_equal(observation[:18], expected.observation[agent].observation)
            np.testing.assert_array_equal(observation[18:], np.eye(len(agents))[index])
            np.testing.assert_array_equal(timestep.observation[agent].legal_actions,
                                          expected.observation[agent].legal_actions)
        actions = {agent: np.int32(step % 5) for agent in agents}
        timestep, expected = environment.step(actions), reference.step(actions)
        assert timestep.reward == expected.reward
    # Picklable (Launchpad ships factories to nodes) and named after the wrapped environment.
    assert pickle.loads(pickle.dumps(factory)).name == "mpe/simple_spread_v3"


def test_madqn_with_agent_ids_builds_networks_for_the_longer_observation(tmp_path):
    system = madqn.MADQN(wrappers.make_environment_factory("mpe/simple_spread_v3"),
                         config=madqn.MADQNConfig(agent_ids=True), run_dir=str(tmp_path / "run"))
    assert system.environment_spec.observations["agent_0"].observation.shape == (21,)
    assert [21, 64] in system.description()["network_variables"]["agent"]


def test_non_numeric_observations_are_an_error():
    class TextObservations:
        agents = ["a"]

        def observation_spec(self):
            from dm_env import specs
            return {"a": wrappers.OLT(specs.Array((), np.str_), specs.Array((2,), np.float32),
                                      specs.Array((), np.float32))}

    with pytest.raises(ValueError, match="numeric observations; agent 'a'"):
        wrappers.AgentIDObservations(TextObservations())


def test_a_run_saved_with_another_replay_layout_is_not_continued(tmp_path):
    """Switching agent IDs on changes what replay stores: the saved run is refused, untouched."""
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    run_dir = str(tmp_path / "run")
    madqn.MADQN(factory, config=madqn.MADQNConfig(hidden_sizes=(8,)), run_dir=run_dir
                ).prepare_run_dir()
    with open(tmp_path / "run" / "run.json") as run_file:
        saved = run_file.read()
    with pytest.raises(ValueError, match="cannot continue.*replay_items"):
        madqn.MADQN(factory, config=madqn.MADQNConfig(hidden_sizes=(8,), agent_ids=True),
                    run_dir=run_dir).prepare_run_dir()
    with open(tmp_path / "run" / "run.json") as run_file:
        assert run_file.read() == saved
