"""DMPO: distributional maximum a posteriori policy optimisation, on the shared components."""

from mava_systems.dmpo.builder import DMPOBuilder
from mava_systems.dmpo.config import DMPOConfig
from mava_systems.dmpo.execution import DMPOExecutor
from mava_systems.dmpo.networks import DMPONetworks, make_default_networks, make_networks
from mava_systems.dmpo.system import DMPO
from mava_systems.dmpo.training import DMPOTrainer
