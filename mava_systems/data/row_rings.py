"""The last rows of B environments' streams, kept in arrays: one ring of rows per environment."""

from typing import List, Optional, Sequence

import numpy as np


class RowRings:
    """Per environment, a ring of `length` rows of a fixed list of arrays (leaves `[B, length,
    ...]`): row t of environment b lives at position `t % length`.

    Made on the first `put` from its values' shapes and dtypes (zeros).
    """

    def __init__(self, num_envs: int, length: int):
        self._num_envs = int(num_envs)
        self.length = int(length)
        self._rings: Optional[List[np.ndarray]] = None

    def put(self, envs: np.ndarray, rows: np.ndarray, leaves: Sequence[np.ndarray]) -> None:
        """Stores `leaves` (each `[len(envs), ...]`) as row `rows[i]` of environment `envs[i]`."""
        if self._rings is None:
            self._rings = [np.zeros((self._num_envs, self.length) + np.shape(leaf)[1:],
                                    np.asarray(leaf).dtype) for leaf in leaves]
        positions = np.asarray(rows) % self.length
        for ring, leaf in zip(self._rings, leaves, strict=True):
            ring[envs, positions] = leaf

    def take(self, envs: np.ndarray, rows: np.ndarray, first: int = 0,
             stop: Optional[int] = None) -> List[np.ndarray]:
        """Leaves `first` to `stop` of rows `rows[i]` of environments `envs[i]` (each
        `[len(envs), ...]`)."""
        positions = np.asarray(rows) % self.length
        return [ring[envs, positions] for ring in self._rings[first:stop]]

    def zero(self, envs: np.ndarray, rows: np.ndarray) -> None:
        """Sets rows `rows[i]` of environments `envs[i]` to zeros."""
        positions = np.asarray(rows) % self.length
        for ring in self._rings:
            ring[envs, positions] = 0


def ragged_ranges(envs: np.ndarray, starts: np.ndarray, stops: np.ndarray):
    """For each environment `envs[i]`, the integers `starts[i] <= t < stops[i]` in turn:
    (environment of each, t), grouped by environment in the order given."""
    lengths = np.maximum(np.asarray(stops) - np.asarray(starts), 0)
    total = int(lengths.sum())
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(envs, lengths), np.repeat(starts, lengths) + offsets


def rows_of(leaves: Sequence[np.ndarray], envs: np.ndarray) -> List[np.ndarray]:
    """The rows `envs` of every leaf ([B, ...])."""
    return [np.asarray(leaf)[envs] for leaf in leaves]
