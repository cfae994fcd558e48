"""Agent-keyed data <-> one stacked array per network (agents that share a network side by side).

Executors act on, and replay stores, the stacked form: one forward pass per
network, and a few wide replay columns instead of a column per agent and field.
"""

from typing import Any, Dict, List, Mapping, Sequence

from dm_env import specs
import numpy as np
import tree

from mava_systems.specs import agents_by_network


def _stack_spec(agent_specs: List[specs.Array]) -> specs.Array:
    first = agent_specs[0]
    return specs.Array((len(agent_specs),) + tuple(first.shape), first.dtype, name=first.name)


def stack_arrays(values: Sequence[Any]) -> np.ndarray:
    """`np.stack(values)` (arrays or numbers of one shape) at a fraction of its cost."""
    first = values[0]
    kind = type(first)
    if kind is np.ndarray or isinstance(first, np.generic):
        # Arrays and NumPy scalars of one type: compare their shapes without `np.shape`.
        shape = first.shape
        if all(type(value) is kind and value.shape == shape for value in values):
            return np.array(values)
    shape = np.shape(first)
    if all(np.shape(value) == shape for value in values[1:]):
        return np.array(values)
    return np.stack(values)  # Shapes differ: it raises its error.


class AgentStacker:
    """Stacks per-agent values along a new leading axis, one stack per network key."""

    def __init__(self, agent_networks: Mapping[str, str]):
        self.agents_by_network: Dict[str, List[str]] = agents_by_network(agent_networks)

    def stack(self, per_agent: Mapping[str, Any]) -> Dict[str, Any]:
        """{agent: nest} -> {network key: nest of arrays with a leading agent axis}.

        Executors stack every step's observations, actions, rewards and
        discounts: leaves are stacked by `stack_arrays`, nests flattened once.
        """
        stacked = {}
        for key, agents in self.agents_by_network.items():
            first = per_agent[agents[0]]
            if not tree.is_nested(first):
                stacked[key] = stack_arrays([per_agent[agent] for agent in agents])
                continue
            columns = [stack_arrays(column) for column in zip(
                *[tree.flatten(per_agent[agent]) for agent in agents], strict=True)]
            if hasattr(first, "_make") and not any(map(tree.is_nested, first)):
                stacked[key] = first._make(columns)  # A namedtuple of leaves, e.g. an `OLT`.
            else:
                stacked[key] = tree.unflatten_as(first, columns)
        return stacked

    def unstack(self, per_network: Mapping[str, Any]) -> Dict[str, Any]:
        """{network key: array with a leading agent axis} -> {agent: row}."""
        return {agent: per_network[key][index]
                for key, agents in self.agents_by_network.items()
                for index, agent in enumerate(agents)}

    def stack_spec(self, per_agent: Mapping[str, Any]) -> Dict[str, Any]:
        """The spec of `stack(x)` for x matching the agent-keyed spec `per_agent`."""
        return {key: tree.map_structure(lambda *agent_specs: _stack_spec(list(agent_specs)),
                                        *[per_agent[agent] for agent in agents])
                for key, agents in self.agents_by_network.items()}
