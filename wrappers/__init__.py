"""Multi-agent environment wrappers: PettingZoo and Gymnasium environments behind a dm_env-style interface."""

from wrappers.agent_ids import AgentIDObservations, WithAgentIDs
from wrappers.base import MultiAgentEnvironment
from wrappers.pettingzoo_aec import AECEnvWrapper
from wrappers.pettingzoo_parallel import ParallelEnvWrapper
from wrappers.gymnasium_multiagent import TupleSpaceParallelEnv
from wrappers.registry import (EnvironmentFactory, EnvironmentFamily, available_environments, import_registration,
                               make_environment_factory, register_environment, register_family, wrap_environment)
from wrappers.types import OLT

__all__ = [
    "OLT",
    "AgentIDObservations",
    "WithAgentIDs",
    "MultiAgentEnvironment",
    "ParallelEnvWrapper",
    "AECEnvWrapper",
    "TupleSpaceParallelEnv",
    "EnvironmentFactory",
    "make_environment_factory",
    "available_environments",
    "register_environment",
    "register_family",
    "EnvironmentFamily",
    "import_registration",
    "wrap_environment",
]
