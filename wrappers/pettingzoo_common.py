"""What the PettingZoo parallel and AEC wrappers share: specs, seeding, actions and timestep assembly."""

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Union

import dm_env
import numpy as np
from dm_env import specs
from gymnasium import spaces

from wrappers.base import MultiAgentEnvironment
from wrappers.observations import ONE, ZERO, ObservationConverter, checked_array
from wrappers.specs import action_spec, agent_observation_spec, state_spec
from wrappers.states import StateReader, pettingzoo_state
from wrappers.types import OLT

# Builds the OLT of a still-present agent: (agent, done) -> OLT.
ObserveFn = Callable[[str, bool], OLT]


def _action_converter(space: spaces.Space) -> Callable[[Any], Any]:
    """A function turning an action that matches `action_spec(space)` into what the env expects."""
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return (lambda action: int(action) + start) if start else int
    dtype = space.dtype
    return lambda action: np.asarray(action, dtype=dtype)


class PettingZooWrapperBase(MultiAgentEnvironment):
    """Common machinery of the PettingZoo wrappers; subclasses implement `reset` and `step`.

    Args:
      env: the PettingZoo environment (parallel or AEC).
      seed: if given, the first `reset()` resets the env with this seed (later resets
        continue its random generator) and the agents' action spaces are seeded from it.
      state_reader: reads the env's global state (default: its own `state()`); see `wrappers.states`.
    """

    def __init__(self, env: Any, seed: Optional[int] = None, state_reader: StateReader = pettingzoo_state):
        self._env = env
        self._state_reader = state_reader
        self._agents: List[str] = list(env.possible_agents)
        self._observation_specs: Dict[str, OLT] = {}
        self._action_specs: Dict[str, specs.Array] = {}
        self._converters: Dict[str, ObservationConverter] = {}
        self._to_env_action: Dict[str, Callable[[Any], Any]] = {}
        for agent in self._agents:
            action_space = env.action_space(agent)
            self._observation_specs[agent] = agent_observation_spec(env.observation_space(agent), action_space)
            self._action_specs[agent] = action_spec(action_space)
            self._converters[agent] = ObservationConverter(agent, self._observation_specs[agent])
            self._to_env_action[agent] = _action_converter(action_space)
        self._state_spec = state_spec(env)
        self._pending_seed = seed
        if seed is not None:
            for index, agent in enumerate(self._agents):
                env.action_space(agent).seed(seed + index)
        self._departed: Set[str] = set()
        self._reset_next_step = True

    @property
    def agents(self) -> List[str]:
        """The fixed list of every agent that can take part (the env's `possible_agents`)."""
        return list(self._agents)

    @property
    def environment(self) -> Any:
        """The wrapped PettingZoo environment."""
        return self._env

    def observation_spec(self) -> Dict[str, OLT]:
        """Per agent, an OLT of specs: observation, legal_actions (0/1 float32) and terminal."""
        return dict(self._observation_specs)

    def action_spec(self) -> Dict[str, specs.Array]:
        """Per agent, a DiscreteArray (int32) or a float32 BoundedArray."""
        return dict(self._action_specs)

    def extras_spec(self) -> Dict[str, specs.Array]:
        """`{"env_state": spec}` when the env has a global state, else `{}`."""
        return {} if self._state_spec is None else {"env_state": self._state_spec}

    def get_extras(self) -> Dict[str, np.ndarray]:
        """`{"env_state": <the env's global state>}` when the env has one, else `{}`."""
        if self._state_spec is None:
            return {}
        state = checked_array(
            "environment", "env_state", self._state_reader(self._env), self._state_spec.dtype, self._state_spec.shape
        )
        return {"env_state": state}

    @property
    def render_modes(self) -> List[str]:
        """The render modes of the wrapped environment (its metadata's "render_modes")."""
        return list((getattr(self._env, "metadata", None) or {}).get("render_modes", []))

    @property
    def render_mode(self) -> Optional[str]:
        """The render mode the wrapped environment was made with (None: it does not render)."""
        return getattr(self._env, "render_mode", None)

    def render(self) -> Union[np.ndarray, str, None]:
        """The wrapped environment's rendering of its current state; None without a render mode."""
        return None if self.render_mode is None else self._env.render()

    def close(self) -> None:
        """Closes the wrapped environment."""
        self._env.close()

    def _reset_kwargs(self) -> Dict[str, Any]:
        """Arguments of the env's `reset`: the seed on the first call only."""
        if self._pending_seed is None:
            return {}
        seed, self._pending_seed = self._pending_seed, None
        return {"seed": seed}

    def _env_action(self, agent: str, actions: Mapping[str, Any]) -> Any:
        """`agent`'s action from `actions`, converted for the env."""
        try:
            action = actions[agent]
        except KeyError:
            raise ValueError(f"agent {agent!r}: no action given, but it is still in the episode") from None
        return self._to_env_action[agent](action)

    def _first_timestep(self, present: Iterable[str], observe: ObserveFn) -> dm_env.TimeStep:
        """The FIRST timestep: no reward or discount (dm_env's contract); agents not `present` are padded."""
        present = set(present)
        self._departed = {agent for agent in self._agents if agent not in present}
        self._reset_next_step = False
        observations = {
            agent: self._converters[agent].padding if agent in self._departed else observe(agent, False)
            for agent in self._agents
        }
        return dm_env.restart(observations)

    def _transition_timestep(
        self,
        rewards: Mapping[str, Any],
        terminations: Mapping[str, bool],
        truncations: Mapping[str, bool],
        episode_over: bool,
        observe: ObserveFn,
    ) -> dm_env.TimeStep:
        """The MID or LAST timestep after one env step.

        Discounts: 0 for a terminated agent and for one that leaves before the
        episode ends; 1 otherwise (so a time-limit truncation of the whole episode
        keeps discount 1). Agents that had left earlier are padded with reward 0
        and discount 0.
        """
        observations: Dict[str, OLT] = {}
        step_rewards: Dict[str, np.ndarray] = {}
        discounts: Dict[str, np.ndarray] = {}
        newly_departed = []
        for agent in self._agents:
            if agent in self._departed:
                observations[agent] = self._converters[agent].padding
                step_rewards[agent] = ZERO
                discounts[agent] = ZERO
                continue
            terminated = bool(terminations.get(agent, False))
            done = episode_over or terminated or bool(truncations.get(agent, False))
            observations[agent] = observe(agent, done)
            step_rewards[agent] = np.asarray(rewards.get(agent, 0.0), np.float32)
            discounts[agent] = ZERO if terminated or (done and not episode_over) else ONE
            if done:
                newly_departed.append(agent)
        self._departed.update(newly_departed)
        if episode_over:
            self._reset_next_step = True
        return dm_env.TimeStep(
            step_type=dm_env.StepType.LAST if episode_over else dm_env.StepType.MID,
            reward=step_rewards,
            discount=discounts,
            observation=observations,
        )
