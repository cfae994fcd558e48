"""IMPALA: importance-weighted actor-learner with V-trace, on the shared components."""

from mava_systems.impala.builder import IMPALABuilder
from mava_systems.impala.config import IMPALAConfig
from mava_systems.impala.execution import IMPALAExecutor
from mava_systems.impala.networks import IMPALANetworks, make_mlp_actor_critic, make_networks
from mava_systems.impala.system import IMPALA
from mava_systems.impala.training import IMPALATrainer
