"""dm_env-style wrapper for PettingZoo AEC environments (agents take turns)."""

from typing import Any, Dict, Mapping, Optional

import dm_env
from pettingzoo.utils.env import AECEnv

from wrappers.pettingzoo_common import PettingZooWrapperBase
from wrappers.states import StateReader, pettingzoo_state
from wrappers.types import OLT


class AECEnvWrapper(PettingZooWrapperBase):
    """A PettingZoo `AECEnv` (turn-based) as a `MultiAgentEnvironment`.

    Each `step(actions)` applies only the action of `current_agent`, the agent to
    move, and returns observations of all agents. Only the agent to move next has
    non-zero `legal_actions` (its action mask, or all ones if the env has none).
    Rewards are what the env hands out during the step. Agents that are done are
    stepped out of the env internally, so `current_agent` is always a live agent.
    Calling `step` after a LAST timestep starts a new episode.
    """

    def __init__(self, env: AECEnv, seed: Optional[int] = None, state_reader: StateReader = pettingzoo_state):
        super().__init__(env, seed=seed, state_reader=state_reader)

    @property
    def current_agent(self) -> Optional[str]:
        """The agent whose action the next `step` applies; None when no episode is running."""
        if self._reset_next_step:
            return None
        return self._env.agent_selection

    def reset(self) -> dm_env.TimeStep:
        """Starts a new episode and returns its FIRST timestep."""
        self._env.reset(**self._reset_kwargs())
        self._remove_done_agents({})
        present = [agent for agent in self._env.agents if not self._is_done(agent)]
        current = self._env.agent_selection if present else None
        return self._first_timestep(present, self._observer({}, current))

    def step(self, actions: Mapping[str, Any]) -> dm_env.TimeStep:
        """Applies the action of `current_agent` and returns the next timestep."""
        if self._reset_next_step:
            return self.reset()
        env = self._env
        acting = [agent for agent in env.agents if agent not in self._departed]
        env.step(self._env_action(env.agent_selection, actions))

        rewards: Dict[str, float] = dict(env.rewards)
        terminations = dict(env.terminations)
        truncations = dict(env.truncations)
        # Done agents must be observed now: stepping them out removes them from the env.
        final_observations = {
            agent: env.observe(agent)
            for agent in acting
            if agent in terminations and (terminations[agent] or truncations[agent])
        }
        self._remove_done_agents(rewards)
        terminations.update(env.terminations)
        truncations.update(env.truncations)
        remaining = set(env.agents)
        for agent in acting:
            if agent not in remaining and agent not in final_observations:
                truncations[agent] = True  # left without a flag

        episode_over = not any(not self._is_done(agent) for agent in env.agents if agent not in self._departed)
        current = None if episode_over else env.agent_selection
        return self._transition_timestep(
            rewards, terminations, truncations, episode_over, self._observer(final_observations, current)
        )

    def _is_done(self, agent: str) -> bool:
        """Whether the env flags `agent` as terminated or truncated."""
        return bool(self._env.terminations.get(agent) or self._env.truncations.get(agent))

    def _remove_done_agents(self, rewards: Dict[str, float]) -> None:
        """Steps done agents out (PettingZoo wants a None action from each), adding up their rewards."""
        env = self._env
        while env.agents and self._is_done(env.agent_selection):
            env.step(None)
            for agent, reward in env.rewards.items():
                rewards[agent] = rewards.get(agent, 0.0) + reward

    def _observer(self, final_observations: Dict[str, Any], current: Optional[str]):
        """The function building an agent's OLT; only `current` may get a non-zero mask."""
        env = self._env
        converters = self._converters
        remaining = set(env.agents)

        def observe(agent: str, done: bool) -> OLT:
            converter = converters[agent]
            if agent in final_observations:
                return converter.convert(final_observations[agent], done, converter.no_legal)
            if agent not in remaining:
                return converter.padding
            if agent != current:
                return converter.convert(env.observe(agent), done, converter.no_legal)
            info = env.infos.get(agent)
            return converter.convert(env.observe(agent), done, info.get("action_mask") if info else None)

        return observe
