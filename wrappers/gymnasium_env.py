"""A single-agent Gymnasium environment presented as a one-agent PettingZoo parallel environment.

Wrapped once more by `ParallelEnvWrapper`, it becomes a `MultiAgentEnvironment`
with one agent, so single-agent systems run on the same components as the
multi-agent ones.
"""

from typing import Any, Dict, Optional, Tuple

import gymnasium
from pettingzoo.utils.env import ParallelEnv

AGENT = "agent_0"


class SingleAgentParallelEnv(ParallelEnv):
    """A Gymnasium `Env` as a PettingZoo `ParallelEnv` whose only agent is `agent_0`."""

    metadata = {"name": "single_agent_gymnasium", "is_parallelizable": True}

    def __init__(self, env: gymnasium.Env):
        if not isinstance(env, gymnasium.Env):
            raise ValueError(f"expected a gymnasium.Env, got {env!r}")
        self.env = env
        self.possible_agents = [AGENT]
        self.agents = []
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = {**self.metadata, "render_modes": list(env.metadata.get("render_modes", []))}

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        """The Gymnasium env's observation space (the only agent's)."""
        self._check_agent(agent)
        return self.env.observation_space

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        """The Gymnasium env's action space (the only agent's)."""
        self._check_agent(agent)
        return self.env.action_space

    def reset(self, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Tuple[Dict[str, Any], Dict[str, dict]]:
        """Resets the Gymnasium env; observations and infos are keyed by `agent_0`."""
        observation, info = self.env.reset(seed=seed, options=options)
        self.agents = [AGENT]
        return {AGENT: observation}, {AGENT: info}

    def step(self, actions: Dict[str, Any]):
        """Steps the Gymnasium env with `actions["agent_0"]`."""
        observation, reward, terminated, truncated, info = self.env.step(actions[AGENT])
        if terminated or truncated:
            self.agents = []
        return ({AGENT: observation}, {AGENT: float(reward)}, {AGENT: bool(terminated)},
                {AGENT: bool(truncated)}, {AGENT: info})

    def render(self) -> Any:
        """The Gymnasium env's rendering."""
        return self.env.render()

    def close(self) -> None:
        """Closes the Gymnasium env."""
        self.env.close()

    def _check_agent(self, agent: str) -> None:
        if agent != AGENT:
            raise KeyError(f"unknown agent {agent!r}: a single-agent environment has only {AGENT!r}")
