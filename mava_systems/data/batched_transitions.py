"""n-step transitions of B environments, computed in arrays and written through one stream.

`BatchedNStepAdder` is what B `NStepTransitionAdder`s (one per environment,
`transitions_per_item` transitions per item, packed) sharing one trajectory
writer write, taking each batched step's arrays at once: every environment's
last `n_step` steps are kept in rings (`RowRings`), the transitions due at a step
(one per environment whose window is full, and the rest of an episode at its
end) are gathered, their n-step returns and discounts computed for all of them
in the same float32 operations as the per-environment adder, packed together
(`ArrayPacker.pack_leaf_rows`), and each environment's items made of its own
transitions in its stream's order (an item may hold the end of one episode and
the start of the next). Each item is still one append: the transitions of
different environments are sampled independently.
"""

from typing import Any, List, Mapping, Optional

import numpy as np
import tree

from mava_systems.data.packing import ArrayPacker
from mava_systems.data.row_rings import RowRings, ragged_ranges, rows_of
from mava_systems.data.transition_adder import check_item_arguments, transition_extras


class BatchedNStepAdder:
    """The packed n-step transition items of B environments (see the module's docstring).

    `add_first(starting, observation, extras)` starts the episodes of the
    environments `starting` ([B] bool) marks; `add(stepped, action, reward, discount,
    next_observation, last, next_extras)` records the step the environments
    `stepped` marks took (`last`: their episode ended there). Leaves are `[B, ...]`,
    structured as one environment's stacked data; `extras` are the environment's
    (`{"env_state": [B, ...]}`) when `environment_extras`.
    """

    def __init__(self, client: Any, table: str, num_envs: int, n_step: int, discount: float,
                 packer: ArrayPacker, environment_extras: bool = False,
                 transitions_per_item: int = 1, max_in_flight_items: int = 64,
                 priority: float = 1.0):
        check_item_arguments(n_step, transitions_per_item)
        self._client = client
        self._table = table
        self._num_envs = int(num_envs)
        self._n_step = n_step
        self._discount = discount
        self._packer = packer
        self.stores_environment_extras = environment_extras
        self._transitions_per_item = transitions_per_item
        self._max_in_flight_items = max_in_flight_items
        self._priority = priority
        self._writer: Optional[Any] = None
        self._history: Optional[Any] = None
        # Row t of an episode: its observation's leaves (then the environment's extras'), and
        # the leaves of the action taken there with the reward and discount that followed.
        self._observations = RowRings(num_envs, n_step + 1)
        self._steps = RowRings(num_envs, n_step + 1)
        self._extras: Mapping[str, Any] = {}  # The extras' structure.
        self._observation_leaves = 0
        self._step_leaves = (0, 0)  # Leaves of an action, of a reward (a discount's too).
        self._count = np.zeros(num_envs, np.int64)  # Actions of each running episode.
        self._unwritten = np.zeros(num_envs, np.int64)  # Its first transition not written.
        self._blocks: List[List[np.ndarray]] = [[] for _ in range(num_envs)]

    def add_first(self, starting: np.ndarray, observation: Any,
                  extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts the episodes of the environments `starting` marks at `observation`."""
        envs = np.flatnonzero(starting)
        if not len(envs):
            return
        self._count[envs] = 0
        self._unwritten[envs] = 0
        self._observations.put(envs, np.zeros(len(envs), np.int64),
                               self._observation_row(observation, extras, envs))

    def add(self, stepped: np.ndarray, action: Any, reward: Any, discount: Any,
            next_observation: Any, last: np.ndarray,
            next_extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records the environments' step (see the class) and writes the items it completes."""
        envs = np.flatnonzero(stepped)
        if not len(envs):
            return
        taken = self._count[envs]
        actions, rewards = tree.flatten(action), tree.flatten(reward)
        self._step_leaves = (len(actions), len(rewards))
        self._steps.put(envs, taken, rows_of(actions + rewards + tree.flatten(discount), envs))
        count = taken + 1
        self._count[envs] = count
        self._observations.put(envs, count, self._observation_row(next_observation,
                                                                   next_extras, envs))
        # Due: the transition whose window is now full, or at an episode's end all the rest.
        stops = np.where(last[envs], count, np.maximum(count - self._n_step + 1, 0))
        of_env, starts = ragged_ranges(envs, self._unwritten[envs], stops)
        self._unwritten[envs] = np.maximum(self._unwritten[envs], stops)
        if len(of_env):
            self._write(of_env, starts, np.minimum(self._n_step, self._count[of_env] - starts))

    def flush(self) -> None:
        """Waits until every item written so far is in replay."""
        if self._writer is not None:
            self._writer.flush()

    def _observation_row(self, observation: Any, extras: Optional[Mapping[str, Any]],
                         envs: np.ndarray) -> List[np.ndarray]:
        leaves = tree.flatten(observation)
        self._observation_leaves = len(leaves)
        if self.stores_environment_extras:
            if extras is None:
                raise ValueError("this adder stores the environment's extras at every step; "
                                 "got none")
            self._extras = dict(extras)
            leaves = leaves + tree.flatten(self._extras)
        return rows_of(leaves, envs)

    def _write(self, of_env: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        """Packs the transitions from row `starts[i]` of `lengths[i]` steps of environments
        `of_env[i]` and adds each to its environment's item."""
        num_actions, num_rewards = self._step_leaves
        first = self._steps.take(of_env, starts)
        returns = [leaf.copy() for leaf in first[num_actions:num_actions + num_rewards]]
        totals = [leaf.copy() for leaf in first[num_actions + num_rewards:]]
        for step in range(1, int(lengths.max())):
            going = lengths > step
            later = self._steps.take(of_env, starts + step, first=num_actions)
            for index, (reward, discount) in enumerate(zip(later[:num_rewards],
                                                           later[num_rewards:])):
                keep = going.reshape((-1,) + (1,) * (reward.ndim - 1))
                total = np.where(keep, totals[index] * self._discount, totals[index])
                returns[index] = np.where(keep, returns[index] + reward * total, returns[index])
                totals[index] = np.where(keep, total * discount, total)
        count = self._observation_leaves
        observation = self._observations.take(of_env, starts)
        next_observation = self._observations.take(of_env, starts + lengths)
        extras = []
        if self.stores_environment_extras:
            extras = tree.flatten(transition_extras(
                tree.unflatten_as(self._extras, observation[count:]),
                tree.unflatten_as(self._extras, next_observation[count:])))
        packed = self._packer.pack_leaf_rows(
            observation[:count] + first[:num_actions] + returns + totals
            + next_observation[:count] + extras)
        for env, row in zip(of_env.tolist(), packed):
            block = self._blocks[env]
            block.append(row)
            if len(block) == self._transitions_per_item:
                self._create_item(block)
                self._blocks[env] = []
        if self._writer is not None:
            self._writer.flush(self._max_in_flight_items * self._num_envs)

    def _create_item(self, block: List[np.ndarray]) -> None:
        if self._writer is None:
            self._writer = self._client.trajectory_writer(num_keep_alive_refs=1)
        self._writer.append(block[0] if len(block) == 1 else np.stack(block))
        if self._history is None:  # The one column's history: the same object from now on.
            self._history = self._writer.history
        self._writer.create_item(self._table, self._priority, self._history[-1])
