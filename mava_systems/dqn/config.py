"""DQN hyper-parameters: MADQN's, with Acme's DQN defaults (prioritised replay)."""

import dataclasses

from mava_systems.config import redefault
from mava_systems.madqn.config import MADQNConfig


@dataclasses.dataclass
class DQNConfig(MADQNConfig):
    """Every DQN hyper-parameter (see `MADQNConfig`); replay is prioritised by default."""

    prioritized_replay: bool = redefault(MADQNConfig, "prioritized_replay", True)
