"""Level-Based Foraging (lbforaging 2.0.0) for B environments at once, in NumPy.

`VectorisedForaging` takes the keyword arguments of lbforaging's `ForagingEnv` (those
of any `Foraging-*` id) and plays the same game as the package's environment behind
`wrappers.make_environment_factory("lbf/<id>")`: the same observations (foods, then
players, self first), rewards, legal actions, episode ends (a terminal state when all
food is loaded, a truncation at `max_episode_steps`) and global state (every agent's
observation, concatenated). Resets draw from each environment's own generator with
the package's sequence of draws, so a seed gives the package's episodes exactly.

The package's behaviours kept on purpose (they are its dynamics):
  * Moves are resolved by target cell only: a player moves if no other player targets
    the cell it moves to. A player may therefore move onto one that failed to move
    away, and two players can share a cell.
  * A player of a `-2s` id sees the other players whose coordinates relative to the
    corner of its (edge-clipped) view lie in [0, 2 * sight], which includes some just
    past the clipped edge of the view; food it sees only inside the view.
  * A reset places each player on a cell free of the players already placed and of
    the others' positions of the previous episode (the package keeps them), and a
    player it fails to place in 1000 draws keeps its previous position and level.
The package loads the foods of one step in the order of a Python `set` of players;
no player is ever next to two foods (foods are never spawned that close), so that
order does not change the outcome and the loading here is done for all foods at once.
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from gymnasium.utils import seeding

from wrappers.vectorised.base import BatchedEnvironment, Observation, Transition

NUM_ACTIONS = 6  # NONE, NORTH, SOUTH, WEST, EAST, LOAD
LOAD = 5
# Row and column change of each action.
_DELTAS = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], np.int64)
_MOVES = _DELTAS[1:5]
_SPAWN_ATTEMPTS = 1000
_FOOD, _WALL = 1, 2


def _per_item(value: Any, count: int, name: str) -> np.ndarray:
    """A scalar or a sequence of `count` values as an int array (as the package accepts them)."""
    if isinstance(value, Iterable):
        array = np.array(list(value))
        if array.shape != (count,):
            raise ValueError(f"{name} must be a scalar or a sequence of {count} values, got {value!r}")
        return array
    return np.array([value] * count)


class VectorisedForaging(BatchedEnvironment):
    """B Level-Based Foraging environments stepped in one call (see the module docstring).

    Every argument but `num_envs` (B) is lbforaging's `ForagingEnv`'s, as a `Foraging-*` id
    gives them (`gymnasium.spec(id).kwargs`); `grid_observation` must be False (the
    grid-observation ids are not vectorised) and `render_mode` None (nothing is drawn).
    """

    def __init__(self, num_envs: int, players: int, min_player_level: Any, max_player_level: Any,
                 min_food_level: Any, max_food_level: Any, field_size: Tuple[int, int], max_num_food: int,
                 sight: int, max_episode_steps: int, force_coop: bool, normalize_reward: bool = True,
                 grid_observation: bool = False, observe_agent_levels: bool = True, penalty: float = 0.0,
                 render_mode: Optional[str] = None):
        if grid_observation:
            raise ValueError("the vectorised Level-Based Foraging has vector observations only "
                             "(grid_observation=True is the package's)")
        if render_mode is not None:
            raise ValueError(f"the vectorised Level-Based Foraging does not render (render_mode={render_mode!r})")
        player_columns = 3 if observe_agent_levels else 2
        observation_size = 3 * int(max_num_food) + player_columns * int(players)
        super().__init__(num_envs, int(players), NUM_ACTIONS, (observation_size,),
                         (int(players) * observation_size,))
        self._rows, self._cols = (int(size) for size in field_size)
        if min(self._rows, self._cols) < 3:
            raise ValueError(f"field_size {field_size}: foods spawn inside the border, so both sides must be >= 3")
        self._num_food = int(max_num_food)
        self._min_player_level = _per_item(min_player_level, self.num_agents, "min_player_level")
        self._max_player_level = _per_item(max_player_level, self.num_agents, "max_player_level")
        self._min_food_level = _per_item(min_food_level, self._num_food, "min_food_level")
        self._max_food_level = (None if max_food_level is None
                                else _per_item(max_food_level, self._num_food, "max_food_level"))
        self._sight = int(sight)
        self._full_sight = self._sight >= max(self._rows, self._cols) - 1
        self._max_episode_steps = int(max_episode_steps)
        self._force_coop = bool(force_coop)
        self._normalize_reward = bool(normalize_reward)
        self._player_columns = player_columns
        self._penalty = float(penalty)
        # Observer i lists itself first, then the others in order.
        self._player_order = np.array([[i] + [j for j in range(self.num_agents) if j != i]
                                       for i in range(self.num_agents)], np.int64)
        shape = (self._num_envs, self.num_agents)
        self._pos = np.zeros(shape + (2,), np.int64)
        self._level = np.zeros(shape, np.int64)
        self._placed = np.zeros(self._num_envs, bool)
        self._food_pos = np.zeros((self._num_envs, self._num_food, 2), np.int64)
        self._food_level = np.zeros((self._num_envs, self._num_food), np.int64)
        self._food_spawned = np.zeros(self._num_envs, np.float64)
        self._steps = np.zeros(self._num_envs, np.int64)
        self._legal = np.zeros(shape + (NUM_ACTIONS,), np.float32)
        # Each field with a border of one cell: _WALL on the border, _FOOD under food, else 0.
        self._border = np.full((self._rows + 2, self._cols + 2), _WALL, np.int8)
        self._border[1:-1, 1:-1] = 0
        self._grid = np.repeat(self._border[None], self._num_envs, axis=0)
        # Flat offsets of the 4 cells a player moves to (N, S, W, E) in its bordered field.
        self._move_offsets = _MOVES[:, 0] * (self._cols + 2) + _MOVES[:, 1]
        self._rngs: List[Optional[np.random.Generator]] = [None] * self._num_envs

    # Resets, one environment at a time with its own generator.

    def _reset_envs(self, indices: np.ndarray, seeds: Sequence[Optional[int]]) -> None:
        previous = self._pos[indices].tolist()
        previous_levels = self._level[indices].tolist()
        food_pos = np.zeros((len(indices), self._num_food, 2), np.int64)
        food_level = np.zeros((len(indices), self._num_food), np.int64)
        positions, levels = [], []
        for row, (index, seed) in enumerate(zip(indices.tolist(), seeds)):
            if seed is not None or self._rngs[index] is None:
                self._rngs[index] = seeding.np_random(seed)[0]
            placed = ([tuple(cell) for cell in previous[row]] if self._placed[index]
                      else [None] * self.num_agents)
            env_positions, env_levels, foods = self._spawn(index, self._rngs[index], placed, previous_levels[row])
            positions.append(env_positions)
            levels.append(env_levels)
            for slot, (cell, level) in enumerate(sorted(foods.items())):
                food_pos[row, slot] = cell
                food_level[row, slot] = level
        self._pos[indices] = positions
        self._level[indices] = levels
        self._placed[indices] = True
        self._food_pos[indices] = food_pos
        self._food_level[indices] = food_level
        self._food_spawned[indices] = food_level.sum(axis=1)
        self._steps[indices] = 0
        grids = np.repeat(self._border[None], len(indices), axis=0)
        env_rows = np.repeat(np.arange(len(indices)), self._num_food)
        grids[env_rows, food_pos[..., 0].ravel() + 1, food_pos[..., 1].ravel() + 1] = \
            np.where(food_level.ravel() > 0, _FOOD, 0)
        self._grid[indices] = grids

    def _spawn(self, index: int, rng: np.random.Generator, positions: List[Optional[Tuple[int, int]]],
               levels: List[int]) -> Tuple[List[Tuple[int, int]], List[int], Dict[Tuple[int, int], int]]:
        """The package's `spawn_players` then `spawn_food`, with the same draws: the players'
        cells and levels (starting from the previous episode's) and the foods' levels by cell."""
        permutation = rng.permutation(self.num_agents)
        for player, low, high in zip(range(self.num_agents), self._min_player_level[permutation].tolist(),
                                     self._max_player_level[permutation].tolist()):
            for _ in range(_SPAWN_ATTEMPTS):
                cell = (int(rng.integers(0, self._rows)), int(rng.integers(0, self._cols)))
                if cell not in positions:
                    positions[player] = cell
                    levels[player] = int(rng.integers(low, high + 1))
                    break
        if any(position is None for position in positions):
            raise RuntimeError(f"environment {index}: could not place every player on a "
                               f"{self._rows}x{self._cols} field in {_SPAWN_ATTEMPTS} draws")
        return positions, levels, self._spawn_food(rng, levels, set(positions))

    def _spawn_food(self, rng: np.random.Generator, player_levels: List[int],
                    occupied: set) -> Dict[Tuple[int, int], int]:
        """Food cells and levels (level > 0 only), drawn as the package's `spawn_food` does."""
        if self._max_food_level is None:
            max_levels = np.array([sum(sorted(player_levels)[:3])] * self._num_food)
        else:
            max_levels = self._max_food_level
        min_levels = max_levels if self._force_coop else self._min_food_level
        permutation = rng.permutation(self._num_food)
        min_levels, max_levels = min_levels[permutation], max_levels[permutation]
        foods: Dict[Tuple[int, int], int] = {}
        count = attempts = 0
        while count < self._num_food and attempts < _SPAWN_ATTEMPTS:
            attempts += 1
            row = int(rng.integers(1, self._rows - 1))
            col = int(rng.integers(1, self._cols - 1))
            if (row, col) in occupied or any(
                    (abs(r - row) <= 1 and abs(c - col) <= 1) or (r == row and abs(c - col) <= 2)
                    or (c == col and abs(r - row) <= 2) for r, c in foods):
                continue
            low, high = int(min_levels[count]), int(max_levels[count])
            level = low if low == high else int(rng.integers(low, high + 1))
            if level > 0:  # a level-0 food is an empty cell in the package
                foods[(row, col)] = level
            count += 1
        return foods

    # Steps, all environments at once.

    def _transition(self, actions: np.ndarray, active: np.ndarray) -> Transition:
        legal = np.take_along_axis(self._legal, actions[..., None], axis=-1)[..., 0] > 0
        actions = np.where(legal & active[:, None], actions, 0)  # illegal -> NONE, as the package
        target = self._pos + _DELTAS[actions]
        cell = target[..., 0] * self._cols + target[..., 1]
        claims = (cell[:, :, None] == cell[:, None, :]).sum(-1)
        self._pos = np.where((claims == 1)[..., None], target, self._pos)
        reward = np.zeros(actions.shape, np.float64)
        loaders = actions == LOAD
        if loaders.any():
            reward = self._load(loaders)
        self._steps += active
        food_left = (self._food_level > 0).any(axis=1)
        terminated = active & ~food_left
        truncated = active & food_left & (self._steps >= self._max_episode_steps)
        return Transition(reward.astype(np.float32), terminated, truncated)

    def _load(self, loaders: np.ndarray) -> np.ndarray:
        """Loads every food whose loading neighbours' levels sum to at least its level; the
        players' rewards ([B, N] float64, the package's arithmetic)."""
        offset = self._food_pos[:, None, :, :] - self._pos[:, :, None, :]
        food_level = self._food_level
        adjacent = ((np.abs(offset).sum(-1) == 1) & (food_level > 0)[:, None, :] & loaders[:, :, None])
        group_level = (adjacent * self._level[:, :, None]).sum(axis=1)
        loaded = adjacent.any(axis=1) & (group_level >= food_level)
        shares = adjacent & loaded[:, None, :]
        numerator = (self._level[:, :, None] * food_level[:, None, :]).astype(np.float64)
        if self._normalize_reward:
            denominator = (group_level[:, None, :] * self._food_spawned[:, None, None]).astype(np.float64)
            numerator = np.divide(numerator, denominator, out=np.zeros_like(numerator), where=shares)
        reward = np.where(shares, numerator, 0.0).sum(axis=-1)
        if self._penalty:
            reward -= self._penalty * (adjacent & ~loaded[:, None, :]).any(axis=-1)
        self._food_level = np.where(loaded, 0, food_level)
        env_index, slot = np.nonzero(loaded)
        self._grid[env_index, self._food_pos[env_index, slot, 0] + 1, self._food_pos[env_index, slot, 1] + 1] = 0
        return reward

    def _observe(self) -> Observation:
        pos, sight = self._pos, self._sight
        num_envs, num_agents = self._num_envs, self.num_agents
        corner = np.minimum(sight, pos)  # where the observer is in its edge-clipped view
        alive = self._food_level > 0
        offset = self._food_pos[:, None, :, :] - pos[:, :, None, :]  # [B, N, F, 2]
        if self._full_sight:
            seen = np.broadcast_to(alive[:, None, :], offset.shape[:3])
        else:
            seen = (np.abs(offset) <= sight).all(-1) & alive[:, None, :]
        food_where = offset + corner[:, :, None, :]
        food_values = np.concatenate(
            [food_where, np.broadcast_to(self._food_level[:, None, :, None], seen.shape + (1,))], axis=-1)
        food_obs = _compact(seen, food_values, (-1, -1, 0))
        others = pos[:, self._player_order]  # [B, N, N, 2]: observer, then listing order
        player_where = others - pos[:, :, None, :] + corner[:, :, None, :]
        if self._full_sight:
            visible = None
        else:
            visible = ((player_where >= 0) & (player_where <= 2 * sight)).all(-1)
        player_values = player_where
        if self._player_columns == 3:
            player_values = np.concatenate([player_where, self._level[:, self._player_order][..., None]], axis=-1)
        player_obs = _compact(visible, player_values, (-1, -1, 0)[:self._player_columns])
        observation = np.concatenate([food_obs.reshape(num_envs, num_agents, -1),
                                      player_obs.reshape(num_envs, num_agents, -1)], axis=-1)
        self._legal = self._legal_actions()
        return Observation(observation, self._legal, observation.reshape(num_envs, -1))

    def _legal_actions(self) -> np.ndarray:
        """[B, N, 6] float32: NONE; a move onto the field but not onto food; LOAD next to food."""
        width = self._cols + 2
        cell = (np.arange(self._num_envs)[:, None] * (self._rows + 2) * width
                + (self._pos[..., 0] + 1) * width + self._pos[..., 1] + 1)
        neighbours = self._grid.ravel()[cell[..., None] + self._move_offsets]  # [B, N, 4]
        legal = np.empty(self._pos.shape[:2] + (NUM_ACTIONS,), np.float32)
        legal[..., 0] = 1.0
        legal[..., 1:5] = neighbours == 0
        legal[..., LOAD] = (neighbours == _FOOD).any(-1)
        return legal


def _compact(listed: Optional[np.ndarray], values: np.ndarray, fill: Sequence[float]) -> np.ndarray:
    """float32 [B, N, K, C]: per observer, the `listed` entries of `values` in order, then `fill`s.

    `listed` None: every entry is listed.
    """
    if listed is None or listed.all():
        return values.astype(np.float32)
    *lead, size, columns = values.shape
    out = np.empty(tuple(lead) + (size + 1, columns), np.float32)
    out[...] = fill
    slot = np.where(listed, np.cumsum(listed, axis=-1) - 1, size)
    rows = np.arange(int(np.prod(lead))).reshape(tuple(lead) + (1,)) * (size + 1)
    out.reshape(-1, columns)[(rows + slot).ravel()] = values.reshape(-1, columns)
    return out[..., :size, :]
