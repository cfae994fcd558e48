"""R2D2: recurrent replay distributed DQN, on the shared components."""

from mava_systems.r2d2.builder import R2D2Builder
from mava_systems.r2d2.config import R2D2Config
from mava_systems.r2d2.execution import R2D2Executor
from mava_systems.r2d2.networks import R2D2Networks, RecurrentQNetwork, make_networks
from mava_systems.r2d2.system import R2D2
from mava_systems.r2d2.training import R2D2Trainer
