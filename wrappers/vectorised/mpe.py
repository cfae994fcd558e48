"""MPE's simple_spread_v3 (mpe2 1.1.1) for B environments at once, in NumPy.

`VectorisedSimpleSpread` plays the game of `wrappers.make_environment_factory(
"mpe/simple_spread_v3")` with discrete actions: N agents and N landmarks placed
uniformly in [-1, 1]^2, the package's point-mass physics (damping, soft contact
forces between agents), the shared reward (minus the sum over landmarks of the
closest agent's distance) mixed by `local_ratio` with each agent's collision
penalty, truncation after `max_cycles` steps, observations
`[own velocity, own position, landmarks relative, other agents relative, their
(silent, zero) communication]` and the global state (every agent's observation,
concatenated). The float64 arithmetic is the package's, in its order (contact
forces are added pair by pair as its loops add them), so observations, rewards and
states equal the package's exactly; resets draw from each environment's own
generator as the package does.
"""

from typing import List, Optional, Sequence

import numpy as np
from gymnasium.utils import seeding

from wrappers.vectorised.base import BatchedEnvironment, Observation, Transition

NUM_ACTIONS = 5  # no action, left, right, down, up
_DIRECTIONS = np.array([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])
# The package's world and scenario constants.
_SENSITIVITY = 5.0
_DT = 0.1
_DAMPING = 0.25
_CONTACT_FORCE = 1e2
_CONTACT_MARGIN = 1e-3
_AGENT_SIZE = 0.15
_COMMUNICATION_SIZE = 2


class VectorisedSimpleSpread(BatchedEnvironment):
    """B simple_spread_v3 environments stepped in one call (see the module docstring).

    The arguments are simple_spread_v3's (`N`, `local_ratio`, `max_cycles`); its other
    options must keep their defaults except `dynamic_rescaling` (drawing only): continuous
    actions, curriculum, `terminate_on_success`, partial observability, benchmark data and
    rendering are the package's alone.
    """

    def __init__(self, num_envs: int, N: int = 3, local_ratio: float = 0.5,  # pylint: disable=invalid-name
                 max_cycles: int = 25, continuous_actions: bool = False, render_mode: Optional[str] = None,
                 dynamic_rescaling: bool = True, benchmark_data: bool = False, curriculum: bool = False,
                 terminate_on_success: bool = False, num_agent_neighbors: Optional[int] = None,
                 num_landmark_neighbors: Optional[int] = None):
        del dynamic_rescaling  # only changes drawing
        options = {"continuous_actions": continuous_actions, "render_mode": render_mode,
                   "benchmark_data": benchmark_data, "curriculum": curriculum,
                   "terminate_on_success": terminate_on_success, "num_agent_neighbors": num_agent_neighbors,
                   "num_landmark_neighbors": num_landmark_neighbors}
        changed = {name: value for name, value in options.items() if value not in (None, False)}
        if changed:
            raise ValueError(f"the vectorised simple_spread_v3 has the package's default options only; "
                             f"got {changed}")
        if not 0.0 <= local_ratio <= 1.0:
            raise ValueError(f"local_ratio is a proportion in [0, 1], got {local_ratio}")
        count = int(N)
        observation_size = 4 + 2 * count + (2 + _COMMUNICATION_SIZE) * (count - 1)
        super().__init__(num_envs, count, NUM_ACTIONS, (observation_size,), (count * observation_size,))
        self._local_ratio = float(local_ratio)
        self._max_cycles = int(max_cycles)
        self._others = np.array([[j for j in range(count) if j != i] for i in range(count)], np.int64)
        self._pos = np.zeros((self._num_envs, count, 2))
        self._vel = np.zeros((self._num_envs, count, 2))
        self._landmarks = np.zeros((self._num_envs, count, 2))
        self._steps = np.zeros(self._num_envs, np.int64)
        self._legal = np.ones((self._num_envs, count, NUM_ACTIONS), np.float32)
        self._legal.setflags(write=False)  # the same array every step
        self._rngs: List[Optional[np.random.Generator]] = [None] * self._num_envs

    def _reset_envs(self, indices: np.ndarray, seeds: Sequence[Optional[int]]) -> None:
        count = self.num_agents
        draws = np.empty((len(indices), 2 * count, 2))
        for row, (index, seed) in enumerate(zip(indices.tolist(), seeds)):
            if seed is not None or self._rngs[index] is None:
                self._rngs[index] = seeding.np_random(seed)[0]
            rng = self._rngs[index]
            for entity in range(2 * count):  # agents, then landmarks, one draw each
                draws[row, entity] = rng.uniform(-1, +1, 2)
        self._pos[indices] = draws[:, :count]
        self._landmarks[indices] = draws[:, count:]
        self._vel[indices] = 0.0
        self._steps[indices] = 0

    def _transition(self, actions: np.ndarray, active: np.ndarray) -> Transition:
        pos, vel = self._pos, self._vel
        force = _DIRECTIONS[actions] * _SENSITIVITY + 0.0
        for first in range(self.num_agents):
            for second in range(first + 1, self.num_agents):
                push = _contact_force(pos[:, first] - pos[:, second])
                force[:, first] = push + force[:, first]
                force[:, second] = -push + force[:, second]
        moving = active[:, None, None]
        self._pos = np.where(moving, pos + vel * _DT, pos)
        self._vel = np.where(moving, vel * (1 - _DAMPING) + (force / 1.0) * _DT, vel)
        self._steps += active
        reward = self._rewards()
        truncated = active & (self._steps >= self._max_cycles)
        return Transition(reward.astype(np.float32), np.zeros(self._num_envs, bool), truncated)

    def _rewards(self) -> np.ndarray:
        """[B, N] float64: the shared and the collision rewards, mixed as the package does."""
        offset = self._pos[:, :, None, :] - self._landmarks[:, None, :, :]
        closest = np.sqrt(np.square(offset[..., 0]) + np.square(offset[..., 1])).min(axis=1)  # [B, L]
        shared = np.zeros(self._num_envs)
        for landmark in range(closest.shape[1]):
            shared = shared - closest[:, landmark]
        between = self._pos[:, :, None, :] - self._pos[:, None, :, :]
        distance = np.sqrt(np.square(between[..., 0]) + np.square(between[..., 1]))
        collisions = (distance < _AGENT_SIZE + _AGENT_SIZE) & ~np.eye(self.num_agents, dtype=bool)
        own = 0.0 - collisions.sum(axis=1).astype(np.float64)
        return shared[:, None] * (1 - self._local_ratio) + own * self._local_ratio

    def _observe(self) -> Observation:
        pos = self._pos
        num_envs, count = self._num_envs, self.num_agents
        landmarks = self._landmarks[:, None, :, :] - pos[:, :, None, :]
        others = pos[:, self._others] - pos[:, :, None, :]
        silence = np.zeros((num_envs, count, _COMMUNICATION_SIZE * (count - 1)))
        observation = np.concatenate(
            [self._vel, pos, landmarks.reshape(num_envs, count, -1), others.reshape(num_envs, count, -1), silence],
            axis=-1).astype(np.float32)
        return Observation(observation, self._legal, observation.reshape(num_envs, -1))


def _contact_force(delta: np.ndarray) -> np.ndarray:
    """[B, 2]: the package's soft contact force on the first of two agents `delta` apart."""
    distance = np.sqrt(np.square(delta[:, 0]) + np.square(delta[:, 1]))
    penetration = np.logaddexp(0, -(distance - (_AGENT_SIZE + _AGENT_SIZE)) / _CONTACT_MARGIN) * _CONTACT_MARGIN
    return _CONTACT_FORCE * delta / distance[:, None] * penetration[:, None]

