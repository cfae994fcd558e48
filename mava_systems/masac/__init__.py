"""MASAC and ISAC: multi-agent soft actor-critic (squashed Gaussian policies, twin soft Q critics,
temperatures tuned to a target entropy), centralised or independent critics."""

from mava_systems.masac.builder import MASACBuilder
from mava_systems.masac.config import ISACConfig, MASACConfig
from mava_systems.masac.execution import MASACExecutor
from mava_systems.masac.networks import (SquashedGaussianPolicy, make_sac_networks,
                                         squashed_log_prob)
from mava_systems.masac.system import ISAC, MASAC
from mava_systems.masac.training import MASACTrainer
