"""The multi-agent environment specification every system is built from."""

import dataclasses
from typing import Any, Dict, List, Mapping, Tuple

from acme import specs as acme_specs
from dm_env import specs

from wrappers import MultiAgentEnvironment


@dataclasses.dataclass(frozen=True)
class MAEnvironmentSpec:
    """Per-agent specs of a multi-agent environment, in a fixed agent order."""

    agents: List[str]
    observations: Dict[str, Any]
    actions: Dict[str, specs.Array]
    rewards: Dict[str, specs.Array]
    discounts: Dict[str, specs.Array]
    extras: Dict[str, specs.Array]

    @classmethod
    def from_environment(cls, environment: MultiAgentEnvironment) -> "MAEnvironmentSpec":
        """Reads every spec of `environment`."""
        return cls(
            agents=list(environment.agents),
            observations=dict(environment.observation_spec()),
            actions=dict(environment.action_spec()),
            rewards=dict(environment.reward_spec()),
            discounts=dict(environment.discount_spec()),
            extras=dict(environment.extras_spec()),
        )

    def stacked(self, stacker: "Any") -> acme_specs.EnvironmentSpec:
        """The Acme spec of this environment's data stacked per network by `stacker`."""
        return acme_specs.EnvironmentSpec(
            observations=stacker.stack_spec(self.observations),
            actions=stacker.stack_spec(self.actions),
            rewards=stacker.stack_spec(self.rewards),
            discounts=stacker.stack_spec(self.discounts),
        )


def agent_type(agent: str) -> str:
    """The type of an agent: its name without the trailing index (`adversary_0` -> `adversary`)."""
    prefix, _, suffix = agent.rpartition("_")
    return prefix if prefix and suffix.isdigit() else agent


def network_keys(agents: List[str], shared_weights: bool) -> Dict[str, str]:
    """Maps each agent to the key of the network it uses.

    With shared weights, agents of one type share one network; otherwise each
    agent has its own.
    """
    return {agent: agent_type(agent) if shared_weights else agent for agent in agents}


def agents_by_network(agent_networks: Mapping[str, str]) -> Dict[str, List[str]]:
    """Inverts an agent -> network key mapping, keeping agent order."""
    grouped: Dict[str, List[str]] = {}
    for agent, key in agent_networks.items():
        grouped.setdefault(key, []).append(agent)
    return grouped


def shared_specs(environment_spec: MAEnvironmentSpec, key: str, agents: List[str]) -> Tuple[Any, Any]:
    """(observation spec, action spec) of the agents sharing network `key`.

    Raises:
      ValueError: if those agents have different observation or action specs.
    """
    observation_spec = environment_spec.observations[agents[0]].observation
    action_spec = environment_spec.actions[agents[0]]
    for agent in agents[1:]:
        if (environment_spec.observations[agent].observation != observation_spec
                or environment_spec.actions[agent] != action_spec):
            raise ValueError(
                f"agents {agents[0]!r} and {agent!r} share network {key!r} but have different "
                "observation or action specs; use shared_weights=False")
    return observation_spec, action_spec
