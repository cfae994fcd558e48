"""A cooperative memory task (`debug/memory_v0`): a cue seen only at the first step decides the
reward several steps later, so only agents with memory can do better than chance.

Each of `n_agents` agents is shown its own cue, one of `n_cues` drawn uniformly
at reset, at the first step only; every observation also holds the one-hot of
the step, so an agent always knows when it must act. After `delay` steps
in which nothing happens, each agent picks one of `n_cues` actions; if every
agent picks its own cue, every agent gets reward 1 (the team's), else 0, and
the episode ends (terminal). The episode has `delay + 1` steps.

The optimal return (sum over agents) is `n_agents`. An agent without memory
sees the same observation at the deciding step whatever its cue, so its choice
matches the cue with probability 1 / `n_cues` at best, and the team's return is
at most `n_agents / n_cues ** n_agents` in expectation: 0.5 with the defaults
(2 agents, 2 cues), against the optimum 2.
"""

from typing import Any, Dict, Optional, Tuple

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from wrappers.debug_envs import AgentSpaces


def chance_return(n_agents: int = 2, n_cues: int = 2) -> float:
    """The expected return of agents that act without remembering their cue."""
    return n_agents / n_cues ** n_agents


class MemoryGameEnv(AgentSpaces, ParallelEnv):
    """The memory task of the module docstring, as a PettingZoo parallel environment.

    Each agent's observation (float32, shape (n_cues + delay + 1,)) is the one-hot
    of its cue at the first step (zeros after), followed by the one-hot of the
    step. `state()` is the concatenation of the observations (so it, too, shows
    the cues only at the first step).
    """

    metadata = {"name": "memory_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, n_agents: int = 2, n_cues: int = 2, delay: int = 4,
                 render_mode: Optional[str] = None):
        if n_agents < 1 or n_cues < 2 or delay < 1:
            raise ValueError(f"need n_agents >= 1, n_cues >= 2 and delay >= 1, got {n_agents}, "
                             f"{n_cues}, {delay}")
        if render_mode is not None:
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        self.render_mode = render_mode
        self._n_cues = n_cues
        self._delay = delay
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents = []
        size = n_cues + delay + 1
        self.observation_spaces = {agent: spaces.Box(0.0, 1.0, (size,), np.float32)
                                   for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(n_cues) for agent in self.possible_agents}
        self.state_space = spaces.Box(0.0, 1.0, (size * n_agents,), np.float32)
        self._rng: Optional[np.random.Generator] = None
        self._cues = np.zeros(n_agents, np.int64)
        self._step = 0

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[Dict[str, np.ndarray], Dict[str, Dict]]:
        """Draws new cues (re-seeding the generator if `seed` is given)."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self._cues = self._rng.integers(0, self._n_cues, size=len(self.possible_agents))
        self._step = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: Dict[str, int]):
        """Plays one step; returns observations, rewards, terminations, truncations, infos."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        agents = self.agents
        done = self._step == self._delay
        reward = 0.0
        if done:
            chosen = np.array([int(actions[agent]) for agent in self.possible_agents])
            reward = float(np.all(chosen == self._cues))
            self.agents = []
        self._step += 1
        return (self._observations(agents), {agent: reward for agent in agents},
                {agent: done for agent in agents}, {agent: False for agent in agents},
                {agent: {} for agent in agents})

    def optimal_actions(self) -> Dict[str, int]:
        """Every agent's cue: the actions of agents that remember (optimal at every step)."""
        return {agent: int(cue) for agent, cue in zip(self.possible_agents, self._cues)}

    def state(self) -> np.ndarray:
        """All agents' observations, concatenated in `possible_agents` order."""
        return self._observation_matrix().reshape(-1)

    def _observation_matrix(self) -> np.ndarray:
        n_agents = len(self.possible_agents)
        matrix = np.zeros((n_agents, self._n_cues + self._delay + 1), np.float32)
        if self._step == 0:
            matrix[np.arange(n_agents), self._cues] = 1.0
        matrix[:, self._n_cues + min(self._step, self._delay)] = 1.0
        return matrix

    def _observations(self, agents: Optional[list] = None) -> Dict[str, np.ndarray]:
        matrix = self._observation_matrix()
        return {agent: matrix[i] for i, agent in enumerate(self.possible_agents)
                if agent in (agents if agents is not None else self.agents)}


def parallel_env(**kwargs: Any) -> MemoryGameEnv:
    """A new `MemoryGameEnv` (`memory_v0`) built with `kwargs`."""
    return MemoryGameEnv(**kwargs)
