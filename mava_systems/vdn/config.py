"""VDN hyper-parameters: MADQN's, plus how the agents' rewards make the team's."""

import dataclasses

from mava_systems.config import documented
from mava_systems.madqn.config import MADQNConfig

TEAM_REWARDS = ("mean", "sum")


@dataclasses.dataclass
class VDNConfig(MADQNConfig):
    """Every VDN hyper-parameter: MADQN's, and `team_reward`."""

    team_reward: str = documented(
        "mean", "The team's reward at each step: mean or sum of the agents' rewards (an agent "
                "that has left the episode counts as 0).")

    def __post_init__(self):
        super().__post_init__()
        if self.team_reward not in TEAM_REWARDS:
            raise ValueError(f"{type(self).__name__}.team_reward must be one of {TEAM_REWARDS}, "
                             f"got {self.team_reward!r}")
