"""The two-step cooperative game (`debug/two_step_v0`): a value an additive decomposition cannot fit.

The game of the QMIX paper (Rashid et al., 2018, section 6.1). Two agents see
the same state; in the first step agent_0's action picks the second step's
matrix game (agent_1's action does not matter), and in the second step both
get the payoff of their joint action:

    state 2A (agent_0 chose 0): 7 for every joint action
    state 2B (agent_0 chose 1): [[0, 1], [1, 8]]  (row: agent_0's action, column: agent_1's)

The optimal return is 8 (2B, then both choose 1). Learnt off-policy from
uniformly random play, an additive team value q_0 + q_1 fitted by least squares
gives state 2B a best value of only 6.5 (the least-squares sum fit of that
matrix), below 2A's 7, so a VDN agent_0 picks 2A and returns 7. A monotonic
mixer conditioned on the state (QMIX) can represent 2B's matrix and returns 8.
"""

from typing import Any, Dict, Optional, Tuple

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from wrappers.debug_envs import AgentSpaces

FIRST, STATE_2A, STATE_2B = 0, 1, 2
PAYOFF_2A = np.full((2, 2), 7.0, np.float32)
PAYOFF_2B = np.array([[0.0, 1.0], [1.0, 8.0]], np.float32)
OPTIMAL_RETURN = 8.0
ADDITIVE_RETURN = 7.0  # What an additive team value learnt from uniform play returns.


class TwoStepGameEnv(AgentSpaces, ParallelEnv):
    """The two-step game (see the module docstring), as a PettingZoo parallel environment.

    Observations and `state()` are the one-hot of the current state (first,
    2A, 2B), all zeros once the game is over; actions are 0 and 1. Both agents
    get the same reward (0 after the first step) and terminate after the second.
    """

    metadata = {"name": "two_step_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, render_mode: Optional[str] = None):
        if render_mode is not None:
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        self.render_mode = render_mode
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents = []
        self.observation_spaces = {agent: spaces.Box(0.0, 1.0, (3,), np.float32)
                                   for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(2) for agent in self.possible_agents}
        self.state_space = spaces.Box(0.0, 1.0, (3,), np.float32)
        self._state: Optional[int] = None

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
              ) -> Tuple[Dict[str, np.ndarray], Dict[str, Dict]]:
        """Starts in the first state (the game is deterministic: `seed` changes nothing)."""
        del seed, options
        self._state = FIRST
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: Dict[str, int]):
        """Plays one step; returns observations, rewards, terminations, truncations, infos."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        first, second = int(actions["agent_0"]), int(actions["agent_1"])
        agents = self.agents
        if self._state == FIRST:
            self._state = STATE_2B if first == 1 else STATE_2A
            reward, done = 0.0, False
        else:
            payoff = PAYOFF_2B if self._state == STATE_2B else PAYOFF_2A
            reward, done = float(payoff[first, second]), True
            self._state = None
            self.agents = []
        return (self._observations(agents), {agent: reward for agent in agents},
                {agent: done for agent in agents}, {agent: False for agent in agents},
                {agent: {} for agent in agents})

    def state(self) -> np.ndarray:
        """The one-hot of the current state (zeros once the game is over)."""
        one_hot = np.zeros(3, np.float32)
        if self._state is not None:
            one_hot[self._state] = 1.0
        return one_hot

    def _observations(self, agents: Optional[list] = None) -> Dict[str, np.ndarray]:
        return {agent: self.state() for agent in (agents or self.agents)}


def parallel_env(**kwargs: Any) -> TwoStepGameEnv:
    """A new `TwoStepGameEnv` (`two_step_v0`)."""
    return TwoStepGameEnv(**kwargs)
