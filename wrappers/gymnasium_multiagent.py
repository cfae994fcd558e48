"""A multi-agent Gymnasium environment with Tuple spaces presented as a PettingZoo parallel environment.

Environments such as Level-Based Foraging and Robotic Warehouse are single Gymnasium
`Env`s whose observation and action spaces are `Tuple`s with one entry per agent, whose
`step` takes a tuple of actions and returns a list of rewards. Wrapped once more by
`ParallelEnvWrapper`, such an environment becomes a `MultiAgentEnvironment` with agents
`agent_0`, `agent_1`, ...
"""

import contextlib
import threading
from typing import Any, Callable, ContextManager, Dict, List, NamedTuple, Optional, Sequence, Tuple

import gymnasium
from gymnasium import spaces
import numpy as np
from pettingzoo.utils.env import ParallelEnv

from wrappers import grid_rendering
from wrappers.specs import ACTION_MASK_KEY


RGB = "rgb_array"


class TupleEnvReaders(NamedTuple):
    """What the adapter reads from a known environment beyond the Gymnasium API.

    Attributes:
      ended_by_time_limit: called (with the unwrapped env) when the env reports its episode
        over; True if it ended at a time limit (a truncation: the discount stays 1) rather
        than in a terminal state.
      legal_actions: the unwrapped env's per-agent 0/1 masks of legal actions.
      reset_lock: held while the env resets, for envs whose reset is not thread-safe (the
        executors and the evaluator of a `local_mt` program are threads of one process).
      image: the unwrapped env drawn as an (H, W, 3) uint8 image with each agent's number,
        for envs whose own `render()` ignores `render_mode="rgb_array"`.
    """

    ended_by_time_limit: Optional[Callable[[Any], bool]] = None
    legal_actions: Optional[Callable[[Any], Sequence[np.ndarray]]] = None
    reset_lock: Optional[ContextManager[Any]] = None
    image: Optional[Callable[[Any], np.ndarray]] = None


def _lbf_legal_actions(env: Any) -> List[np.ndarray]:
    """Level-Based Foraging's valid actions (illegal ones are replaced by NONE in its `step`)."""
    masks = []
    for player in env.players:
        mask = np.zeros(env.action_space[0].n, np.float32)
        mask[[action.value for action in env._valid_actions[player]]] = 1.0  # pylint: disable=protected-access
        masks.append(mask)
    return masks


# Environments (by `module:Class` of the unwrapped env) that end every episode with
# terminated=True, truncated=False, including those cut off by their own step limit.
KNOWN_ENVIRONMENTS: Dict[str, TupleEnvReaders] = {
    # Level-Based Foraging 2.0.0: an episode ends when all food is collected (a terminal
    # state) or at `max_episode_steps` (a time limit), both reported as terminated.
    "lbforaging.foraging.environment:ForagingEnv": TupleEnvReaders(
        ended_by_time_limit=lambda env: bool(env.field.sum() > 0),
        legal_actions=_lbf_legal_actions, image=grid_rendering.foraging_image),
    # Robotic Warehouse 2.0.0 has no terminal states: episodes end at `max_steps` or after
    # `max_inactivity_steps` without a delivery, both limits on time. Its reset numbers the
    # agents and shelves with class-level counters shared by every Warehouse of the process:
    # two resetting at once give agents ids beyond the last (an IndexError in the package).
    "rware.warehouse:Warehouse": TupleEnvReaders(ended_by_time_limit=lambda env: True,
                                                 reset_lock=threading.Lock(),
                                                 image=grid_rendering.warehouse_image),
}


def readers_for(env: gymnasium.Env) -> TupleEnvReaders:
    """The readers registered for the class of `env.unwrapped` (none for an unknown env)."""
    cls = type(env.unwrapped)
    return KNOWN_ENVIRONMENTS.get(f"{cls.__module__}:{cls.__qualname__}", TupleEnvReaders())


def is_tuple_space_env(env: Any) -> bool:
    """Whether `env` is a Gymnasium env with one Tuple entry per agent in both of its spaces."""
    return (isinstance(env, gymnasium.Env) and isinstance(env.action_space, spaces.Tuple)
            and isinstance(env.observation_space, spaces.Tuple))


def _per_agent(flag: Any, num_agents: int, name: str) -> List[bool]:
    """One bool per agent from a single flag (the whole team) or a sequence of them."""
    if isinstance(flag, (bool, np.bool_)):
        return [bool(flag)] * num_agents
    flags = [bool(value) for value in flag]
    if len(flags) != num_agents:
        raise ValueError(f"{name} has {len(flags)} entries for {num_agents} agents")
    return flags


class TupleSpaceParallelEnv(ParallelEnv):
    """A Gymnasium `Env` with Tuple spaces (one entry per agent) as a PettingZoo `ParallelEnv`.

    Agent `agent_<i>` has the i-th observation, action and reward. The global state is
    the env's own (`state()` with a `state_space`) if it offers one, else the
    concatenation of the agents' flattened observations. Legal-action masks come from
    the env's `info["action_mask"]` (one per agent) or, for known envs, from its state.
    An episode that a known env ends at a time limit is reported as truncated.
    """

    metadata = {"name": "gymnasium_multi_agent", "is_parallelizable": True}

    def __init__(self, env: gymnasium.Env, readers: Optional[TupleEnvReaders] = None):
        if not is_tuple_space_env(env):
            raise ValueError(f"expected a gymnasium.Env with Tuple observation and action spaces "
                             f"(one entry per agent), got {env!r}")
        num_agents = len(env.action_space.spaces)
        if len(env.observation_space.spaces) != num_agents:
            raise ValueError(f"{env!r} has {len(env.observation_space.spaces)} observation spaces "
                             f"for {num_agents} action spaces")
        self.env = env
        self._readers = readers_for(env) if readers is None else readers
        self.possible_agents = [f"agent_{index}" for index in range(num_agents)]
        self._index = {agent: index for index, agent in enumerate(self.possible_agents)}
        self.agents: List[str] = []
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = {**self.metadata, "render_modes": (
            [RGB] if self._readers.image else list(env.metadata.get("render_modes", [])))}
        if self.render_mode == RGB and self._readers.image:
            problem = grid_rendering.rendering_problem()
            if problem is not None:
                raise ValueError(problem)
        self._own_state = callable(getattr(env.unwrapped, "state", None)) and \
            getattr(env.unwrapped, "state_space", None) is not None
        self.state_space = (env.unwrapped.state_space if self._own_state
                            else spaces.flatten_space(env.observation_space))
        self._observations: Optional[Tuple[Any, ...]] = None

    def observation_space(self, agent: str) -> spaces.Space:
        """The agent's entry of the env's observation space."""
        return self.env.observation_space.spaces[self._agent_index(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        """The agent's entry of the env's action space."""
        return self.env.action_space.spaces[self._agent_index(agent)]

    def state(self) -> np.ndarray:
        """The env's own global state, or the concatenated flattened observations of every agent."""
        if self._own_state:
            return self.env.unwrapped.state()
        if self._observations is None:
            raise RuntimeError("state() called before reset()")
        return spaces.flatten(self.env.observation_space, self._observations)

    def reset(self, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Tuple[Dict[str, Any], Dict[str, dict]]:
        """Resets the env; observations and infos are keyed by agent."""
        with self._readers.reset_lock or contextlib.nullcontext():
            observations, info = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        return self._by_agent(observations), self._infos(info)

    def step(self, actions: Dict[str, Any]):
        """Steps the env with every agent's action (in agent order; agents that have left the
        episode take a random action, which the env ignores)."""
        joint_action = tuple(actions[agent] if agent in actions else self.action_space(agent).sample()
                             for agent in self.possible_agents)
        observations, rewards, terminated, truncated, info = self.env.step(joint_action)
        num_agents = len(self.possible_agents)
        terminations = _per_agent(terminated, num_agents, "terminated")
        truncations = _per_agent(truncated, num_agents, "truncated")
        time_limit = self._readers.ended_by_time_limit
        if time_limit is not None and any(terminations) and time_limit(self.env.unwrapped):
            truncations = [a or b for a, b in zip(terminations, truncations)]
            terminations = [False] * num_agents
        rewards = np.broadcast_to(np.asarray(rewards, np.float32), (num_agents,))
        self.agents = [agent for agent, term, trunc in zip(self.possible_agents, terminations, truncations)
                       if not (term or trunc)]
        return (self._by_agent(observations),
                {agent: float(reward) for agent, reward in zip(self.possible_agents, rewards)},
                dict(zip(self.possible_agents, terminations)),
                dict(zip(self.possible_agents, truncations)),
                self._infos(info))

    def render(self) -> Any:
        """The env's rendering (for known envs made with `render_mode="rgb_array"`, their image
        with each agent's number)."""
        if self.render_mode == RGB and self._readers.image:
            return self._readers.image(self.env.unwrapped)
        return self.env.render()

    def close(self) -> None:
        """Closes the env."""
        self.env.close()

    def _agent_index(self, agent: str) -> int:
        try:
            return self._index[agent]
        except KeyError:
            raise KeyError(f"unknown agent {agent!r}: agents are {self.possible_agents}") from None

    def _by_agent(self, observations: Sequence[Any]) -> Dict[str, Any]:
        observations = tuple(observations)
        if len(observations) != len(self.possible_agents):
            raise ValueError(f"the env returned {len(observations)} observations for "
                             f"{len(self.possible_agents)} agents")
        self._observations = observations
        return dict(zip(self.possible_agents, observations))

    def _infos(self, info: Dict[str, Any]) -> Dict[str, dict]:
        """The env's info for every agent, with that agent's action mask if the env gives masks."""
        masks = info.get(ACTION_MASK_KEY) if isinstance(info, dict) else None
        if masks is None and self._readers.legal_actions is not None:
            masks = self._readers.legal_actions(self.env.unwrapped)
        infos = {agent: dict(info) if isinstance(info, dict) else {} for agent in self.possible_agents}
        if masks is not None:
            for agent, mask in zip(self.possible_agents, masks):
                infos[agent][ACTION_MASK_KEY] = mask
        return infos
