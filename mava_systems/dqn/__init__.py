"""DQN: the single-agent specialisation of MADQN."""

from mava_systems.dqn.config import DQNConfig
from mava_systems.dqn.system import DQN
