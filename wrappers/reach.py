"""Cooperative reaching with continuous actions (`debug/reach_v0`): a fast test of MADDPG-style systems.

`n_agents` agents move in the unit square, each towards its own goal. An agent
observes its position and the offset to its goal (float32, shape (4,)) and
chooses a velocity in [-1, 1]^2; it moves by `step_size` times it, clipped to
the square. After the moves every agent gets the same team reward
    -(mean over agents of the distance to its goal),
so the team only does well when every agent does. Episodes end by truncation
after `max_cycles` steps; nobody terminates. `state()` is the concatenation of
all observations. Start and goal positions are drawn at reset from
`np.random.default_rng(seed)`.

With the defaults (2 agents, 10 steps, step 0.25), measured over 10,000
episodes: uniformly random actions return about -5.5 per episode, moving
straight to the goal (`greedy_actions()`) about -0.36.
"""

from typing import Any, Dict, Optional, Tuple

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv


class ReachEnv(ParallelEnv):
    """Agents moving to their goals in the unit square (see the module docstring)."""

    metadata = {"name": "reach_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, n_agents: int = 2, max_cycles: int = 10, step_size: float = 0.25,
                 render_mode: Optional[str] = None):
        if n_agents < 1 or max_cycles < 1 or not step_size > 0:
            raise ValueError(f"need n_agents >= 1, max_cycles >= 1 and step_size > 0, got "
                             f"{n_agents}, {max_cycles}, {step_size}")
        if render_mode is not None:
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        self.render_mode = render_mode
        self._max_cycles = max_cycles
        self._step_size = float(step_size)
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents = []
        self.observation_spaces = {agent: spaces.Box(-1.0, 1.0, (4,), np.float32)
                                   for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Box(-1.0, 1.0, (2,), np.float32)
                              for agent in self.possible_agents}
        self.state_space = spaces.Box(-1.0, 1.0, (4 * n_agents,), np.float32)
        self._rng: Optional[np.random.Generator] = None
        self._positions = np.zeros((n_agents, 2), np.float32)
        self._goals = np.zeros((n_agents, 2), np.float32)
        self._steps = 0

    def observation_space(self, agent: str) -> spaces.Box:
        """The observation space of `agent`."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        """The action space of `agent`."""
        return self.action_spaces[agent]

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[Dict[str, np.ndarray], Dict[str, Dict]]:
        """Draws new start and goal positions (re-seeding the generator if `seed` is given)."""
        del options
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        shape = (len(self.possible_agents), 2)
        self._positions = self._rng.uniform(0.0, 1.0, shape).astype(np.float32)
        self._goals = self._rng.uniform(0.0, 1.0, shape).astype(np.float32)
        self._steps = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: Dict[str, np.ndarray]):
        """Moves every agent, then returns observations, rewards, terminations, truncations, infos."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        velocities = np.stack([np.clip(np.asarray(actions[agent], np.float32), -1.0, 1.0)
                               for agent in self.possible_agents])
        self._positions = np.clip(self._positions + self._step_size * velocities, 0.0, 1.0)
        self._steps += 1
        reward = -float(np.linalg.norm(self._goals - self._positions, axis=1).mean())
        truncated = self._steps >= self._max_cycles
        agents = self.agents
        observations = self._observations()
        if truncated:
            self.agents = []
        return (observations, {agent: reward for agent in agents},
                {agent: False for agent in agents}, {agent: truncated for agent in agents},
                {agent: {} for agent in agents})

    def state(self) -> np.ndarray:
        """All agents' observations, concatenated in `possible_agents` order."""
        return np.concatenate(list(self._observations().values()))

    def greedy_actions(self) -> Dict[str, np.ndarray]:
        """Every agent moving straight to its goal (at most one step's distance)."""
        offsets = (self._goals - self._positions) / self._step_size
        scale = np.maximum(np.abs(offsets).max(axis=1, keepdims=True), 1.0)
        return {agent: (offsets[i] / scale[i]).astype(np.float32)
                for i, agent in enumerate(self.possible_agents)}

    def _observations(self) -> Dict[str, np.ndarray]:
        offsets = self._goals - self._positions
        return {agent: np.concatenate([self._positions[i], offsets[i]]).astype(np.float32)
                for i, agent in enumerate(self.possible_agents)}


def parallel_env(**kwargs: Any) -> ReachEnv:
    """A new `ReachEnv` (`reach_v0`) built with `kwargs`."""
    return ReachEnv(**kwargs)
