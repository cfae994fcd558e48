"""Turning raw PettingZoo observations into checked OLTs that match their specs."""

from typing import Any, Optional, Tuple

import numpy as np

from wrappers.specs import ACTION_MASK_KEY, OBSERVATION_KEY
from wrappers.types import OLT


def read_only(array: np.ndarray) -> np.ndarray:
    """`array` made immutable, so that a constant shared between timesteps cannot be edited in place."""
    array.setflags(write=False)
    return array


ZERO = read_only(np.zeros((), np.float32))
ONE = read_only(np.ones((), np.float32))


def checked_array(owner: str, field: str, value: Any, dtype: np.dtype, shape: Tuple[int, ...]) -> np.ndarray:
    """`value` as an array of `dtype`; raises ValueError naming `owner` and `field` unless it has `shape`."""
    if value is None or isinstance(value, (str, bytes)):
        raise ValueError(f"{owner}: {field} is {value!r}, expected a numeric array of shape {shape}")
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{owner}: {field} cannot be converted to {np.dtype(dtype).name}: {error}") from None
    if array.shape != shape:
        raise ValueError(f"{owner}: {field} has shape {array.shape}, expected {shape}")
    return array


class ObservationConverter:
    """Builds one agent's OLTs from raw observations and action masks, checked against its spec.

    It also holds that agent's constant arrays (all-legal and no-legal masks and the
    zero padding used once the agent has left the episode), built once and read-only.
    """

    def __init__(self, agent: str, spec: OLT):
        self._owner = f"agent {agent!r}"
        self._obs_dtype = spec.observation.dtype
        self._float_observations = np.issubdtype(self._obs_dtype, np.floating)
        self._obs_shape = tuple(spec.observation.shape)
        self._legal_shape = tuple(spec.legal_actions.shape)
        self.all_legal = read_only(np.ones(self._legal_shape, np.float32))
        self.no_legal = read_only(np.zeros(self._legal_shape, np.float32))
        self.padding = OLT(
            observation=read_only(np.zeros(self._obs_shape, self._obs_dtype)),
            legal_actions=self.no_legal,
            terminal=ONE,
        )

    def convert(self, raw: Any, terminal: bool, mask: Optional[Any] = None) -> OLT:
        """The OLT for raw observation `raw`.

        `raw` may be a {"observation", "action_mask"} dict; an explicit `mask` takes
        precedence over the one inside it, and with no mask at all every action is legal.
        """
        if isinstance(raw, dict):
            if mask is None:
                mask = raw.get(ACTION_MASK_KEY)
            raw = raw.get(OBSERVATION_KEY)
        observation = checked_array(self._owner, "observation", raw, self._obs_dtype, self._obs_shape)
        if self._float_observations and not np.isfinite(observation).all():
            raise ValueError(f"{self._owner}: observation has NaN or infinite values: {observation}")
        if mask is None:
            legal = self.all_legal
        else:
            legal = checked_array(self._owner, "legal_actions", mask, np.float32, self._legal_shape)
        return OLT(observation, legal, ONE if terminal else ZERO)
