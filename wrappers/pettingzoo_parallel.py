"""dm_env-style wrapper for PettingZoo parallel environments (all agents act at once)."""

from typing import Any, Dict, Mapping, Optional

import dm_env
from pettingzoo.utils.env import ParallelEnv

from wrappers.pettingzoo_common import PettingZooWrapperBase
from wrappers.pettingzoo_direct import DirectParallelStep
from wrappers.states import StateReader, pettingzoo_state
from wrappers.types import OLT


class ParallelEnvWrapper(PettingZooWrapperBase):
    """A PettingZoo `ParallelEnv` as a `MultiAgentEnvironment`.

    Each `step` takes one action per agent still in the episode (actions of agents
    that have left are ignored). Per-agent action masks found in
    `info["action_mask"]` or in dict observations become `legal_actions`.
    Calling `step` after a LAST timestep starts a new episode.

    A PettingZoo AEC env converted to a parallel one is stepped without its
    wrapper chain's attribute forwarding, with the same results (see
    `pettingzoo_direct`).
    """

    def __init__(self, env: ParallelEnv, seed: Optional[int] = None, state_reader: StateReader = pettingzoo_state):
        super().__init__(env, seed=seed, state_reader=state_reader)
        self._step_env = DirectParallelStep.of(env) or env.step

    def reset(self) -> dm_env.TimeStep:
        """Starts a new episode and returns its FIRST timestep."""
        observations, infos = self._env.reset(**self._reset_kwargs())
        present = [agent for agent in self._env.agents if agent in observations]
        return self._first_timestep(present, self._observer(observations, infos))

    def step(self, actions: Mapping[str, Any]) -> dm_env.TimeStep:
        """Applies one action per agent still in the episode and returns the next timestep."""
        if self._reset_next_step:
            return self.reset()
        acting = [agent for agent in self._env.agents if agent not in self._departed]
        env_actions = {agent: self._env_action(agent, actions) for agent in acting}
        observations, rewards, terminations, truncations, infos = self._step_env(env_actions)
        remaining = set(self._env.agents)
        vanished = [a for a in acting if a not in remaining and not (terminations.get(a) or truncations.get(a))]
        if vanished:  # left without a flag: treat as truncated
            truncations = {**truncations, **dict.fromkeys(vanished, True)}
        # Agents that joined during the step keep the episode going as well.
        episode_over = not any(
            not (terminations.get(agent) or truncations.get(agent))
            for agent in self._env.agents
            if agent not in self._departed
        )
        return self._transition_timestep(
            rewards, terminations, truncations, episode_over, self._observer(observations, infos)
        )

    def _observer(self, observations: Dict[str, Any], infos: Dict[str, Any]):
        """The function building an agent's OLT from this step's raw observations and infos."""
        converters = self._converters

        def observe(agent: str, done: bool) -> OLT:
            raw = observations.get(agent)
            if raw is None:
                if done:
                    return converters[agent].padding
                raise ValueError(f"agent {agent!r}: no observation returned, but it is still in the episode")
            info = infos.get(agent)
            mask = info.get("action_mask") if info else None
            return converters[agent].convert(raw, done, mask)

        return observe
