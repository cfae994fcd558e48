"""Stacking agents' values per network: the values np.stack gives, leaf by leaf."""

import numpy as np
import pytest
import tree

from mava_systems.data.stacking import AgentStacker
from wrappers import OLT

STACKER = AgentStacker({"agent_0": "a", "agent_1": "a", "agent_2": "b", "agent_3": "a"})
AGENTS = ["agent_0", "agent_1", "agent_2", "agent_3"]


def reference(per_agent):
    return {key: tree.map_structure(lambda *values: np.stack(values),
                                    *[per_agent[agent] for agent in agents])
            for key, agents in STACKER.agents_by_network.items()}


CASES = {
    "olt": lambda i: OLT(np.full(4, i, np.float32), np.ones(5, np.float32),
                         np.asarray(i % 2, np.float32)),
    "numpy scalars": lambda i: np.float32(i / 3),
    "python floats": lambda i: i / 3,
    "ints": lambda i: np.int32(i),
    "mixed numbers": lambda i: [np.float32(1), 2.5, 3, np.int64(4)][i],
    "nested": lambda i: {"a": np.full((2, 2), i, np.int8), "b": (np.float64(i), np.zeros(3))},
    "namedtuple of nests": lambda i: OLT({"x": np.full(2, i)}, np.ones(3), np.float32(i)),
}


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_stack_gives_what_np_stack_gives(make):
    per_agent = {agent: make(index) for index, agent in enumerate(AGENTS)}
    stacked, expected = STACKER.stack(per_agent), reference(per_agent)
    tree.assert_same_structure(stacked, expected)
    for got, want in zip(tree.flatten(stacked), tree.flatten(expected)):
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert STACKER.unstack(STACKER.stack({agent: np.float32(index)
                                          for index, agent in enumerate(AGENTS)})) == {
        agent: index for index, agent in enumerate(AGENTS)}


def test_values_of_different_shapes_or_structures_raise():
    with pytest.raises(ValueError, match="same shape"):
        STACKER.stack({agent: np.ones(2 + (agent == "agent_1")) for agent in AGENTS})
    with pytest.raises(ValueError):
        STACKER.stack({agent: (np.ones(2),) if agent == "agent_1" else OLT(1, 2, 3)
                       for agent in AGENTS})
