"""Tiny PettingZoo environments for fast tests of learning systems."""

from typing import Any, Dict, Optional, Tuple

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

LEFT, STAY, RIGHT = 0, 1, 2


class AgentSpaces:
    """PettingZoo's per-agent space methods, read from `observation_spaces` and `action_spaces`
    (dicts by agent) for the debug environments."""

    observation_spaces: Dict[str, spaces.Space]
    action_spaces: Dict[str, spaces.Space]

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of `agent`."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of `agent`."""
        return self.action_spaces[agent]


class LineWorldEnv(AgentSpaces, ParallelEnv):
    """Cooperative walk to goals on a 1-D line (`line_world_v0`).

    `n_agents` agents stand on cells 0..`length`-1, each with its own goal cell;
    start and goal cells are drawn at reset from `np.random.default_rng(seed)`
    (agents may share cells). Each agent observes the one-hot of its cell followed
    by the one-hot of its goal (float32, shape (2 * length,)) and picks LEFT (0),
    STAY (1) or RIGHT (2); moves past the ends are clipped. After the moves every
    agent gets the same team reward
        -(sum over agents of |cell - goal|) / (n_agents * length),
    so the reward is 0 only when everyone is on their goal. Episodes end by
    truncation of all agents after `max_cycles` steps; nobody terminates.
    `state()` is the concatenation of all observations.

    With `continuous_actions=True` (as MPE's flag) each action is a float in
    [-1, 1] (a Box of shape (1,)), rounded to the nearest of LEFT (-1), STAY (0)
    and RIGHT (+1) moves: the same task for continuous-action systems.

    With the defaults (2 agents, length 5, 10 steps), measured over 10,000
    episodes: a uniformly random policy returns about -3.2 per episode, the
    greedy policy (step towards the goal, then stay) -0.24 (exactly, in expectation),
    which is optimal; `optimal_actions()` gives it.
    """

    metadata = {"name": "line_world_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(self, n_agents: int = 2, length: int = 5, max_cycles: int = 10, render_mode: Optional[str] = None,
                 continuous_actions: bool = False):
        if n_agents < 1 or length < 2 or max_cycles < 1:
            raise ValueError(
                f"need n_agents >= 1, length >= 2 and max_cycles >= 1, got {n_agents}, {length}, {max_cycles}"
            )
        if render_mode not in (None, "ansi"):
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        self.render_mode = render_mode
        self._length = length
        self._max_cycles = max_cycles
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents = []
        self.observation_spaces = {
            agent: spaces.Box(0.0, 1.0, (2 * length,), np.float32) for agent in self.possible_agents
        }
        self._continuous_actions = continuous_actions
        action_space = spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous_actions else spaces.Discrete(3)
        self.action_spaces = {agent: action_space for agent in self.possible_agents}
        self.state_space = spaces.Box(0.0, 1.0, (2 * length * n_agents,), np.float32)
        self._rng: Optional[np.random.Generator] = None
        self._cells = np.zeros(n_agents, np.int64)
        self._goals = np.zeros(n_agents, np.int64)
        self._steps = 0

    def reset(
        self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[Dict[str, np.ndarray], Dict[str, Dict]]:
        """Draws new start and goal cells (re-seeding the generator if `seed` is given)."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        n_agents = len(self.possible_agents)
        self._cells = self._rng.integers(0, self._length, size=n_agents)
        self._goals = self._rng.integers(0, self._length, size=n_agents)
        self._steps = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: Dict[str, int]):
        """Moves every agent, then returns observations, rewards, terminations, truncations, infos."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        moves = np.array([self._move(actions[agent]) for agent in self.possible_agents])
        self._cells = np.clip(self._cells + moves, 0, self._length - 1)
        self._steps += 1
        reward = -float(np.abs(self._cells - self._goals).sum()) / (len(self.possible_agents) * self._length)
        truncated = self._steps >= self._max_cycles
        agents = self.agents
        observations = self._observations()
        if truncated:
            self.agents = []
        return (
            observations,
            {agent: reward for agent in agents},
            {agent: False for agent in agents},
            {agent: truncated for agent in agents},
            {agent: {} for agent in agents},
        )

    def _move(self, action: Any) -> int:
        """-1, 0 or +1: a discrete action less STAY, or a continuous one clipped and rounded."""
        if self._continuous_actions:
            return int(np.rint(np.clip(np.asarray(action, np.float64).reshape(-1)[0], -1.0, 1.0)))
        return int(action) - STAY

    def state(self) -> np.ndarray:
        """All agents' observations, concatenated in `possible_agents` order."""
        return self._observation_matrix().reshape(-1)

    def render(self) -> Optional[str]:
        """With render_mode "ansi", one line per agent: A its cell, G its goal, * both."""
        if self.render_mode != "ansi":
            return None
        lines = []
        for agent, cell, goal in zip(self.possible_agents, self._cells, self._goals):
            row = ["."] * self._length
            row[goal] = "G"
            row[cell] = "*" if cell == goal else "A"
            lines.append(f"{agent}: {''.join(row)}")
        return "\n".join(lines)

    def optimal_actions(self) -> Dict[str, int]:
        """The greedy (optimal) joint action: every agent steps towards its goal."""
        return {
            agent: STAY + int(np.sign(goal - cell))
            for agent, cell, goal in zip(self.possible_agents, self._cells, self._goals)
        }

    def _observation_matrix(self) -> np.ndarray:
        n_agents = len(self.possible_agents)
        matrix = np.zeros((n_agents, 2 * self._length), np.float32)
        rows = np.arange(n_agents)
        matrix[rows, self._cells] = 1.0
        matrix[rows, self._length + self._goals] = 1.0
        return matrix

    def _observations(self) -> Dict[str, np.ndarray]:
        matrix = self._observation_matrix()
        return {agent: matrix[i] for i, agent in enumerate(self.possible_agents)}


def parallel_env(**kwargs: Any) -> LineWorldEnv:
    """A new `LineWorldEnv` (`line_world_v0`) built with `kwargs`."""
    return LineWorldEnv(**kwargs)
