"""Stepping PettingZoo's AEC-to-parallel conversion without its wrapper chain's forwarding.

Most PettingZoo parallel environments (all of MPE's, SISL's) are an AEC env behind
`OrderEnforcingWrapper` and an action-checking wrapper, converted by
`aec_to_parallel_wrapper`. Each parallel step reads the env's `agents`, `rewards`,
`terminations`, ... several times per agent, every read passing through each
wrapper's `__getattr__`: on `simple_spread` that forwarding costs about as much
as the physics. `DirectParallelStep` does what the conversion's `step` does, on
the AEC env itself: the same calls in the same order, the wrappers' checks made
inline, and every case they would act on (a rejected, clipped or late action)
handed to the wrapper chain itself, so results, warnings and errors stay the
same.
"""

from collections import defaultdict
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from gymnasium import spaces
from pettingzoo.utils.conversions import aec_to_parallel_wrapper
from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, BaseWrapper,
                                       ClipOutOfBoundsWrapper, OrderEnforcingWrapper)

# The action-checking wrappers whose checks are made inline.
_CHECKING_WRAPPERS = (AssertOutOfBoundsWrapper, ClipOutOfBoundsWrapper)


def _observe_is_pure(aec_env: Any) -> bool:
    """Whether the AEC env's `observe` only reads its state, so the conversion's call to
    `last()` (whose observation it discards) can be left out: MPE's envs."""
    try:
        from mpe2._mpe_utils.simple_env import SimpleEnv  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    return type(aec_env).observe is SimpleEnv.observe


def _chain(env: Any) -> Optional[Tuple[OrderEnforcingWrapper, Optional[BaseWrapper], Any]]:
    """(order wrapper, checking wrapper or None, AEC env) when `env` is exactly
    `aec_to_parallel_wrapper(OrderEnforcingWrapper([checking wrapper](AEC env)))`."""
    if type(env) is not aec_to_parallel_wrapper:  # pylint: disable=unidiomatic-typecheck
        return None
    order = getattr(env, "aec_env", None)
    if type(order) is not OrderEnforcingWrapper:  # pylint: disable=unidiomatic-typecheck
        return None
    inner = order.env
    checker = inner if type(inner) in _CHECKING_WRAPPERS else None
    aec_env = inner.env if checker is not None else inner
    if isinstance(aec_env, BaseWrapper):
        return None
    return order, checker, aec_env


class DirectParallelStep:
    """`env.step` for an `aec_to_parallel_wrapper` over PettingZoo's standard wrapper chain.

    Use `DirectParallelStep.of(env)`: it returns None for any other environment.
    """

    def __init__(self, env: aec_to_parallel_wrapper, order: OrderEnforcingWrapper,
                 checker: Optional[BaseWrapper], aec_env: Any):
        self._parallel = env
        self._order = order
        self._checker = checker
        self._aec = aec_env
        self._calls_last = not _observe_is_pure(aec_env)
        self._action_passes: Callable[[Any], bool] = (
            self._passes_bounds if type(checker) is AssertOutOfBoundsWrapper  # pylint: disable=unidiomatic-typecheck
            else self._passes_clipping if checker is not None else (lambda action: True))

    @classmethod
    def of(cls, env: Any) -> Optional["DirectParallelStep"]:
        """A direct step for `env`, or None if its wrappers are not the standard chain."""
        chain = _chain(env)
        return None if chain is None else cls(env, *chain)

    def __call__(self, actions: Mapping[str, Any]) -> Tuple[Dict[str, Any], ...]:
        """One parallel step: (observations, rewards, terminations, truncations, infos)."""
        if not self._order._has_reset:  # pylint: disable=protected-access
            return self._parallel.step(actions)  # It reports the misuse.
        aec = self._aec
        rewards: Dict[str, Any] = defaultdict(int)
        for agent in aec.agents:
            if agent != aec.agent_selection:
                raise AssertionError(
                    f"the parallel conversion expected agent {aec.agent_selection!r} to act, got "
                    f"{agent!r}: its AEC env must step every agent in turn and end agents "
                    "only at the end of a cycle")
            if self._calls_last:
                aec.last()
            self._step(actions[agent])
            for other in aec.agents:
                rewards[other] += aec.rewards[other]
        terminations = dict(**aec.terminations)
        truncations = dict(**aec.truncations)
        infos = dict(**aec.infos)
        observations = {agent: aec.observe(agent) for agent in aec.agents}
        while aec.agents and (aec.terminations[aec.agent_selection]
                              or aec.truncations[aec.agent_selection]):
            self._step(None)
        self._parallel.agents = aec.agents
        return observations, rewards, terminations, truncations, infos

    def _step(self, action: Any) -> None:
        """The AEC env's step, as the wrapper chain makes it when it would pass `action` on
        unchanged; otherwise the chain's own step (which warns, clips or raises)."""
        if self._aec.agents and self._action_passes(action):
            self._order._has_updated = True  # pylint: disable=protected-access
            self._aec.step(action)
        else:
            self._order.step(action)

    def _passes_bounds(self, action: Any) -> bool:
        """`AssertOutOfBoundsWrapper`'s check."""
        aec = self._aec
        agent = aec.agent_selection
        if action is None and (aec.terminations[agent] or aec.truncations[agent]):
            return True
        space = aec.action_space(agent)
        if type(action) is int and type(space) is spaces.Discrete:  # pylint: disable=unidiomatic-typecheck
            if space.start <= action < space.start + space.n:
                return True
        return bool(space.contains(action))

    def _passes_clipping(self, action: Any) -> bool:
        """Whether `ClipOutOfBoundsWrapper` passes `action` on unchanged."""
        space = self._aec.action_space(self._aec.agent_selection)
        return isinstance(space, spaces.Box) and (action is None or bool(space.contains(action)))
