"""VDN hyper-parameters: MADQN's, plus how the agents' rewards make the team's."""

import dataclasses

from mava_systems.madqn.config import MADQNConfig

TEAM_REWARDS = ("mean", "sum")


@dataclasses.dataclass
class VDNConfig(MADQNConfig):
    """Every VDN hyper-parameter: MADQN's, and `team_reward`."""

    # The team's reward at each step: the "mean" or the "sum" of every agent's reward
    # (an agent that has left the episode counts as 0).
    team_reward: str = "mean"

    def __post_init__(self):
        super().__post_init__()
        if self.team_reward not in TEAM_REWARDS:
            raise ValueError(f"{type(self).__name__}.team_reward must be one of {TEAM_REWARDS}, "
                             f"got {self.team_reward!r}")
