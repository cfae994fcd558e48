"""Appending each agent's one-hot index to the observations of B environments at once."""

from typing import Any, Dict, Optional, Sequence, Tuple

import dm_env
import numpy as np
from dm_env import specs

from wrappers.types import OLT
from wrappers.vectorised.base import BatchedEnvironment, BatchedTimeStep


class BatchedAgentIDs:
    """`environment` with each agent's observation (flattened) followed by its one-hot index,
    as `wrappers.AgentIDObservations` gives each environment's: float32 vectors."""

    def __init__(self, environment: BatchedEnvironment):
        self._environment = environment
        self._one_hots = np.eye(environment.num_agents, dtype=np.float32)
        self._observation_spec = {}
        for agent, spec in environment.observation_spec().items():
            size = int(np.prod(spec.observation.shape, dtype=np.int64)) + environment.num_agents
            self._observation_spec[agent] = spec._replace(
                observation=specs.Array((size,), np.float32, name=spec.observation.name))

    def observation_spec(self) -> Dict[str, OLT]:
        """Per agent, the specs with the longer observation."""
        return self._observation_spec

    def reset(self, seeds: Optional[Sequence[Optional[int]]] = None) -> BatchedTimeStep:
        """The wrapped `reset`, with agent IDs."""
        return self._with_ids(self._environment.reset(seeds))

    def step(self, actions: np.ndarray) -> BatchedTimeStep:
        """The wrapped `step`, with agent IDs."""
        return self._with_ids(self._environment.step(actions))

    def timestep(self, batched: BatchedTimeStep, index: int
                 ) -> Tuple[dm_env.TimeStep, Dict[str, np.ndarray]]:
        """Environment `index`'s step (see `BatchedEnvironment.timestep`)."""
        return self._environment.timestep(batched, index)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._environment, name)

    def _with_ids(self, batched: BatchedTimeStep) -> BatchedTimeStep:
        observation = batched.observation.astype(np.float32, copy=False)
        num_envs, num_agents = observation.shape[:2]
        observation = observation.reshape(num_envs, num_agents, -1)
        ids = np.broadcast_to(self._one_hots, (num_envs, num_agents, num_agents))
        return batched._replace(observation=np.concatenate([observation, ids], axis=-1))
