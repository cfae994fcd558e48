"""MADQN: multi-agent deep Q-networks."""

from mava_systems.madqn.builder import MADQNBuilder
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.execution import MADQNExecutor, RecurrentMADQNExecutor
from mava_systems.madqn.networks import (MADQNNetworks, RecurrentQNetwork, make_mlp_q_network,
                                         make_networks, make_recurrent_q_network)
from mava_systems.madqn.system import MADQN
from mava_systems.madqn.training import MADQNTrainer, RecurrentMADQNTrainer, SequenceLearning
