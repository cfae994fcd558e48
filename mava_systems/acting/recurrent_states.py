"""The recurrent state of every agent through an episode, as executors carry it."""

from typing import Any, Callable, Dict, Mapping

import numpy as np
import sonnet as snt
import tree


class RecurrentStates:
    """Each network's recurrent state for its stacked agents (rows), across an episode's steps.

    `reset()` sets every state to `initial()` (an executor calls it when an
    episode starts, and only then); `advance(new, present)` takes the states a
    step produced, except for the rows of agents not `present` (they have left
    the episode): their state stays as it was, so they stop contributing until
    the next `reset()`. `current` is what the next step starts from (and what
    replay stores with the step's observation).
    """

    def __init__(self, initial: Callable[[], Mapping[str, Any]]):
        self._initial = initial
        self.current: Dict[str, Any] = {}
        self.reset()

    def reset(self) -> None:
        """Every agent's state back to the initial (zero) state: a new episode starts."""
        self.current = {key: tree.map_structure(lambda part: np.array(part, np.float32), state)
                        for key, state in self._initial().items()}

    def advance(self, new_states: Mapping[str, Any], present: Mapping[str, np.ndarray]) -> None:
        """Takes `new_states` for the rows whose `present` ([agents] 0/1) is set, per network.

        `current` becomes a new dict: one taken earlier (e.g. by replay) keeps its states.
        """
        current = dict(self.current)
        for key, state in new_states.items():
            keep = np.asarray(present[key]).reshape(-1) > 0
            current[key] = tree.map_structure(
                lambda new, old, keep=keep: np.where(
                    keep.reshape((-1,) + (1,) * (np.ndim(old) - 1)),
                    np.asarray(new, np.float32), old),
                state, current[key])
        self.current = current


def present_rows(stacked: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """Per network of stacked `OLT` observations, 1 for the agents (rows) still in the episode
    (their `terminal` flag unset), 0 for those that have left: `RecurrentStates.advance`'s
    `present`."""
    return {key: 1.0 - np.asarray(observation.terminal) for key, observation in stacked.items()}


def is_recurrent(network: Any) -> bool:
    """Whether `network` is a recurrent core (`snt.RNNCore`: called with a state)."""
    return isinstance(network, snt.RNNCore)


def refuse_recurrent(system: str, key: str, **networks: Any) -> None:
    """Raises ValueError if one of `networks` (by role, e.g. policy=..., critic=...) of network
    `key` is recurrent: `system` trains feedforward networks only."""
    for role, network in networks.items():
        if is_recurrent(network):
            raise ValueError(
                f"{system} cannot train recurrent networks, but network {key!r}'s {role} is a "
                f"recurrent core ({type(network).__name__}, an snt.RNNCore); recurrent agents are "
                "available in MADQN, VDN, QMIX, MAPPO and IPPO (their config's recurrent=True)")
