"""The uniformly random policy: a baseline return to compare a trained policy with.

`random_policy_return` plays it through the same `EnvironmentLoop` as the
evaluator, so its return is summed over the agents in the same way.
"""

import dataclasses
import threading
import time
from typing import Any, Callable, Dict, Optional

from acme.utils import counting
from dm_env import specs
import numpy as np

from mava_systems.acting.environment_loop import EnvironmentLoop


class RandomExecutor:
    """Acts uniformly at random among each agent's legal actions (within bounds if continuous)."""

    def __init__(self, action_specs: Dict[str, specs.Array], seed: Optional[int] = None):
        self._specs = action_specs
        self._rng = np.random.default_rng(seed)

    def select_actions(self, observations: Dict[str, Any]) -> Dict[str, Any]:
        """One random action per agent of `observations` (its OLT's legal actions respected)."""
        return {agent: self._action(agent, observation)
                for agent, observation in observations.items()}

    def _action(self, agent: str, observation: Any) -> Any:
        spec = self._specs[agent]
        if isinstance(spec, specs.DiscreteArray):
            legal = np.flatnonzero(getattr(observation, "legal_actions", np.ones(spec.num_values)))
            choices = legal if legal.size else np.arange(spec.num_values)
            return spec.dtype.type(self._rng.choice(choices))
        return self._rng.uniform(spec.minimum, spec.maximum, spec.shape).astype(spec.dtype)

    def observe_first(self, timestep: Any) -> None:
        """Nothing to remember."""

    def observe(self, actions: Dict[str, Any], next_timestep: Any) -> None:
        """Nothing to remember."""

    def update(self, wait: bool = False) -> None:
        """No variables to fetch."""


@dataclasses.dataclass
class BaselineReturn:
    """A policy's mean episode return (summed over agents) and over how many episodes."""

    mean_return: float
    std_return: float
    episodes: int
    seed: int


def random_policy_return(environment_factory: Callable[..., Any], episodes: int = 100,
                         seed: int = 0, max_seconds: Optional[float] = None) -> BaselineReturn:
    """The random policy's return on `environment_factory(evaluation=True, seed=seed)`.

    Plays `episodes` episodes, or fewer (at least one) if `max_seconds` runs out first.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    environment = environment_factory(evaluation=True, seed=seed)
    try:
        loop = EnvironmentLoop(environment, RandomExecutor(environment.action_spec(), seed),
                               counting.Counter(), stop_event=threading.Event())
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        returns = []
        while len(returns) < episodes and (not returns or deadline is None
                                           or time.monotonic() < deadline):
            returns.append(loop.run_episode()["episode_return"])
    finally:
        environment.close()
    return BaselineReturn(float(np.mean(returns)), float(np.std(returns)), len(returns), seed)
