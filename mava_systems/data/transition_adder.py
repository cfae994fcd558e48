"""An n-step transition adder that writes each transition to replay in a single append."""

import collections
from typing import Any, Deque, Dict, List, Mapping, Optional

from mava_systems.data.batched_sequences import stack_rows
from mava_systems.data.packing import ArrayPacker

from acme import types
from acme.adders import base
import dm_env
import numpy as np
import tree


class NStepTransitionAdder(base.Adder):
    """Writes n-step transitions `(s_t, a_t, R_{t:t+n}, D_{t:t+n}, s_{t+n})` to a replay table.

    Items have the structure and signature of Acme's `NStepTransitionAdder`
    (use its `signature()` for the table), or with a `packer` made for that
    signature, one packed byte column (`packer.signature()` for the table; see
    `packing.py`). The definitions are Acme's, with g the discount and d_i the
    environment's discounts:

        R_{t:t+n} = r_t + g d_t r_{t+1} + ... + g^{n-1} d_t ... d_{t+n-2} r_{t+n-1}
        D_{t:t+n} = g^{n-1} d_t ... d_{t+n-1}

    Every step starts exactly one transition; the last n - 1 of an episode are
    shorter.

    With `transitions_per_item` k > 1, each item holds k consecutive transitions
    of this adder's stream, stacked (leading dimension k; a packed item is
    `[k, packer.num_bytes]`): items are created every k transitions, so an item
    may hold the end of one episode and the start of the next (each transition
    is complete on its own), and up to k - 1 transitions not yet in an item are
    left out when the adder is dropped. Sampling costs per item, so a batch of
    B transitions in B / k items samples at a fraction of the cost; the
    transitions of an item are then sampled together. The k transitions are
    appended to the writer together, as one step (one Reverb call per item).

    With `environment_extras`, each step also takes the environment's extras
    (e.g. `{"env_state": s}`, its global state, from `get_extras()`), and each
    item's `extras` holds them at both ends of the transition:
    `{"env_state": s_t, "next_env_state": s_{t+n}}` (see `transition_extras_spec`). Unlike Acme's adder, each transition is written whole in one append and
    items stream to the server without a round trip each: the writer waits
    only when more than `max_in_flight_items` are unconfirmed, and at the end
    of each episode for the items of the episodes before it (not for its own:
    their round trip overlaps the next episode's steps, where waiting for it
    took about a fifth of an executor's time on a busy machine). Those waits
    are where the table's rate limiter holds executors back. `flush()` waits
    for every item written. (So the writer's Reverb episode never ends: the
    table's `num_episodes` counts writers, not episodes.)
    """

    def __init__(self, client: Any, table: str, n_step: int, discount: float,
                 max_in_flight_items: int = 64, priority: float = 1.0,
                 packer: Optional[ArrayPacker] = None, environment_extras: bool = False,
                 transitions_per_item: int = 1):
        check_item_arguments(n_step, transitions_per_item)
        self._transitions_per_item = transitions_per_item
        self._block: List[Any] = []  # Transitions (packed, if packing) not yet in an item.
        self._client = client
        self._table = table
        self._n_step = n_step
        self._discount = discount
        self._max_in_flight_items = max_in_flight_items
        self._priority = priority
        self._packer = packer
        self.stores_environment_extras = environment_extras
        self._writer: Optional[Any] = None
        self._episode_items = 0  # Items created in the current episode.
        # The current window: observations s_t .. s_{t+k}, and the k actions, rewards, discounts.
        self._observations: Deque[Any] = collections.deque()
        self._actions: Deque[Any] = collections.deque()
        self._rewards: Deque[Any] = collections.deque()
        self._discounts: Deque[Any] = collections.deque()
        self._environment_extras: Deque[Any] = collections.deque()  # Beside the observations.

    def add_first(self, timestep: dm_env.TimeStep,
                  environment_extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode with its first observation (and the environment's extras then)."""
        if not timestep.first():
            raise ValueError(f"add_first needs a first timestep, got step type {timestep.step_type}")
        if self._writer is None:
            self._writer = self._client.trajectory_writer(num_keep_alive_refs=1)
        self.reset()
        self._observations.append(timestep.observation)
        self._add_environment_extras(environment_extras)

    def add(self, action: types.NestedArray, next_timestep: dm_env.TimeStep,
            extras: types.NestedArray = (),
            next_environment_extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step; writes the transition that starts n steps back, or the episode's rest.

        `next_environment_extras` are the environment's extras at `next_timestep`
        (required when the adder stores them).
        """
        if not self._observations:
            raise ValueError("add_first must be called before add")
        if extras != ():
            raise ValueError("this adder stores no per-action extras")
        self._add_environment_extras(next_environment_extras)
        self._actions.append(action)
        self._rewards.append(next_timestep.reward)
        self._discounts.append(next_timestep.discount)
        self._observations.append(next_timestep.observation)
        if len(self._actions) == self._n_step:
            self._write_oldest()
        if next_timestep.last():
            while self._actions:
                self._write_oldest()
            # Each transition is one append, complete on its own: the writer's episode need
            # not end, which would wait for this episode's own items.
            self._writer.flush(self._episode_items)
            self.reset()

    def flush(self) -> None:
        """Waits until every item written so far is in replay."""
        if self._writer is not None:
            self._writer.flush()

    def reset(self) -> None:
        """Forgets the current episode's unwritten steps."""
        for window in self._windows():
            window.clear()
        self._episode_items = 0

    def _windows(self):
        return (self._observations, self._actions, self._rewards, self._discounts,
                self._environment_extras)

    def _add_environment_extras(self, environment_extras: Optional[Mapping[str, Any]]) -> None:
        if not self.stores_environment_extras:
            return
        if environment_extras is None:
            raise ValueError("this adder stores the environment's extras at every step; got none")
        self._environment_extras.append(environment_extras)

    def _write_oldest(self) -> None:
        """Writes the transition starting at the oldest step in the window, then drops that step."""
        steps = len(self._actions)
        n_step_return, total_discount = self._cumulative(list(self._rewards)[:steps],
                                                         list(self._discounts)[:steps])
        extras = (transition_extras(self._environment_extras[0], self._environment_extras[steps])
                  if self.stores_environment_extras else ())
        transition = types.Transition(
            observation=self._observations[0], action=self._actions[0], reward=n_step_return,
            discount=total_discount, next_observation=self._observations[steps], extras=extras)
        self._block.append(transition if self._packer is None else self._packer.pack(transition))
        if len(self._block) == self._transitions_per_item:
            self._create_item()
        for window in self._windows():
            if window:
                window.popleft()

    def _create_item(self) -> None:
        """Appends the `transitions_per_item` transitions of the block (stacked if several) as
        one step, and makes an item of it."""
        block, self._block = self._block, []
        self._writer.append(block[0] if len(block) == 1 else stack_rows(block))
        history = self._writer.history
        self._writer.create_item(self._table, self._priority,
                                 history[-1] if self._packer is not None
                                 else tree.map_structure(lambda column: column[-1], history))
        self._episode_items += 1
        self._writer.flush(self._max_in_flight_items)

    def _cumulative(self, rewards: list, discounts: list) -> Any:
        """R and D (see the class docstring) of consecutive rewards and discounts, leaf by leaf.

        Rewards and discounts must share one structure (e.g. a dict of per-agent arrays).
        """
        first = rewards[0]
        if type(first) is dict and all(type(leaf) is np.ndarray for leaf in first.values()):
            # A flat dict of arrays (stacked per network): the same operations, leaf by key.
            n_step_returns, total_discounts = {}, {}
            for key, reward in first.items():
                n_step_return = reward.copy()
                total_discount = discounts[0][key].copy()
                for step in range(1, len(rewards)):
                    total_discount *= self._discount
                    n_step_return += rewards[step][key] * total_discount
                    total_discount *= discounts[step][key]
                n_step_returns[key], total_discounts[key] = n_step_return, total_discount
            return n_step_returns, total_discounts
        flat_rewards = [tree.flatten(reward) for reward in rewards]
        flat_discounts = [tree.flatten(discount) for discount in discounts]
        n_step_returns, total_discounts = [], []
        for leaf in range(len(flat_rewards[0])):
            n_step_return = np.array(flat_rewards[0][leaf], copy=True)
            total_discount = np.array(flat_discounts[0][leaf], copy=True)
            for step in range(1, len(rewards)):
                total_discount *= self._discount
                n_step_return += flat_rewards[step][leaf] * total_discount
                total_discount *= flat_discounts[step][leaf]
            n_step_returns.append(n_step_return)
            total_discounts.append(total_discount)
        return (tree.unflatten_as(rewards[0], n_step_returns),
                tree.unflatten_as(rewards[0], total_discounts))


class SharedWriterClient:
    """A replay client whose `trajectory_writer()` is one writer shared by `num_lanes` adders:
    the `NStepTransitionAdder`s of a vectorised executor's environments writing one stream.

    Each adder still appends its own blocks and makes its items of them, so
    replay holds exactly the items separate writers would; what is saved is a
    stream (and its round trips) per environment. The adders' waits for
    unconfirmed items count the shared stream's, so each wait's allowance is
    multiplied by `num_lanes` (together they keep up to `num_lanes` times one
    adder's items in flight).
    """

    def __init__(self, client: Any, num_lanes: int):
        self._client = client
        self._num_lanes = num_lanes
        self._writer: Optional[_SharedWriter] = None

    def trajectory_writer(self, num_keep_alive_refs: int = 1, **kwargs: Any) -> "_SharedWriter":
        """The shared writer (made by the first call, with its arguments)."""
        if self._writer is None:
            self._writer = _SharedWriter(self._client.trajectory_writer(
                num_keep_alive_refs=num_keep_alive_refs, **kwargs), self._num_lanes)
        return self._writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _SharedWriter:
    """A trajectory writer whose waits allow `num_lanes` times the unconfirmed items asked."""

    def __init__(self, writer: Any, num_lanes: int):
        self._writer = writer
        self._num_lanes = num_lanes

    def flush(self, block_until_num_items: int = 0, timeout_ms: Optional[int] = None) -> None:
        self._writer.flush(block_until_num_items * self._num_lanes, timeout_ms=timeout_ms)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


def check_item_arguments(n_step: int, transitions_per_item: int) -> None:
    """Refuses an n-step adder's `n_step` or `transitions_per_item` below 1, naming it."""
    if n_step < 1:
        raise ValueError(f"n_step must be at least 1, got {n_step}")
    if transitions_per_item < 1:
        raise ValueError(f"transitions_per_item must be at least 1, got {transitions_per_item}")


def transition_extras(first: Mapping[str, Any], last: Mapping[str, Any]) -> Dict[str, Any]:
    """An item's extras from the environment's extras at its two ends: `{k: first[k], "next_k": last[k]}`."""
    return {**first, **{f"next_{key}": value for key, value in last.items()}}


def transition_extras_spec(environment_extras_spec: Mapping[str, Any]) -> Dict[str, Any]:
    """The spec of an item's extras (see `transition_extras`) for environment extras of this spec."""
    return transition_extras(environment_extras_spec, environment_extras_spec)
