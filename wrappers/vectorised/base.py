"""The batched interface of vectorised environments: B environments stepped in one call.

A `BatchedEnvironment` holds B copies of one task and steps them together: `step`
takes one action per environment and agent (an int array `[B, num_agents]`) and
returns a `BatchedTimeStep` of arrays whose first axis is the environment. Every
environment is a dm_env stream of its own: the step after an environment's LAST
timestep ignores its actions and returns the FIRST timestep of its next episode
(automatic reset), so a batched executor acts on every environment every call.
`timestep(batched, index)` is environment `index`'s step in the format of a
`wrappers.MultiAgentEnvironment` (per-agent dicts of `OLT`s, rewards and discounts).
"""

import abc
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import dm_env
import numpy as np
from dm_env import specs

from wrappers.types import OLT

FIRST = np.int8(dm_env.StepType.FIRST)
MID = np.int8(dm_env.StepType.MID)
LAST = np.int8(dm_env.StepType.LAST)


class BatchedTimeStep(NamedTuple):
    """One step of B environments; the first axis of every array is the environment.

    Arrays may share memory with each other (the state with the observations) or be
    read-only constants: copy one before changing it in place.

    Attributes:
      step_type: [B] int8 `dm_env.StepType` values (FIRST after a reset, LAST at an episode's end).
      reward: [B, num_agents] float32; 0 on FIRST steps.
      discount: [B, num_agents] float32; 0 at a terminal state, 1 otherwise (a time-limit
        truncation and FIRST steps included).
      observation: [B, num_agents, *observation_shape].
      legal_actions: [B, num_agents, num_actions] float32 0/1 masks.
      terminal: [B, num_agents] float32: 1.0 once the agent has left the episode (at LAST).
      state: [B, *state_shape] global states, or None for a task without one.
    """

    step_type: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    observation: np.ndarray
    legal_actions: np.ndarray
    terminal: np.ndarray
    state: Optional[np.ndarray]


class Transition(NamedTuple):
    """What a family's batched transition returns for all B environments.

    Attributes:
      reward: [B, num_agents] float32.
      terminated: [B] bool: the episode reached a terminal state.
      truncated: [B] bool: the episode was cut off at a time limit (not terminal).
    """

    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray


class Observation(NamedTuple):
    """A family's batched observation of its current states (see `BatchedTimeStep`)."""

    observation: np.ndarray
    legal_actions: np.ndarray
    state: Optional[np.ndarray]


def _seed_list(seeds: Optional[Sequence[Optional[int]]], num_envs: int) -> List[Optional[int]]:
    """`seeds` checked to have one entry (an int or None) per environment."""
    if seeds is None:
        return [None] * num_envs
    seeds = list(seeds)
    if len(seeds) != num_envs:
        raise ValueError(f"reset got {len(seeds)} seeds for {num_envs} environments")
    for seed in seeds:
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seeds must be ints or None, got {seed!r}")
    return [None if seed is None else int(seed) for seed in seeds]


class BatchedEnvironment(abc.ABC):
    """B copies of a multi-agent task stepped together, with automatic resets.

    A family implements `_reset_envs`, `_transition` and `_observe`; this class checks
    actions, resets the environments whose episode ended at the previous step, and
    assembles the `BatchedTimeStep`. Agents are `agent_0`, `agent_1`, ... with the
    specs a `MultiAgentEnvironment` of the same task has: float32 observations of
    `observation_shape`, `num_actions` discrete actions, and a float32 global state of
    `state_shape` (None: no state).
    """

    def __init__(self, num_envs: int, num_agents: int, num_actions: int, observation_shape: Tuple[int, ...],
                 state_shape: Optional[Tuple[int, ...]] = None):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self._num_envs = int(num_envs)
        self._agents = [f"agent_{index}" for index in range(num_agents)]
        self._num_actions = int(num_actions)
        self._observation_shape = tuple(observation_shape)
        self._state_shape = None if state_shape is None else tuple(state_shape)
        self._episode_over: Optional[np.ndarray] = None

    @property
    def num_envs(self) -> int:
        """B, the number of environments stepped together."""
        return self._num_envs

    @property
    def agents(self) -> List[str]:
        """The agents of every environment, in the order of the agent axis."""
        return list(self._agents)

    @property
    def num_agents(self) -> int:
        """The length of the agent axis."""
        return len(self._agents)

    def observation_spec(self) -> Dict[str, OLT]:
        """Per agent, an OLT of specs of one environment (as `MultiAgentEnvironment.observation_spec`)."""
        spec = OLT(observation=specs.Array(self._observation_shape, np.float32, name="observation"),
                   legal_actions=specs.BoundedArray((self._num_actions,), np.float32, 0.0, 1.0,
                                                    name="legal_actions"),
                   terminal=specs.Array((), np.float32, name="terminal"))
        return {agent: spec for agent in self._agents}

    def action_spec(self) -> Dict[str, specs.Array]:
        """Per agent, a DiscreteArray (int32) with one value per action."""
        return {agent: specs.DiscreteArray(self._num_actions, dtype=np.int32, name="action")
                for agent in self._agents}

    def extras_spec(self) -> Dict[str, specs.Array]:
        """`{"env_state": spec}` of one environment's global state, or `{}` without one."""
        if self._state_shape is None:
            return {}
        return {"env_state": specs.Array(self._state_shape, np.float32, name="env_state")}

    def reset(self, seeds: Optional[Sequence[Optional[int]]] = None) -> BatchedTimeStep:
        """Starts a new episode in every environment; a FIRST step for all of them.

        Args:
          seeds: one per environment (None: fresh entropy). Environment b with seed s
            then plays the episodes the reference package's environment plays after
            `reset(seed=s)` followed by `reset()` at each episode's end.
        """
        seeds = _seed_list(seeds, self._num_envs)
        self._reset_envs(np.arange(self._num_envs), seeds)
        self._episode_over = np.zeros(self._num_envs, bool)
        shape = (self._num_envs, self.num_agents)
        return self._timestep(np.full(self._num_envs, FIRST), np.zeros(shape, np.float32),
                              np.ones(shape, np.float32), np.zeros(shape, np.float32))

    def step(self, actions: np.ndarray) -> BatchedTimeStep:
        """Applies one action per environment and agent (`[B, num_agents]` ints).

        Environments whose previous step was LAST ignore their actions and start a new
        episode (continuing their random generator): their step is FIRST.
        """
        if self._episode_over is None:
            raise RuntimeError("step() called before reset()")
        actions = self._checked_actions(actions)
        restarting = self._episode_over
        transition = self._transition(actions, ~restarting)
        reward, terminated, truncated = transition
        if restarting.any():
            indices = np.flatnonzero(restarting)
            self._reset_envs(indices, [None] * len(indices))
            reward[indices] = 0.0
            terminated = terminated & ~restarting
            truncated = truncated & ~restarting
        over = terminated | truncated
        self._episode_over = over
        step_type = np.where(restarting, FIRST, np.where(over, LAST, MID))
        discount = np.repeat((~terminated).astype(np.float32)[:, None], self.num_agents, axis=1)
        terminal = np.repeat(over.astype(np.float32)[:, None], self.num_agents, axis=1)
        return self._timestep(step_type, reward, discount, terminal)

    def timestep(self, batched: BatchedTimeStep, index: int) -> Tuple[dm_env.TimeStep, Dict[str, np.ndarray]]:
        """Environment `index`'s step as a `MultiAgentEnvironment` gives it, and its extras.

        Rewards and discounts are None on a FIRST step (dm_env's contract).
        """
        observations = {agent: OLT(batched.observation[index, n], batched.legal_actions[index, n],
                                   batched.terminal[index, n])
                        for n, agent in enumerate(self._agents)}
        step_type = dm_env.StepType(int(batched.step_type[index]))
        if step_type == dm_env.StepType.FIRST:
            rewards = discounts = None
        else:
            rewards = {agent: batched.reward[index, n] for n, agent in enumerate(self._agents)}
            discounts = {agent: batched.discount[index, n] for n, agent in enumerate(self._agents)}
        extras = {} if batched.state is None else {"env_state": batched.state[index]}
        return dm_env.TimeStep(step_type, rewards, discounts, observations), extras

    def close(self) -> None:
        """Releases the environments' resources (none by default)."""

    def _checked_actions(self, actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        expected = (self._num_envs, self.num_agents)
        if actions.shape != expected:
            raise ValueError(f"actions have shape {actions.shape}, expected {expected} "
                             "(environments, agents)")
        if not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {actions.dtype}")
        if actions.size and (actions.min() < 0 or actions.max() >= self._num_actions):
            raise ValueError(f"actions must be in [0, {self._num_actions}), got values from "
                             f"{actions.min()} to {actions.max()}")
        return actions.astype(np.int64, copy=False)

    def _timestep(self, step_type: np.ndarray, reward: np.ndarray, discount: np.ndarray,
                  terminal: np.ndarray) -> BatchedTimeStep:
        observation, legal_actions, state = self._observe()
        return BatchedTimeStep(step_type.astype(np.int8), reward.astype(np.float32, copy=False),
                               discount, observation, legal_actions, terminal, state)

    @abc.abstractmethod
    def _reset_envs(self, indices: np.ndarray, seeds: Sequence[Optional[int]]) -> None:
        """Starts new episodes in environments `indices`; a seed (or None: continue the
        environment's generator, or fresh entropy the first time) for each."""

    @abc.abstractmethod
    def _transition(self, actions: np.ndarray, active: np.ndarray) -> Transition:
        """Steps every environment where `active` ([B] bool) is set; the others stay as they
        are (their rewards and ends are ignored)."""

    @abc.abstractmethod
    def _observe(self) -> Observation:
        """The batched observations, legal actions and states of the current states."""
