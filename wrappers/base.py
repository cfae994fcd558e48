"""The interface every multi-agent environment of this project implements."""

import abc
from typing import Dict, List, Optional, Union

import dm_env
import numpy as np
from dm_env import specs

from wrappers.types import OLT


class MultiAgentEnvironment(dm_env.Environment):
    """A dm_env environment whose observations, rewards and discounts are per-agent dicts.

    Every dict returned by `reset`, `step` and the spec methods is keyed by all of
    `agents`, in that order, for the whole life of the environment: agents that are
    not (or no longer) in the episode are padded rather than dropped, so every
    timestep has the same structure. Returned arrays may be constants shared between
    timesteps; those are read-only, so copy an array before changing it in place.
    """

    @property
    @abc.abstractmethod
    def agents(self) -> List[str]:
        """The fixed list of every agent that can take part, in a stable order."""

    @property
    def possible_agents(self) -> List[str]:
        """Same as `agents` (PettingZoo's name for it)."""
        return self.agents

    @abc.abstractmethod
    def observation_spec(self) -> Dict[str, OLT]:
        """Per agent, an OLT of specs: observation, legal_actions (0/1 float32) and terminal."""

    @abc.abstractmethod
    def action_spec(self) -> Dict[str, specs.Array]:
        """Per agent, a DiscreteArray (int32) or a float32 BoundedArray."""

    def reward_spec(self) -> Dict[str, specs.Array]:
        """Per agent, a float32 scalar."""
        return {agent: specs.Array((), np.float32, name="reward") for agent in self.agents}

    def discount_spec(self) -> Dict[str, specs.BoundedArray]:
        """Per agent, a float32 scalar in [0, 1]."""
        return {
            agent: specs.BoundedArray((), np.float32, 0.0, 1.0, name="discount")
            for agent in self.agents
        }

    def extras_spec(self) -> Dict[str, specs.Array]:
        """Specs of `get_extras()`: `{"env_state": ...}` when a global state exists, else `{}`."""
        return {}

    def get_extras(self) -> Dict[str, np.ndarray]:
        """Extra data about the current step that is not any agent's observation."""
        return {}

    @property
    def render_modes(self) -> List[str]:
        """The render modes the environment can be made with ("rgb_array", "ansi", ...); [] if none."""
        return []

    @property
    def render_mode(self) -> Optional[str]:
        """How `render()` draws: "rgb_array" (an (H, W, 3) uint8 image), "ansi" (text) or None."""
        return None

    def render(self) -> Union[np.ndarray, str, None]:
        """The current state drawn as `render_mode` says; None if the environment was made without one."""
        return None

    def num_actions(self, agent: str) -> int:
        """The length of `agent`'s legal_actions vector (its number of discrete actions)."""
        return int(self.observation_spec()[agent].legal_actions.shape[0])
