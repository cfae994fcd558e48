"""Vectorised environments (`wrappers.vectorised`): B environments in one NumPy call, step for step
equal to the reference package's environment behind `wrappers.make_environment_factory`."""

from typing import Any, Callable, Dict, List, Optional, Tuple

import dm_env
import gymnasium
import numpy as np
import pytest

import wrappers
from wrappers.vectorised import (BatchedEnvironment, BatchedTimeStep, make_vectorised_environment,
                                 vectorised_families, vectorised_implementation)

LBF = "lbf/Foraging-8x8-2p-2f-coop-v3"


def eager_actions(batched: BatchedTimeStep, rng: np.random.Generator, load: float = 0.7) -> np.ndarray:
    """Uniformly random actions (illegal ones included), but LOAD with probability `load` where it
    is legal, so that foods get loaded and episodes end in terminal states as well as at the limit."""
    shape = batched.legal_actions.shape[:2]
    actions = rng.integers(0, batched.legal_actions.shape[-1], size=shape)
    loadable = batched.legal_actions[..., -1] > 0
    return np.where(loadable & (rng.random(shape) < load), batched.legal_actions.shape[-1] - 1, actions)


def assert_same_step(vectorised: BatchedEnvironment, batched: BatchedTimeStep, index: int,
                     reference: wrappers.MultiAgentEnvironment, expected: dm_env.TimeStep, where: str) -> None:
    """Environment `index` of the batch gives exactly the reference's timestep and global state."""
    timestep, extras = vectorised.timestep(batched, index)
    assert timestep.step_type == expected.step_type, where
    agents = reference.agents
    for field in ("observation", "legal_actions", "terminal"):
        got = np.stack([getattr(timestep.observation[agent], field) for agent in agents])
        want = np.stack([getattr(expected.observation[agent], field) for agent in agents])
        assert got.dtype == want.dtype and np.array_equal(got, want), f"{where} {field}: {got} != {want}"
    if expected.reward is None:
        assert timestep.reward is None and timestep.discount is None, where
    else:
        for field in ("reward", "discount"):
            got = np.stack([getattr(timestep, field)[agent] for agent in agents])
            want = np.stack([getattr(expected, field)[agent] for agent in agents])
            assert got.dtype == want.dtype == np.float32 and np.array_equal(got, want), f"{where} {field}: {got} != {want}"
    assert np.array_equal(extras["env_state"], reference.get_extras()["env_state"]), f"{where} env_state"


def uniform_actions(batched: BatchedTimeStep, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random actions."""
    return rng.integers(0, batched.legal_actions.shape[-1], size=batched.legal_actions.shape[:2])


def run_side_by_side(name: str, num_envs: int, steps: int, seed: int = 0,
                     choose: Callable[[BatchedTimeStep, np.random.Generator], np.ndarray] = eager_actions,
                     vectorised: Optional[BatchedEnvironment] = None, **env_kwargs: Any) -> Dict[str, int]:
    """Steps B vectorised (`vectorised`, or made from `name`) and B reference environments (seeds
    seed, seed + 1, ...) with the same actions (`choose`), checking every step; counts what happened
    (ends, rewards, steps where the agents' rewards differ) so tests can see it was tried."""
    if vectorised is None:
        vectorised = make_vectorised_environment(name, num_envs, **env_kwargs)
    factory = wrappers.make_environment_factory(name, **env_kwargs)
    references = [factory(seed=seed + index) for index in range(num_envs)]
    rng = np.random.default_rng(seed)
    batched = vectorised.reset([seed + index for index in range(num_envs)])
    expected = [reference.reset() for reference in references]
    seen = {"terminal": 0, "truncated": 0, "positive": 0, "negative": 0, "unequal": 0}
    for step in range(steps + 1):
        for index, reference in enumerate(references):
            assert_same_step(vectorised, batched, index, reference, expected[index], f"{name} step {step} env {index}")
            if expected[index].last():
                discount = expected[index].discount["agent_0"]
                seen["terminal" if discount == 0 else "truncated"] += 1
            if expected[index].reward is not None:
                rewards = np.array(list(expected[index].reward.values()))
                seen["positive"] += int((rewards > 0).sum())
                seen["negative"] += int((rewards < 0).sum())
                seen["unequal"] += int(len(set(rewards.tolist())) > 1)
        actions = choose(batched, rng)
        batched = vectorised.step(actions)
        expected = [reference.step({agent: int(actions[index, n]) for n, agent in enumerate(reference.agents)})
                    for index, reference in enumerate(references)]
    return seen


# Ids and options covering every rule: full sight and `-2s`, coop, a crowded 5x5 field (food
# spawns that fail, players placed around last episode's positions, players sharing cells),
# a large partially observed field, penalties, unnormalised rewards, no levels in observations.
@pytest.mark.parametrize("env_id,num_envs,steps,env_kwargs", [
    ("Foraging-8x8-2p-2f-v3", 4, 600, {}),
    ("Foraging-8x8-2p-2f-coop-v3", 4, 600, {}),
    ("Foraging-2s-8x8-2p-2f-coop-v3", 4, 600, {}),
    ("Foraging-5x5-9p-4f-v3", 2, 200, {}),
    ("Foraging-2s-5x5-9p-4f-coop-v3", 2, 200, {}),
    ("Foraging-2s-19x19-9p-4f-v3", 2, 300, {}),
    ("Foraging-2s-8x8-3p-2f-v3", 4, 300, {"penalty": 0.1, "max_episode_steps": 20}),
    ("Foraging-7x7-3p-3f-v3", 4, 300, {"normalize_reward": False, "observe_agent_levels": False,
                                    "max_food_level": 3, "min_food_level": [1, 2, 3], "sight": 3}),
])
def test_lbf_equals_the_package_step_for_step(env_id, num_envs, steps, env_kwargs):
    seen = run_side_by_side(f"lbf/{env_id}", num_envs, steps, **env_kwargs)
    assert seen["positive"] > 0 and seen["terminal"] + seen["truncated"] > 0, seen
    if env_kwargs.get("penalty"):
        assert seen["negative"] > 0, seen


def test_lbf_episodes_end_both_ways():
    seen = run_side_by_side("lbf/Foraging-6x6-2p-1f-v3", 4, 600, seed=5)
    assert seen["terminal"] > 0 and seen["truncated"] > 0, seen


@pytest.mark.parametrize("num_envs,steps,env_kwargs", [(4, 300, {}),
                                                      (2, 200, {"N": 5, "local_ratio": 0.3, "max_cycles": 40})])
def test_simple_spread_equals_the_package_step_for_step(num_envs, steps, env_kwargs):
    # Bit for bit, contact forces included: agents that touch get unequal (collision) rewards.
    seen = run_side_by_side("mpe/simple_spread_v3", num_envs, steps, choose=uniform_actions, **env_kwargs)
    assert seen["truncated"] > 0 and seen["unequal"] > 0, seen


def test_every_registered_lbf_id_has_a_vectorised_implementation_and_specs_are_the_reference_ones():
    names = wrappers.available_environments()["lbf"]
    assert sorted(vectorised_families()["lbf"]) == sorted(names) and len(names) == 1920
    for name in names[::97]:
        assert vectorised_implementation(f"lbf/{name}") is not None
    for name in ("lbf/Foraging-8x8-2p-2f-coop-v3", "lbf/Foraging-2s-12x12-4p-3f-v3", "lbf/Foraging-5x5-9p-1f-v3",
                 "mpe/simple_spread_v3"):
        vectorised = make_vectorised_environment(name, 3)
        reference = wrappers.make_environment_factory(name)()
        assert vectorised.agents == reference.agents
        assert vectorised.observation_spec() == reference.observation_spec()
        assert vectorised.action_spec() == reference.action_spec()
        assert vectorised.extras_spec() == reference.extras_spec()


def _episodes(env: BatchedEnvironment, seeds: List[int], steps: int, action_seed: int) -> List[np.ndarray]:
    rng = np.random.default_rng(action_seed)
    batched = env.reset(seeds)
    observations = [batched.observation]
    for _ in range(steps):
        batched = env.step(eager_actions(batched, rng))
        observations.append(batched.observation)
    return observations


def test_seeds_decide_each_environment_and_environments_are_independent():
    one = make_vectorised_environment(LBF, 1)
    many = make_vectorised_environment(LBF, 3)
    rng = np.random.default_rng(1)
    alone = one.reset([7])
    batch = many.reset([3, 7, 3])
    for _ in range(300):
        actions = eager_actions(batch, rng)
        np.testing.assert_array_equal(batch.observation[1], alone.observation[0])
        np.testing.assert_array_equal(batch.observation[0], batch.observation[2])
        alone = one.step(actions[1:2])
        batch = many.step(np.stack([actions[0], actions[1], actions[0]]))
    assert not np.array_equal(batch.observation[0], batch.observation[1])
    again = _episodes(make_vectorised_environment(LBF, 2), [11, 12], 200, action_seed=4)
    np.testing.assert_array_equal(np.stack(again),
                                  np.stack(_episodes(make_vectorised_environment(LBF, 2), [11, 12], 200, 4)))


def test_the_step_after_last_starts_a_new_episode_and_ignores_its_actions():
    env = make_vectorised_environment(LBF, 2, max_episode_steps=3)
    batched = env.reset([0, 1])
    assert (batched.step_type == dm_env.StepType.FIRST).all()
    no_op = np.zeros((2, 2), np.int64)
    for expected in (dm_env.StepType.MID, dm_env.StepType.MID, dm_env.StepType.LAST):
        batched = env.step(no_op)
        assert (batched.step_type == expected).all()
    assert (batched.terminal == 1).all() and (batched.discount == 1).all()  # a truncation
    restarted = env.step(np.full((2, 2), 5))
    assert (restarted.step_type == dm_env.StepType.FIRST).all()
    assert (restarted.reward == 0).all() and (restarted.discount == 1).all() and (restarted.terminal == 0).all()
    fresh = make_vectorised_environment(LBF, 2, max_episode_steps=3)
    fresh.reset([0, 1])
    for _ in range(3):
        fresh.step(no_op)
    np.testing.assert_array_equal(fresh.step(no_op).observation, restarted.observation)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match=r"no vectorised implementation of 'lbf/Foraging-8x8-2p-2f-cop-v3': "
                                         r"family 'lbf' has 1920 environments; close matches: "
                                         r"Foraging-8x8-2p-2f-coop-v3"):
        vectorised_implementation("lbf/Foraging-8x8-2p-2f-cop-v3")
    with pytest.raises(ValueError, match=r"'mpe/simple_tag_v3': family 'mpe' has simple_spread_v3"):
        vectorised_implementation("mpe/simple_tag_v3")
    with pytest.raises(ValueError, match=r"default options only; got \{'continuous_actions': True\}"):
        make_vectorised_environment("mpe/simple_spread_v3", 2, continuous_actions=True)
    assert vectorised_implementation("sisl/pursuit_v5") is None
    with pytest.raises(ValueError, match="the vectorised families are lbf, mpe"):
        make_vectorised_environment("sisl/pursuit_v5", 4)
    with pytest.raises(ValueError, match="vector observations only"):
        make_vectorised_environment(LBF, 2, grid_observation=True)
    with pytest.raises(ValueError, match="unexpected keyword argument 'colour'"):
        make_vectorised_environment(LBF, 2, colour="red")
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        make_vectorised_environment(LBF, 0)
    env = make_vectorised_environment(LBF, 2)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match="3 seeds for 2 environments"):
        env.reset([1, 2, 3])
    env.reset()
    bad: List[Tuple[Any, str]] = [(np.zeros((2, 3), np.int64), r"shape \(2, 3\), expected \(2, 2\)"),
                                  (np.zeros((2, 2)), "must be integers"),
                                  (np.full((2, 2), 6), r"in \[0, 6\)")]
    for actions, message in bad:
        with pytest.raises(ValueError, match=message):
            env.step(actions)


def busy_warehouse_actions(batched: BatchedTimeStep, rng: np.random.Generator) -> np.ndarray:
    """Mostly FORWARD (so that agents ask for the same cells), some turns and TOGGLE_LOADs."""
    return rng.choice(5, size=batched.legal_actions.shape[:2], p=[0.05, 0.55, 0.15, 0.15, 0.10])


# Crowded and roomy layouts; deliveries (new requests drawn), conflicts resolved on the graph,
# an inactivity limit, global and two-stage rewards, a wider sensor range.
# Seeds picked so that shelves get delivered (rare under random actions; the runs are deterministic).
@pytest.mark.parametrize("env_id,num_envs,steps,seed,env_kwargs", [
    ("rware-tiny-2ag-v2", 3, 1000, 0, {}),
    ("rware-tiny-4ag-easy-v2", 3, 700, 7, {}),
    ("rware-small-4ag-v2", 2, 700, 3, {}),
    ("rware-tiny-6ag-easy-v2", 2, 400, 11, {"max_inactivity_steps": 60, "max_episode_steps": 1000}),
    ("rware-tiny-3ag-easy-v2", 2, 500, 3, {"reward_type": "GLOBAL", "sensor_range": 2}),
    ("rware-tiny-3ag-easy-v2", 2, 500, 3, {"reward_type": "TWO_STAGE", "normalised_coordinates": True}),
])
def test_rware_equals_the_package_step_for_step(env_id, num_envs, steps, seed, env_kwargs):
    from rware.warehouse import RewardType  # pylint: disable=import-outside-toplevel
    if "reward_type" in env_kwargs:
        env_kwargs = {**env_kwargs, "reward_type": RewardType[env_kwargs["reward_type"]]}
    vectorised = make_vectorised_environment(f"rware/{env_id}", num_envs, **env_kwargs)
    seen = run_side_by_side(f"rware/{env_id}", num_envs, steps, seed=seed, choose=busy_warehouse_actions,
                            vectorised=vectorised, **env_kwargs)
    assert seen["positive"] > 0 and seen["truncated"] > 0 and seen["terminal"] == 0, seen
    assert vectorised.graph_resolutions > 0, "no two agents asked for one cell"


def test_every_registered_rware_id_has_a_vectorised_implementation_and_specs_are_the_reference_ones():
    names = wrappers.available_environments()["rware"]
    assert sorted(vectorised_families()["rware"]) == sorted(names) and len(names) == 228
    for name in ("rware-tiny-2ag-v2", "rware-small-4ag-hard-v2", "rware-large-19ag-easy-v2"):
        vectorised = make_vectorised_environment(f"rware/{name}", 2)
        reference = wrappers.make_environment_factory(f"rware/{name}")()
        assert vectorised.agents == reference.agents
        assert vectorised.observation_spec() == reference.observation_spec()
        assert vectorised.action_spec() == reference.action_spec()
        assert vectorised.extras_spec() == reference.extras_spec()


def test_bad_rware_input_is_refused():
    from rware.warehouse import ObservationType  # pylint: disable=import-outside-toplevel
    with pytest.raises(ValueError, match=r"'rware/rware-tiny-2ag-v3': family 'rware' has 228 environments; "
                                         r"close matches: rware-tiny-2ag-v2"):
        vectorised_implementation("rware/rware-tiny-2ag-v3")
    with pytest.raises(ValueError, match=r"request_queue_size 34 exceeds the 32 shelves"):
        make_vectorised_environment("rware/rware-tiny-17ag-easy-v2", 2)
    with pytest.raises(ValueError, match=r"no messages \(msg_bits=2\)"):
        make_vectorised_environment("rware/rware-tiny-2ag-v2", 2, msg_bits=2)
    with pytest.raises(ValueError, match="flattened vector observations only"):
        make_vectorised_environment("rware/rware-tiny-2ag-v2", 2, observation_type=ObservationType.IMAGE)
    with pytest.raises(ValueError, match="does not render"):
        make_vectorised_environment("rware/rware-tiny-2ag-v2", 2, render_mode="human")
    with pytest.raises(ValueError, match="is not a valid RewardType"):
        make_vectorised_environment("rware/rware-tiny-2ag-v2", 2, reward_type=7)
    with pytest.raises(ValueError, match="unexpected keyword argument 'colour'"):
        make_vectorised_environment("rware/rware-tiny-2ag-v2", 2, colour="red")
    env = make_vectorised_environment("rware/rware-tiny-2ag-v2", 2)
    env.reset([0, 1])
    with pytest.raises(ValueError, match=r"in \[0, 5\)"):
        env.step(np.full((2, 2), 5))


def test_rware_moves_without_shared_cells_follow_the_graph_rule():
    # The batched shortcut (every move but swaps succeeds when no cell is asked for twice) against
    # the package's graph rule applied to every environment, on crowded warehouses.
    import rware  # pylint: disable=import-outside-toplevel,unused-import  (registers the ids)
    from wrappers.vectorised.rware import VectorisedWarehouse  # pylint: disable=import-outside-toplevel

    class AlwaysOnTheGraph(VectorisedWarehouse):
        def _committed(self, target, active):
            return np.stack([self._committed_on_graph(index, self._pos[index].tolist(), target[index].tolist())
                             for index in range(self.num_envs)])

    kwargs = {**gymnasium.spec("rware-tiny-10ag-v2").kwargs}
    batched, on_graph = VectorisedWarehouse(16, **kwargs), AlwaysOnTheGraph(16, **kwargs)
    rng = np.random.default_rng(0)
    first, second = batched.reset(list(range(16))), on_graph.reset(list(range(16)))
    for _ in range(200):
        np.testing.assert_array_equal(first.observation, second.observation)
        np.testing.assert_array_equal(first.reward, second.reward)
        actions = busy_warehouse_actions(first, rng)
        first, second = batched.step(actions), on_graph.step(actions)
    assert 0 < batched.graph_resolutions < 200 * 16, batched.graph_resolutions
