"""MAPPO and IPPO: multi-agent PPO with a centralised or decentralised critic."""

from mava_systems.mappo.builder import MAPPOBuilder
from mava_systems.mappo.config import MAPPOConfig
from mava_systems.mappo.execution import MAPPOExecutor, RecurrentMAPPOExecutor
from mava_systems.mappo.networks import (MAPPONetworks, make_mlp_networks, make_networks,
                                         make_recurrent_networks)
from mava_systems.mappo.system import IPPO, MAPPO
from mava_systems.mappo.training import (MAPPOTrainer, RecurrentMAPPOTrainer,
                                         generalized_advantages)
