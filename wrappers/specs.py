"""Translation of Gymnasium spaces (as PettingZoo uses them) into dm_env specs."""

from typing import Any, Optional

import numpy as np
from dm_env import specs
from gymnasium import spaces

from wrappers.types import OLT

# Keys of PettingZoo's dict observations (classic games) that carry the real observation and mask.
OBSERVATION_KEY = "observation"
ACTION_MASK_KEY = "action_mask"


def spec_dtype(dtype: Any) -> np.dtype:
    """The dtype a spec uses for values of `dtype`: float32 for any float, else unchanged."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if np.issubdtype(dtype, np.floating) else dtype


def observation_space_of(space: spaces.Space) -> spaces.Space:
    """The space of the observation proper, looking inside {"observation", "action_mask"} dicts."""
    if isinstance(space, spaces.Dict) and OBSERVATION_KEY in space.spaces:
        return space.spaces[OBSERVATION_KEY]
    return space


def array_spec(space: spaces.Space, name: str) -> specs.Array:
    """An unbounded spec with the shape of `space` and its spec dtype."""
    if not isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        raise ValueError(f"unsupported {name} space {space!r}")
    return specs.Array(tuple(space.shape), spec_dtype(space.dtype), name=name)


def action_spec(space: spaces.Space) -> specs.Array:
    """DiscreteArray(int32) for Discrete spaces, float32 BoundedArray for Box spaces."""
    if isinstance(space, spaces.Discrete):
        return specs.DiscreteArray(num_values=int(space.n), dtype=np.int32, name="action")
    if isinstance(space, spaces.Box):
        return specs.BoundedArray(
            tuple(space.shape),
            np.float32,
            minimum=space.low.astype(np.float32),
            maximum=space.high.astype(np.float32),
            name="action",
        )
    raise ValueError(f"unsupported action space {space!r}: only Discrete and Box are handled")


def num_legal_actions(space: spaces.Space) -> int:
    """Length of the legal_actions vector: the number of discrete actions, 1 for Box spaces."""
    return int(space.n) if isinstance(space, spaces.Discrete) else 1


def agent_observation_spec(observation_space: spaces.Space, action_space: spaces.Space) -> OLT:
    """One agent's OLT of specs for the given PettingZoo observation and action spaces."""
    return OLT(
        observation=array_spec(observation_space_of(observation_space), "observation"),
        legal_actions=specs.BoundedArray(
            (num_legal_actions(action_space),), np.float32, 0.0, 1.0, name="legal_actions"
        ),
        terminal=specs.Array((), np.float32, name="terminal"),
    )


def state_spec(env: Any) -> Optional[specs.Array]:
    """The spec of `env.state()` when the environment declares a `state_space`, else None."""
    space = getattr(env, "state_space", None)
    if space is None or not callable(getattr(env, "state", None)):
        return None
    return array_spec(space, "env_state")
