"""A nest of fixed-shape arrays <-> one byte vector: one replay column instead of many.

Reverb's sampling cost grows with the number of columns of an item (each is a
chunk of its own, decoded separately): a batch of 256 MADQN transitions on
simple_spread has 14 columns and samples about five times slower than the same
bytes in one column. So transition tables store each item packed, and the
trainer unpacks whole batches inside its compiled step. Packing is a byte
copy, so every dtype round-trips exactly.
"""

import hashlib
from typing import Any, Dict, List

import numpy as np
import tensorflow as tf
import tree


class ArrayPacker:
    """Packs a nest matching `spec` (a nest of `tf.TensorSpec`s of fixed shapes) into uint8 bytes.

    Leaves of the same dtype are laid out next to each other, so unpacking
    takes a few operations per dtype rather than several per leaf.
    """

    def __init__(self, spec: Any):
        self.spec = spec
        leaves: List[tf.TensorSpec] = tree.flatten(spec)
        if not leaves:
            raise ValueError("ArrayPacker needs a nest with at least one array")
        self._dtypes = [np.dtype(leaf.dtype.as_numpy_dtype) for leaf in leaves]
        self._shapes = []
        for leaf in leaves:
            if not leaf.shape.is_fully_defined():
                raise ValueError(f"ArrayPacker needs fixed shapes, got {leaf.name or 'a leaf'} "
                                 f"with shape {leaf.shape}")
            self._shapes.append(tuple(leaf.shape.as_list()))
        self._elements = [int(np.prod(shape, dtype=np.int64)) for shape in self._shapes]
        # Groups of leaf indices, one per dtype, in order of first appearance.
        self._groups: Dict[np.dtype, List[int]] = {}
        for index, dtype in enumerate(self._dtypes):
            self._groups.setdefault(dtype, []).append(index)
        self._order = [index for group in self._groups.values() for index in group]
        self.num_bytes: int = sum(elements * dtype.itemsize
                                  for elements, dtype in zip(self._elements, self._dtypes))

    def signature(self) -> tf.TensorSpec:
        """The spec of one packed item, named after a digest of the layout (paths, dtypes, shapes).

        Tables of different layouts so have different signatures even when
        their items have the same number of bytes.
        """
        return tf.TensorSpec([self.num_bytes], tf.uint8, name=f"packed_{self.layout_digest()}")

    def layout_digest(self) -> str:
        """12 hex digits identifying the packed layout."""
        layout = [(tree_path, str(self._dtypes[index]), self._shapes[index])
                  for index, (tree_path, _) in enumerate(tree.flatten_with_path(self.spec))]
        layout = [layout[index] for index in self._order]
        return hashlib.sha1(repr(layout).encode()).hexdigest()[:12]

    def pack(self, nest: Any) -> np.ndarray:
        """`nest` (each leaf cast to its spec's dtype and checked against its shape) as bytes."""
        leaves = tree.flatten(nest)
        if len(leaves) != len(self._dtypes):
            raise ValueError(f"expected a nest of {len(self._dtypes)} arrays, got {len(leaves)}")
        parts = []
        for index in self._order:
            array = np.asarray(leaves[index], dtype=self._dtypes[index])
            if array.shape != self._shapes[index]:
                raise ValueError(f"expected shape {self._shapes[index]}, got {array.shape}")
            parts.append(array.tobytes())
        return np.frombuffer(b"".join(parts), dtype=np.uint8)

    def pack_rows(self, nest: Any) -> np.ndarray:
        """`nest` of M rows (leaves `[M, *shape]`) as `[M, num_bytes]`: row i is `pack` of the
        nest's row i."""
        return self.pack_leaf_rows(tree.flatten(nest))

    def pack_leaf_rows(self, leaves: Any) -> np.ndarray:
        """`pack_rows` of a nest given as its leaves (`tree.flatten`'s order)."""
        if len(leaves) != len(self._dtypes):
            raise ValueError(f"expected a nest of {len(self._dtypes)} arrays, got {len(leaves)}")
        parts = []
        for index in self._order:
            array = np.asarray(leaves[index], dtype=self._dtypes[index])
            if array.shape[1:] != self._shapes[index]:
                raise ValueError(f"expected rows of shape {self._shapes[index]}, got "
                                 f"{array.shape[1:]}")
            parts.append(np.ascontiguousarray(array).reshape(len(array), -1).view(np.uint8))
        return np.concatenate(parts, axis=1)

    # Not rewritten by AutoGraph when traced (about a second of a trainer's first step): its
    # loops and branches are over the layout, fixed Python values.
    @tf.autograph.experimental.do_not_convert
    def unpack_rows(self, packed: tf.Tensor) -> Any:
        """Packed items `[..., num_bytes]` -> the nest with every leading dimension flattened
        into one: leaves `[N, *shape]` (e.g. a batch of items of several transitions each
        -> one row per transition)."""
        return self.unpack(tf.reshape(packed, [-1, self.num_bytes]))

    @tf.autograph.experimental.do_not_convert
    def unpack(self, packed: tf.Tensor) -> Any:
        """Packed items `[..., num_bytes]` (any leading dimensions) -> the nest, leaves `[..., *shape]`."""
        outer = tf.shape(packed)[:-1]
        leaves: List[Any] = [None] * len(self._dtypes)
        start = 0
        for dtype, indices in self._groups.items():
            elements = [self._elements[index] for index in indices]
            stop = start + sum(elements) * dtype.itemsize
            part = packed[..., start:stop]
            start = stop
            if dtype == np.bool_:
                values = tf.not_equal(part, 0)
            elif dtype.itemsize == 1:
                values = tf.bitcast(part, tf.as_dtype(dtype))
            else:
                values = tf.bitcast(tf.reshape(part, tf.concat([outer, [-1, dtype.itemsize]], 0)),
                                    tf.as_dtype(dtype))
            for index, value in zip(indices, tf.split(values, elements, axis=-1)):
                leaves[index] = tf.reshape(
                    value, tf.concat([outer, tf.constant(self._shapes[index], tf.int32)], 0))
        return tree.unflatten_as(self.spec, leaves)
