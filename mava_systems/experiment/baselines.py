"""The random-policy baseline that normalised scores start from."""

import threading
from typing import Any, Dict

from acme.utils import counting
import dm_env
import numpy as np
from dm_env import specs

from mava_systems.acting.environment_loop import EnvironmentLoop
import wrappers


class RandomExecutor:
    """Acts uniformly at random: among legal actions if discrete, within bounds if continuous."""

    def __init__(self, action_specs: Dict[str, specs.Array], seed: int = 0):
        self._action_specs = action_specs
        self._rng = np.random.default_rng(seed)

    def select_actions(self, observations: Dict[str, Any]) -> Dict[str, Any]:
        """One random action per agent."""
        actions = {}
        for agent, spec in self._action_specs.items():
            if isinstance(spec, specs.DiscreteArray):
                legal = np.flatnonzero(observations[agent].legal_actions)
                choices = legal if len(legal) else np.arange(spec.num_values)
                actions[agent] = np.int32(self._rng.choice(choices))
            else:
                actions[agent] = self._rng.uniform(spec.minimum, spec.maximum,
                                                   spec.shape).astype(spec.dtype)
        return actions

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        """Nothing to learn."""

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None:
        """Nothing to learn."""

    def update(self, wait: bool = False) -> None:
        """Nothing to update."""


def random_policy_return(environment_name: str, episodes: int = 100, seed: int = 0) -> float:
    """The mean episode return (summed over agents, as the evaluator's) of random actions."""
    environment = wrappers.make_environment_factory(environment_name)(evaluation=True, seed=seed)
    try:
        loop = EnvironmentLoop(environment, RandomExecutor(environment.action_spec(), seed),
                               counting.Counter(), stop_event=threading.Event())
        return float(np.mean([loop.run_episode()["episode_return"] for _ in range(episodes)]))
    finally:
        environment.close()
