"""Multi-agent environment wrappers: PettingZoo environments behind a dm_env-style interface."""

from wrappers.agent_ids import AgentIDObservations, WithAgentIDs
from wrappers.base import MultiAgentEnvironment
from wrappers.pettingzoo_aec import AECEnvWrapper
from wrappers.pettingzoo_parallel import ParallelEnvWrapper
from wrappers.registry import EnvironmentFactory, available_environments, make_environment_factory
from wrappers.types import OLT

__all__ = [
    "OLT",
    "AgentIDObservations",
    "WithAgentIDs",
    "MultiAgentEnvironment",
    "ParallelEnvWrapper",
    "AECEnvWrapper",
    "EnvironmentFactory",
    "make_environment_factory",
    "available_environments",
]
