"""MATD3: MADDPG with TD3's twin critics, target policy smoothing and delayed policy updates."""

from mava_systems.matd3.builder import MATD3Builder
from mava_systems.matd3.config import MATD3Config
from mava_systems.matd3.networks import TwinCritic, make_twin_networks
from mava_systems.matd3.system import MATD3
from mava_systems.matd3.training import MATD3Trainer
