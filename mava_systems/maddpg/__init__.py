"""MADDPG and MAD4PG: multi-agent deterministic policy gradients (MAD4PG: distributional critics)."""

from mava_systems.maddpg.builder import MAD4PGBuilder, MADDPGBuilder
from mava_systems.maddpg.config import MAD4PGConfig, MADDPGConfig
from mava_systems.maddpg.execution import MADDPGExecutor
from mava_systems.maddpg.networks import (CriticInputs, MADDPGNetworks, make_default_networks,
                                          make_distributional_networks, make_networks)
from mava_systems.maddpg.system import MAD4PG, MADDPG
from mava_systems.maddpg.training import MAD4PGTrainer, MADDPGTrainer
