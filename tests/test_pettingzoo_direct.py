"""DirectParallelStep steps PettingZoo's AEC-to-parallel conversions exactly as their own `step`."""

import importlib
import warnings

import numpy as np
import pytest

from wrappers.pettingzoo_direct import DirectParallelStep

ENVS = [
    ("mpe2.simple_spread_v3", {}),
    ("mpe2.simple_spread_v3", {"continuous_actions": True}),
    ("mpe2.simple_tag_v3", {}),
    ("mpe2.simple_world_comm_v3", {}),
    ("pettingzoo.sisl.multiwalker_v9", {}),
    ("pettingzoo.sisl.pursuit_v5", {"max_cycles": 8}),
]


def make(module: str, kwargs: dict):
    return importlib.import_module(module).parallel_env(**kwargs)


def assert_same(left, right, where: str) -> None:
    if isinstance(left, dict):
        assert isinstance(right, dict) and list(left) == list(right), where
        for key in left:
            assert_same(left[key], right[key], f"{where}[{key}]")
    elif isinstance(left, tuple):
        assert isinstance(right, tuple) and len(left) == len(right), where
        for index, (a, b) in enumerate(zip(left, right)):
            assert_same(a, b, f"{where}[{index}]")
    elif isinstance(left, np.ndarray):
        np.testing.assert_array_equal(left, right, err_msg=where)
        assert left.dtype == right.dtype, where
    else:
        assert type(left) is type(right) and left == right, (where, left, right)


@pytest.mark.parametrize("module,kwargs", ENVS, ids=[f"{m.split('.')[-1]}{'-cont' if k.get('continuous_actions') else ''}"
                                                     for m, k in ENVS])
def test_same_steps_as_the_conversion(module, kwargs):
    """Observations, rewards, flags, infos and agents match step for step, over whole episodes
    (with random actions, out-of-bounds continuous ones included: both clip them)."""
    reference, direct_env = make(module, kwargs), make(module, kwargs)
    direct = DirectParallelStep.of(direct_env)
    assert direct is not None
    rng = np.random.default_rng(0)
    steps = 0
    for episode in range(3):
        observations = [env.reset(seed=episode) for env in (reference, direct_env)]
        assert_same(observations[0], observations[1], "reset")
        while reference.agents and steps < 400:
            actions = {}
            for agent in reference.agents:
                space = reference.action_space(agent)
                actions[agent] = (int(rng.integers(space.n)) if hasattr(space, "n") else
                                  rng.uniform(-1.5, 1.5, space.shape).astype(space.dtype))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = reference.step(actions)
                got = direct(actions)
            for name, left, right in zip(("observations", "rewards", "terminations", "truncations",
                                          "infos"), expected, got):
                assert_same(dict(left), dict(right), f"step {steps} {name}")
            assert reference.agents == direct_env.agents
            steps += 1
    assert steps > 20


def test_out_of_bounds_discrete_action_raises_as_the_conversion():
    reference, direct_env = make("mpe2.simple_spread_v3", {}), make("mpe2.simple_spread_v3", {})
    for env in (reference, direct_env):
        env.reset(seed=0)
    actions = {agent: 0 for agent in reference.agents}
    actions[reference.agents[1]] = 5
    with pytest.raises(AssertionError, match="action is not in action space"):
        reference.step(actions)
    with pytest.raises(AssertionError, match="action is not in action space"):
        DirectParallelStep.of(direct_env)(actions)


def test_other_environments_are_not_stepped_directly():
    from pettingzoo.utils.wrappers import BaseWrapper
    env = make("mpe2.simple_spread_v3", {})
    env.aec_env.env = BaseWrapper(env.aec_env.env)  # An extra wrapper: not the standard chain.
    assert DirectParallelStep.of(env) is None
    assert DirectParallelStep.of(object()) is None
