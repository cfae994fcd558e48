"""Gymnasium multi-agent environments with Tuple spaces: Level-Based Foraging ("lbf/<id>"), Robotic
Warehouse ("rware/<id>") and a user's own, through the one adapter (`TupleSpaceParallelEnv`)."""

import threading
from typing import Any, Dict, List

import dm_env
import gymnasium
from gymnasium import spaces
import numpy as np
import pytest

import wrappers
from wrappers.gymnasium_multiagent import TupleSpaceParallelEnv
from test_wrappers import random_legal_actions, run_episode

LBF = "lbf/Foraging-8x8-2p-2f-coop-v3"
RWARE = "rware/rware-tiny-2ag-v2"


def test_every_package_id_is_a_name_of_its_family():
    available = wrappers.available_environments()
    lbf_ids = [env_id for env_id, spec in gymnasium.envs.registry.items()
               if str(spec.entry_point).startswith("lbforaging.")]
    rware_ids = [env_id for env_id, spec in gymnasium.envs.registry.items()
                 if str(spec.entry_point).startswith("rware.")]
    assert sorted(available["lbf"]) == sorted(lbf_ids) and len(lbf_ids) == 1920
    assert sorted(available["rware"]) == sorted(rware_ids) and len(rware_ids) == 228
    assert {"Foraging-8x8-2p-2f-coop-v3", "Foraging-2s-8x8-2p-2f-coop-v3",
            "Foraging-2s-15x15-4p-4f-v3"} <= set(available["lbf"])
    assert {"rware-tiny-2ag-v2", "rware-small-4ag-hard-v2"} <= set(available["rware"])


@pytest.mark.parametrize("name,observation_size", [(LBF, 12), ("lbf/Foraging-2s-8x8-2p-2f-coop-v3", 12),
                                                   (RWARE, 71)])
def test_agents_specs_and_the_concatenated_global_state(name, observation_size):
    env = wrappers.make_environment_factory(name)(seed=0)
    assert env.agents == ["agent_0", "agent_1"]
    for agent in env.agents:
        assert env.observation_spec()[agent].observation.shape == (observation_size,)
    assert env.extras_spec()["env_state"].shape == (2 * observation_size,)
    rng = np.random.default_rng(0)
    timestep = env.reset()
    for _ in range(10):
        state = env.get_extras()["env_state"]
        np.testing.assert_array_equal(
            state, np.concatenate([timestep.observation[agent].observation for agent in env.agents]))
        timestep = env.step(random_legal_actions(env, timestep, rng))


def test_lbf_partial_observability_hides_what_is_out_of_sight():
    full, partial = (wrappers.make_environment_factory(name)(seed=3)
                     for name in (LBF, "lbf/Foraging-2s-8x8-2p-2f-coop-v3"))
    unseen = {LBF: 0, "partial": 0}
    for _ in range(20):
        # Food and players out of sight are (-1, -1, 0); with sight 8 on 8x8 all are in sight.
        unseen[LBF] += int((full.reset().observation["agent_0"].observation == -1).sum())
        unseen["partial"] += int((partial.reset().observation["agent_0"].observation == -1).sum())
    assert unseen[LBF] == 0 and unseen["partial"] > 0


def test_lbf_legal_actions_are_its_valid_actions():
    env = wrappers.make_environment_factory("lbf/Foraging-5x5-2p-2f-v3")(seed=1)
    lbf = env.environment.env.unwrapped
    rng = np.random.default_rng(1)
    loads_seen = 0
    for _ in range(5):
        timestep = env.reset()
        while not timestep.last():
            for player, agent in zip(lbf.players, env.agents):
                legal = timestep.observation[agent].legal_actions
                row, col = player.position
                assert legal[0] == 1.0  # NONE
                assert legal[1] == float(row > 0 and lbf.field[row - 1, col] == 0)  # NORTH
                assert legal[5] == float(lbf.adjacent_food(row, col) > 0)  # LOAD
                loads_seen += int(legal[5])
            timestep = env.step(random_legal_actions(env, timestep, rng))
    assert loads_seen > 0


def play(env, rng, episodes) -> List[Dict[str, Any]]:
    """Random legal play: each episode's length, summed return, last discounts and the env's own return."""
    results = []
    for _ in range(episodes):
        timesteps = run_episode(env, rng)
        results.append({
            "length": len(timesteps) - 1,
            "return": sum(float(r) for timestep in timesteps[1:] for r in timestep.reward.values()),
            "discounts": {float(d) for d in timesteps[-1].discount.values()},
        })
        lbf = env.environment.env.unwrapped
        results[-1]["env_return"] = sum(player.score for player in lbf.players)
        results[-1]["food_left"] = int(lbf.field.sum())
    return results


def test_lbf_all_food_is_a_terminal_state_and_the_time_limit_a_truncation():
    # Small and not cooperative, so random play collects all the food in some episodes.
    env = wrappers.make_environment_factory("lbf/Foraging-5x5-2p-1f-v3")(seed=0)
    results = play(env, np.random.default_rng(0), 60)
    collected = [r for r in results if r["food_left"] == 0]
    timed_out = [r for r in results if r["food_left"] > 0]
    assert collected and timed_out
    for result in results:
        # The summed return is the env's own team return, normalised: 1.0 once all food is loaded.
        assert result["return"] == pytest.approx(result["env_return"], abs=1e-6)
    for result in collected:
        assert result["return"] == pytest.approx(1.0) and result["discounts"] == {0.0}
        assert result["length"] <= 50
    for result in timed_out:
        assert result["length"] == 50 and result["discounts"] == {1.0}
        assert result["return"] < 1.0


@pytest.mark.parametrize("name,length", [(LBF, 7), (LBF, 80), (RWARE, 7)])
def test_max_episode_steps_sets_the_episode_length_and_ends_in_a_truncation(name, length):
    env = wrappers.make_environment_factory(name, max_episode_steps=length)(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        timesteps = run_episode(env, rng)
        if name == LBF and env.environment.env.unwrapped.field.sum() == 0:
            continue  # All food loaded before the limit (a terminal state).
        assert len(timesteps) - 1 == length  # Longer than LBF's default 50 too.
        assert {float(d) for d in timesteps[-1].discount.values()} == {1.0}


def test_rware_episodes_end_at_its_step_limit_with_discount_one():
    env = wrappers.make_environment_factory(RWARE, max_steps=30)(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(2):
        timesteps = run_episode(env, rng)
        assert len(timesteps) - 1 == 30
        assert {float(d) for d in timesteps[-1].discount.values()} == {1.0}
        assert all(np.all(timestep.observation[a].legal_actions == 1.0)
                   for timestep in timesteps for a in env.agents)


def test_same_seed_same_episode():
    for name in (LBF, RWARE):
        first, second = (wrappers.make_environment_factory(name)(seed=5).reset() for _ in range(2))
        other = wrappers.make_environment_factory(name)(seed=6).reset()
        for agent in first.observation:
            np.testing.assert_array_equal(first.observation[agent].observation,
                                          second.observation[agent].observation)
        assert any(not np.array_equal(first.observation[a].observation, other.observation[a].observation)
                   for a in first.observation)


@pytest.mark.parametrize("name,close", [("lbf/Foraging-8x8-2p-2f-cop-v3", "Foraging-8x8-2p-2f-coop-v3"),
                                        ("lbf/Foraging-8x8-2p-2f-coop-v2", "Foraging-8x8-2p-2f-coop-v3"),
                                        ("rware/rware-tiny-2ag-v1", "rware-tiny-2ag-v2")])
def test_an_unknown_id_lists_close_matches(name, close):
    with pytest.raises(ValueError, match=f"unknown environment '{name}'.*close matches: .*{close}"):
        wrappers.make_environment_factory(name)


class RelayEnv(gymnasium.Env):
    """Two agents; each step agent 0 leaves after step 2 (per-agent flags), with masks in the info
    and a global state of its own."""

    def __init__(self):
        self.observation_space = spaces.Tuple([spaces.Box(0, 10, (1,), np.float32)] * 2)
        self.action_space = spaces.Tuple([spaces.Discrete(3)] * 2)
        self.state_space = spaces.Box(0, 10, (3,), np.float32)
        self.steps = 0

    def state(self):
        return np.array([self.steps, 1, 2], np.float32)

    def _observe(self):
        return tuple(np.array([self.steps], np.float32) for _ in range(2)), {
            "action_mask": [np.array([1, 0, 1], np.float32), np.array([0, 1, 1], np.float32)]}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self._observe()

    def step(self, action):
        self.steps += 1
        observations, info = self._observe()
        return observations, [1.0, 2.0], [self.steps >= 2, self.steps >= 4], [False, False], info


def test_the_adapter_reads_per_agent_flags_masks_and_an_own_state():
    env = wrappers.wrap_environment(RelayEnv(), seed=0)
    assert isinstance(env.environment, TupleSpaceParallelEnv)
    timestep = env.reset()
    np.testing.assert_array_equal(timestep.observation["agent_1"].legal_actions, [0, 1, 1])
    returns = {"agent_0": 0.0, "agent_1": 0.0}
    while not timestep.last():
        np.testing.assert_array_equal(env.get_extras()["env_state"], [env.environment.env.steps, 1, 2])
        timestep = env.step({"agent_0": 0, "agent_1": 1})
        for agent in returns:
            returns[agent] += float(timestep.reward[agent])
        if env.environment.env.steps == 2:
            assert timestep.mid() and timestep.discount["agent_0"] == 0.0
            assert timestep.discount["agent_1"] == 1.0
    assert timestep.step_type == dm_env.StepType.LAST and env.environment.env.steps == 4
    assert timestep.discount["agent_1"] == 0.0  # Terminated, not truncated.
    assert returns == {"agent_0": 2.0, "agent_1": 8.0}


def test_only_tuple_space_envs_are_adapted():
    with pytest.raises(ValueError, match="Tuple observation and action spaces"):
        TupleSpaceParallelEnv(gymnasium.make("CartPole-v1"))
    with pytest.raises(ValueError, match="expected a PettingZoo ParallelEnv"):
        wrappers.wrap_environment(object())


def test_rware_environments_reset_safely_in_threads():
    # Executors and the evaluator of a local_mt program reset their environments in threads at once.
    envs = [wrappers.make_environment_factory(RWARE, max_steps=5)(seed=seed) for seed in range(4)]
    errors = []

    def play(env):
        try:
            for _ in range(40):
                run_episode(env, np.random.default_rng(0))
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)

    threads = [threading.Thread(target=play, args=(env,)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
