"""Online and target policies and critics per network key: what actor-critic systems train."""

import dataclasses
from typing import Dict, List, Mapping, Tuple

import numpy as np
import sonnet as snt

from mava_systems.specs import MAEnvironmentSpec, agents_by_network


def action_bounds(environment_spec: MAEnvironmentSpec, agent_networks: Mapping[str, str]
                  ) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    """Per network key, the (minimum, maximum) float32 arrays of its agents' action spec."""
    bounds = {}
    for key, agents in agents_by_network(agent_networks).items():
        spec = environment_spec.actions[agents[0]]
        bounds[key] = (np.asarray(spec.minimum, np.float32), np.asarray(spec.maximum, np.float32))
    return bounds


@dataclasses.dataclass
class ActorCriticNetworks:
    """Online and target policies and critics keyed by network key, and which agent uses which."""

    policies: Dict[str, snt.Module]
    critics: Dict[str, snt.Module]
    target_policies: Dict[str, snt.Module]
    target_critics: Dict[str, snt.Module]
    agent_networks: Dict[str, str]

    @property
    def agents_by_network(self) -> Dict[str, List[str]]:
        """Agents grouped by the network they share, in agent order."""
        return agents_by_network(self.agent_networks)

    def trained_modules(self) -> Dict[str, snt.Module]:
        """Every trained module, by name."""
        return {**{f"policy/{key}": policy for key, policy in self.policies.items()},
                **{f"critic/{key}": critic for key, critic in self.critics.items()}}

    def copy_to_targets(self) -> None:
        """Makes every target network equal to its online network."""
        for key in self.policies:
            for online, target in ((self.policies[key], self.target_policies[key]),
                                   (self.critics[key], self.target_critics[key])):
                for target_variable, variable in zip(target.variables, online.variables):
                    target_variable.assign(variable)
