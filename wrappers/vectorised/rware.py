"""Robotic Warehouse (rware 2.0.0) for B environments at once, in NumPy.

`VectorisedWarehouse` takes the keyword arguments of rware's `Warehouse` (those of any
`rware-*` id) and plays the same game as the package's environment behind
`wrappers.make_environment_factory("rware/<id>")`: the same flattened observations
(self, then the sensor cells row by row), rewards, episode ends (truncations at
`max_steps` or after `max_inactivity_steps` without a delivery; the package has no
terminal states), legal actions (all five, always) and global state (every agent's
observation, concatenated). Resets and new requests draw from each environment's own
generator with the package's sequence of draws, so a seed gives the package's episodes
exactly. The layout (grid size, highways, goals) is read from one `Warehouse` built
with the same arguments.

Moves: the package resolves them on a graph whose edges go from each agent's cell to
the cell it asks for (its own cell if it does not move forward). When no cell is asked
for by two agents (the graph's components are paths and cycles) every move succeeds
but those of two agents swapping cells; that case is computed for all environments at
once. An environment where two agents ask for the same cell is resolved with the
package's own rule on a networkx graph built the same way (a cycle commits only its
agents, a two-agent swap nobody, otherwise the longest path, ties broken by networkx's
order), in Python, one such environment at a time. Deliveries (a requested shelf on a
goal: a new request drawn from the generator) are handled one environment at a time too.
"""

from typing import Any, List, Optional, Sequence

import networkx as nx
import numpy as np
from gymnasium.utils import seeding

from wrappers.vectorised.base import BatchedEnvironment, Observation, Transition

NUM_ACTIONS = 5  # NOOP, FORWARD, LEFT, RIGHT, TOGGLE_LOAD
_FORWARD, _LEFT, _RIGHT, _TOGGLE = 1, 2, 3, 4
# Directions are the package's: UP, DOWN, LEFT, RIGHT; (column, row) change of a step forward.
_STEP = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], np.int64)
_TURN_RIGHT = np.array([3, 2, 0, 1], np.int64)  # UP->RIGHT, DOWN->LEFT, LEFT->UP, RIGHT->DOWN
_TURN_LEFT = np.array([2, 3, 1, 0], np.int64)
_INDIVIDUAL, _GLOBAL, _TWO_STAGE = 1, 0, 2  # rware's RewardType values
_ONE_HOT = np.eye(4, dtype=np.float32)


class VectorisedWarehouse(BatchedEnvironment):
    """B Robotic Warehouse environments stepped in one call (see the module docstring).

    Every argument but `num_envs` (B) is rware's `Warehouse`'s, as an `rware-*` id gives them
    (`gymnasium.spec(id).kwargs`); `msg_bits` must be 0, `observation_type` FLATTENED (the
    vector observations every `rware-*` id registered on import has) and `render_mode` None.
    """

    def __init__(self, num_envs: int, shelf_columns: int, column_height: int, shelf_rows: int, n_agents: int,
                 msg_bits: int, sensor_range: int, request_queue_size: int, max_inactivity_steps: Optional[int],
                 max_steps: Optional[int], reward_type: Any, layout: Optional[str] = None,
                 observation_type: Any = None, image_observation_layers: Any = None,
                 image_observation_directional: bool = True, normalised_coordinates: bool = False,
                 render_mode: Optional[str] = None):
        # rware is imported only by who builds one (as the registry imports the package).
        from rware.warehouse import ObservationType, RewardType, Warehouse  # pylint: disable=import-outside-toplevel
        if msg_bits:
            raise ValueError(f"the vectorised Robotic Warehouse has no messages (msg_bits={msg_bits})")
        if observation_type not in (None, ObservationType.FLATTENED):
            raise ValueError(f"the vectorised Robotic Warehouse has flattened vector observations only "
                             f"(observation_type={observation_type})")
        if render_mode is not None:
            raise ValueError(f"the vectorised Robotic Warehouse does not render (render_mode={render_mode!r})")
        del image_observation_layers, image_observation_directional  # image observations only
        layout_env = Warehouse(shelf_columns, column_height, shelf_rows, n_agents, 0, sensor_range,
                               request_queue_size, max_inactivity_steps, max_steps, reward_type, layout=layout)
        self._rows, self._cols = (int(size) for size in layout_env.grid_size)
        self._highway = layout_env.highways.astype(bool)
        self._goals = [(int(x), int(y)) for x, y in layout_env.goals]
        self._sensor = int(sensor_range)
        window = (2 * self._sensor + 1) ** 2
        observation_size = 8 + 7 * window
        super().__init__(num_envs, int(n_agents), NUM_ACTIONS, (observation_size,),
                         (int(n_agents) * observation_size,))
        self._queue_size = int(request_queue_size)
        self._max_inactivity = max_inactivity_steps or 0
        self._max_steps = max_steps or 0
        self._reward_type = RewardType(reward_type).value  # a RewardType or its value
        self._normalised = bool(normalised_coordinates)
        # Shelves are numbered 1..S in row-major order of the non-highway cells.
        rows, cols = np.nonzero(~self._highway)
        self._num_shelves = len(rows)
        if self._queue_size > self._num_shelves:
            raise ValueError(f"request_queue_size {self._queue_size} exceeds the {self._num_shelves} shelves")
        if self.num_agents > self._rows * self._cols:
            raise ValueError(f"{self.num_agents} agents do not fit on a {self._rows}x{self._cols} grid")
        self._shelf_home = np.stack([cols, rows], axis=1).astype(np.int64)  # (x, y) per shelf
        b, n = self._num_envs, self.num_agents
        self._pos = np.zeros((b, n, 2), np.int64)  # (x, y)
        self._dir = np.zeros((b, n), np.int64)
        self._carrying = np.zeros((b, n), np.int64)  # shelf id, 0: none
        self._delivered = np.zeros((b, n), bool)  # two-stage rewards
        self._shelf_pos = np.zeros((b, self._num_shelves, 2), np.int64)
        self._requested = np.zeros((b, self._num_shelves + 1), bool)
        self._steps = np.zeros(b, np.int64)
        self._inactive = np.zeros(b, np.int64)
        # Agent and shelf ids (0: none) by cell, with a border of `sensor_range` empty cells for the
        # sensors; `_agent_grid` and `_shelf_grid` are views of the map inside the border.
        r = self._sensor
        self._agent_padded = np.zeros((b, self._rows + 2 * r, self._cols + 2 * r), np.int64)
        self._shelf_padded = np.zeros_like(self._agent_padded)
        self._agent_grid = self._agent_padded[:, r:r + self._rows, r:r + self._cols]
        self._shelf_grid = self._shelf_padded[:, r:r + self._rows, r:r + self._cols]
        self._rngs: List[Optional[np.random.Generator]] = [None] * b
        self._legal = np.ones((b, n, NUM_ACTIONS), np.float32)
        self._legal.flags.writeable = False
        self._graph_resolutions = 0
        # Sensor window offsets (dx, dy), rows outer, as the package reads them.
        dy, dx = np.meshgrid(np.arange(-self._sensor, self._sensor + 1), np.arange(-self._sensor, self._sensor + 1),
                             indexing="ij")
        self._window = np.stack([dx.ravel(), dy.ravel()], axis=1)

    @property
    def graph_resolutions(self) -> int:
        """How many environment steps so far had two agents asking for one cell (resolved on a
        networkx graph, in Python)."""
        return self._graph_resolutions

    # Resets, one environment at a time with its own generator.

    def _reset_envs(self, indices: np.ndarray, seeds: Sequence[Optional[int]]) -> None:
        n, cells = self.num_agents, self._rows * self._cols
        for index, seed in zip(indices.tolist(), seeds):
            if seed is not None or self._rngs[index] is None:
                self._rngs[index] = seeding.np_random(seed)[0]
            rng = self._rngs[index]
            locations = rng.choice(np.arange(cells), size=n, replace=False)
            self._pos[index, :, 0] = locations % self._cols
            self._pos[index, :, 1] = locations // self._cols
            self._dir[index] = rng.choice(4, size=n)
            self._requested[index] = False
            self._requested[index, rng.choice(self._num_shelves, size=self._queue_size, replace=False) + 1] = True
        self._carrying[indices] = 0
        self._delivered[indices] = False
        self._shelf_pos[indices] = self._shelf_home
        self._steps[indices] = 0
        self._inactive[indices] = 0
        self._redraw(indices)

    def _redraw(self, indices: np.ndarray) -> None:
        """Rewrites the agent and shelf grids of environments `indices` from the positions."""
        count = len(indices)
        self._agent_grid[indices] = 0
        self._shelf_grid[indices] = 0
        env = np.repeat(indices, self._num_shelves)
        shelf_pos = self._shelf_pos[indices].reshape(-1, 2)
        self._shelf_grid[env, shelf_pos[:, 1], shelf_pos[:, 0]] = np.tile(np.arange(1, self._num_shelves + 1), count)
        env = np.repeat(indices, self.num_agents)
        pos = self._pos[indices].reshape(-1, 2)
        self._agent_grid[env, pos[:, 1], pos[:, 0]] = np.tile(np.arange(1, self.num_agents + 1), count)

    # Steps, all environments at once.

    def _transition(self, actions: np.ndarray, active: np.ndarray) -> Transition:
        b, n = actions.shape
        envs = np.arange(b)[:, None]
        actions = np.where(active[:, None], actions, 0)
        forward = actions == _FORWARD
        target = np.where(forward[..., None], self._pos + _STEP[self._dir], self._pos)
        target[..., 0] = np.clip(target[..., 0], 0, self._cols - 1)
        target[..., 1] = np.clip(target[..., 1], 0, self._rows - 1)
        # A loaded agent cannot move under a standing shelf (one no agent there carries).
        tx, ty = target[..., 0], target[..., 1]
        occupant = self._agent_grid[envs, ty, tx]
        occupant_loaded = np.concatenate([np.zeros((b, 1), np.int64), self._carrying], axis=1)[envs, occupant] > 0
        moving = (target != self._pos).any(-1)
        cancelled = (self._carrying > 0) & moving & (self._shelf_grid[envs, ty, tx] > 0) & ~occupant_loaded
        actions = np.where(cancelled, 0, actions)
        target = np.where(cancelled[..., None], self._pos, target)
        committed = self._committed(target, active)
        moves = (actions == _FORWARD) & committed
        self._pos = np.where(moves[..., None], target, self._pos)
        carried = moves & (self._carrying > 0)
        env_index, agent = np.nonzero(carried)
        self._shelf_pos[env_index, self._carrying[env_index, agent] - 1] = self._pos[env_index, agent]
        self._dir = np.where(actions == _LEFT, _TURN_LEFT[self._dir],
                             np.where(actions == _RIGHT, _TURN_RIGHT[self._dir], self._dir))
        reward = np.zeros((b, n), np.float64)
        toggle = actions == _TOGGLE
        if toggle.any():
            self._toggle(toggle, reward)
        self._redraw(np.arange(b))
        delivered = np.zeros(b, bool)
        for x, y in self._goals:
            shelf = self._shelf_grid[:, y, x]
            delivered_here = self._requested[np.arange(b), shelf] & (shelf > 0) & active
            for index in np.flatnonzero(delivered_here).tolist():
                self._deliver(index, int(shelf[index]), x, y, reward)
            delivered |= delivered_here
        self._inactive = np.where(delivered, 0, self._inactive + active)
        self._steps += active
        over = np.zeros(b, bool)
        if self._max_inactivity:
            over |= self._inactive >= self._max_inactivity
        if self._max_steps:
            over |= self._steps >= self._max_steps
        return Transition(reward.astype(np.float32), np.zeros(b, bool), over & active)

    def _committed(self, target: np.ndarray, active: np.ndarray) -> np.ndarray:
        """[B, N] bool: which agents may carry out their action, given the cells ([B, N, 2]) they
        ask for: all but two agents swapping cells where no cell is asked for twice, the graph
        rule in the environments where one is."""
        cell = target[..., 1] * self._cols + target[..., 0]
        start = self._pos[..., 1] * self._cols + self._pos[..., 0]
        shared = (cell[:, :, None] == cell[:, None, :]).sum(-1) > 1
        conflicted = shared.any(axis=1) & active
        swapped = ((cell[:, :, None] == start[:, None, :]) & (start[:, :, None] == cell[:, None, :])).any(-1) & \
            (cell != start)
        committed = ~swapped
        self._graph_resolutions += int(conflicted.sum())
        for index in np.flatnonzero(conflicted).tolist():
            committed[index] = self._committed_on_graph(index, self._pos[index].tolist(), target[index].tolist())
        return committed

    def _committed_on_graph(self, index: int, starts: List[List[int]], targets: List[List[int]]) -> np.ndarray:
        """[N] bool: which agents of environment `index` may carry out their action, by the
        package's rule on the graph of (cell -> asked-for cell) edges, added in agent order."""
        graph = nx.DiGraph()
        for start, target in zip(starts, targets):
            graph.add_edge(tuple(start), tuple(target))
        agent_at = self._agent_grid[index]
        committed = np.zeros(self.num_agents, bool)
        for component in nx.weakly_connected_components(graph):
            subgraph = graph.subgraph(component).copy()
            try:
                cycle = nx.algorithms.find_cycle(subgraph)
            except nx.NetworkXNoCycle:
                nodes = nx.algorithms.dag_longest_path(subgraph)
            else:
                if len(cycle) == 2:  # two agents swapping cells: neither moves
                    continue
                nodes = [edge[0] for edge in cycle]
            for x, y in nodes:
                if agent_at[y, x]:
                    committed[agent_at[y, x] - 1] = True
        return committed

    def _toggle(self, toggle: np.ndarray, reward: np.ndarray) -> None:
        """Loads the shelf under each toggling empty agent; unloads each toggling loaded agent
        off the highways (two-stage rewards: 0.5 for returning a delivered shelf)."""
        b = toggle.shape[0]
        x, y = self._pos[..., 0], self._pos[..., 1]
        under = self._shelf_grid[np.arange(b)[:, None], y, x]
        load = toggle & (self._carrying == 0)
        unload = toggle & (self._carrying > 0) & ~self._highway[y, x]
        if self._reward_type == _TWO_STAGE:
            reward += 0.5 * (unload & self._delivered)
        self._delivered &= ~unload
        self._carrying = np.where(load, under, np.where(unload, 0, self._carrying))

    def _deliver(self, index: int, shelf: int, x: int, y: int, reward: np.ndarray) -> None:
        """A requested shelf on goal (x, y) of environment `index`: a new request in its place
        (drawn among the unrequested shelves, in shelf order) and the agent's reward."""
        requested = self._requested[index]
        candidates = np.flatnonzero(~requested[1:]) + 1
        new = int(candidates[self._rngs[index].choice(len(candidates))])
        requested[shelf] = False
        requested[new] = True
        agent = self._agent_grid[index, y, x] - 1  # the package's index (-1 if no agent: the last)
        if self._reward_type == _GLOBAL:
            reward[index] += 1
        elif self._reward_type == _INDIVIDUAL:
            reward[index, agent] += 1
        else:
            self._delivered[index, agent] = True
            reward[index, agent] += 0.5

    def _observe(self) -> Observation:
        b, n = self._num_envs, self.num_agents
        envs = np.arange(b)[:, None, None]
        r = self._sensor
        wx = self._pos[..., 0][..., None] + self._window[:, 0] + r  # [B, N, K]
        wy = self._pos[..., 1][..., None] + self._window[:, 1] + r
        seen_agent = self._agent_padded[envs, wy, wx]
        seen_shelf = self._shelf_padded[envs, wy, wx]
        dirs = np.concatenate([np.zeros((b, 1), np.int64), self._dir], axis=1)  # no agent: UP's one-hot
        seen_dir = dirs[envs, seen_agent]
        window = np.zeros(seen_agent.shape + (7,), np.float32)
        window[..., 0] = seen_agent > 0
        window[..., 1:5] = _ONE_HOT[seen_dir]
        window[..., 5] = seen_shelf > 0
        window[..., 6] = self._requested[envs, seen_shelf]  # never shelf 0
        own = np.zeros((b, n, 8), np.float32)
        x, y = self._pos[..., 0], self._pos[..., 1]
        if self._normalised:
            own[..., 0] = x / (self._cols - 1)
            own[..., 1] = y / (self._rows - 1)
        else:
            own[..., 0], own[..., 1] = x, y
        own[..., 2] = self._carrying > 0
        own[..., 3:7] = _ONE_HOT[self._dir]
        own[..., 7] = self._highway[y, x]
        observation = np.concatenate([own, window.reshape(b, n, -1)], axis=-1)
        return Observation(observation, self._legal, observation.reshape(b, -1))
