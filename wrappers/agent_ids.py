"""Appending each agent's one-hot index to its observation."""

from typing import Any, Dict, List, Optional, Union

import dm_env
import numpy as np
from dm_env import specs

from wrappers.base import MultiAgentEnvironment
from wrappers.types import OLT


class AgentIDObservations(MultiAgentEnvironment):
    """`environment` with each agent's observation (flattened) followed by its one-hot index.

    Agents that share a network see identical inputs in symmetric situations;
    the index lets them learn different roles (e.g. which landmark to cover in
    simple_spread). Observations become float32 vectors.
    """

    def __init__(self, environment: MultiAgentEnvironment):
        self._environment = environment
        agents = environment.agents
        self._one_hots = {agent: np.eye(len(agents), dtype=np.float32)[index]
                          for index, agent in enumerate(agents)}
        self._observation_spec = {}
        for agent, spec in environment.observation_spec().items():
            if not np.issubdtype(spec.observation.dtype, np.number):
                raise ValueError(f"agent IDs need numeric observations; agent {agent!r} has "
                                 f"{spec.observation.dtype}")
            size = int(np.prod(spec.observation.shape, dtype=np.int64)) + len(agents)
            self._observation_spec[agent] = spec._replace(
                observation=specs.Array((size,), np.float32, name=spec.observation.name))

    @property
    def agents(self) -> List[str]:
        return self._environment.agents

    def observation_spec(self) -> Dict[str, OLT]:
        return self._observation_spec

    def action_spec(self) -> Dict[str, specs.Array]:
        return self._environment.action_spec()

    def reward_spec(self) -> Dict[str, specs.Array]:
        return self._environment.reward_spec()

    def discount_spec(self) -> Dict[str, specs.BoundedArray]:
        return self._environment.discount_spec()

    def extras_spec(self) -> Dict[str, specs.Array]:
        return self._environment.extras_spec()

    def get_extras(self) -> Dict[str, np.ndarray]:
        return self._environment.get_extras()

    def reset(self) -> dm_env.TimeStep:
        return self._with_ids(self._environment.reset())

    def step(self, actions: Dict[str, Any]) -> dm_env.TimeStep:
        return self._with_ids(self._environment.step(actions))

    @property
    def render_modes(self) -> List[str]:
        """The wrapped environment's render modes."""
        return self._environment.render_modes

    @property
    def render_mode(self) -> Optional[str]:
        """The wrapped environment's render mode."""
        return self._environment.render_mode

    def render(self) -> Union[np.ndarray, str, None]:
        """The wrapped environment's rendering (agent IDs are not drawn)."""
        return self._environment.render()

    def close(self) -> None:
        self._environment.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # Not set yet (e.g. while unpickling): not the wrapped env's.
            raise AttributeError(name)
        return getattr(self._environment, name)

    def _with_ids(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        observations = {
            agent: olt._replace(observation=np.concatenate(
                [np.asarray(olt.observation, np.float32).ravel(), self._one_hots[agent]]))
            for agent, olt in timestep.observation.items()}
        return timestep._replace(observation=observations)


class WithAgentIDs:
    """An environment factory making `factory`'s environments wrapped in `AgentIDObservations`."""

    def __init__(self, factory: Any):
        self.factory = factory

    def __call__(self, evaluation: bool = False, seed: Any = None) -> AgentIDObservations:
        return AgentIDObservations(self.factory(evaluation=evaluation, seed=seed))

    @property
    def name(self) -> Any:
        """The wrapped factory's environment name (if it has one)."""
        return getattr(self.factory, "name", None)

    @property
    def env_kwargs(self) -> Any:
        """The wrapped factory's constructor kwargs (if it has them)."""
        return getattr(self.factory, "env_kwargs", None)

    @property
    def registration(self) -> Any:
        """The module registering the wrapped factory's user environment (if it has one)."""
        return getattr(self.factory, "registration", None)

    def __repr__(self) -> str:
        return f"WithAgentIDs({self.factory!r})"
