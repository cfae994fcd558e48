"""The last rows of B environments' streams, kept in arrays: one ring of rows per environment."""

from typing import Any, Optional

import numpy as np
import tree


class RowRings:
    """Per environment, a ring of `length` rows of one nest's structure (leaves `[B, length,
    ...]`): row t of environment b lives at position `t % length`.

    Made on the first `put` from its values' shapes and dtypes (zeros).
    """

    def __init__(self, num_envs: int, length: int):
        self._num_envs = int(num_envs)
        self.length = int(length)
        self._structure: Any = None
        self._rings: Optional[list] = None

    def put(self, envs: np.ndarray, rows: np.ndarray, values: Any) -> None:
        """Stores `values` (a nest of leaves `[len(envs), ...]`) as row `rows[i]` of environment
        `envs[i]`."""
        leaves = tree.flatten(values)
        if self._rings is None:
            self._structure = values
            self._rings = [np.zeros((self._num_envs, self.length) + np.shape(leaf)[1:],
                                    np.asarray(leaf).dtype) for leaf in leaves]
        positions = np.asarray(rows) % self.length
        for ring, leaf in zip(self._rings, leaves, strict=True):
            ring[envs, positions] = leaf

    def take(self, envs: np.ndarray, rows: np.ndarray) -> Any:
        """The nest of rows `rows[i]` of environments `envs[i]` (leaves `[len(envs), ...]`)."""
        positions = np.asarray(rows) % self.length
        return tree.unflatten_as(self._structure, [ring[envs, positions] for ring in self._rings])

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
