"""ArrayPacker: every dtype and shape round-trips exactly, singly and in batches."""

import numpy as np
import pytest
import tensorflow as tf

from mava_systems.data.packing import ArrayPacker

SPEC = {
    "observation": tf.TensorSpec([3, 4], tf.float32),
    "legal": tf.TensorSpec([3, 5], tf.bool),
    "action": (tf.TensorSpec([3], tf.int64), tf.TensorSpec([], tf.int32)),
    "byte": tf.TensorSpec([2], tf.uint8),
    "small": tf.TensorSpec([], tf.int8),
    "wide": tf.TensorSpec([2], tf.float64),
}


def _random_item(rng: np.random.Generator) -> dict:
    return {
        "observation": rng.normal(size=(3, 4)).astype(np.float32),
        "legal": rng.random((3, 5)) < 0.5,
        "action": (rng.integers(-2**40, 2**40, size=3), np.int32(rng.integers(-100, 100))),
        "byte": rng.integers(0, 256, size=2).astype(np.uint8),
        "small": np.int8(rng.integers(-128, 128)),
        "wide": rng.normal(size=2) * 1e300,
    }


def test_round_trip_of_a_batch_is_exact():
    packer = ArrayPacker(SPEC)
    rng = np.random.default_rng(0)
    items = [_random_item(rng) for _ in range(7)]
    packed = np.stack([packer.pack(item) for item in items])
    assert packed.dtype == np.uint8 and packed.shape == (7, packer.num_bytes)
    assert packer.signature().shape.as_list() == [packer.num_bytes]
    unpacked = packer.unpack(tf.constant(packed))
    for index, item in enumerate(items):
        np.testing.assert_array_equal(unpacked["observation"][index], item["observation"])
        np.testing.assert_array_equal(unpacked["legal"][index], item["legal"])
        np.testing.assert_array_equal(unpacked["action"][0][index], item["action"][0])
        np.testing.assert_array_equal(unpacked["action"][1][index], item["action"][1])
        np.testing.assert_array_equal(unpacked["byte"][index], item["byte"])
        np.testing.assert_array_equal(unpacked["small"][index], item["small"])
        np.testing.assert_array_equal(unpacked["wide"][index], item["wide"])
    assert unpacked["legal"].dtype == tf.bool and unpacked["action"][0].dtype == tf.int64
    assert unpacked["observation"].shape.as_list() == [7, 3, 4]


def test_round_trip_of_one_item_and_inside_a_compiled_function():
    packer = ArrayPacker(SPEC)
    item = _random_item(np.random.default_rng(1))
    unpacked = tf.function(packer.unpack)(tf.constant(packer.pack(item)))
    np.testing.assert_array_equal(unpacked["observation"], item["observation"])
    np.testing.assert_array_equal(unpacked["wide"], item["wide"])
    assert unpacked["small"].shape.as_list() == []


def test_wrong_structure_or_shape_is_an_error():
    packer = ArrayPacker(SPEC)
    item = _random_item(np.random.default_rng(2))
    item["observation"] = np.zeros((3, 5), np.float32)
    with pytest.raises(ValueError, match=r"expected shape \(3, 4\), got \(3, 5\)"):
        packer.pack(item)
    with pytest.raises(ValueError, match="expected a nest of 7 arrays, got 1"):
        packer.pack(np.zeros(3))
    with pytest.raises(ValueError, match="fixed shapes"):
        ArrayPacker({"x": tf.TensorSpec([None], tf.float32)})


def test_layouts_with_the_same_size_have_different_signatures():
    first = ArrayPacker({"a": tf.TensorSpec([2], tf.float32), "b": tf.TensorSpec([1], tf.int32)})
    swapped = ArrayPacker({"a": tf.TensorSpec([1], tf.int32), "b": tf.TensorSpec([2], tf.float32)})
    assert first.num_bytes == swapped.num_bytes == 12
    assert first.signature() != swapped.signature()
    same = ArrayPacker({"a": tf.TensorSpec([2], tf.float32), "b": tf.TensorSpec([1], tf.int32)})
    assert first.signature() == same.signature()


def test_packing_rows_at_once_gives_each_rows_own_bytes():
    packer = ArrayPacker(SPEC)
    rng = np.random.default_rng(1)
    items = [_random_item(rng) for _ in range(5)]
    rows = tf.nest.map_structure(lambda *leaves: np.stack(leaves), *items)
    np.testing.assert_array_equal(packer.pack_rows(rows),
                                  np.stack([packer.pack(item) for item in items]))
    with pytest.raises(ValueError, match="expected rows of shape"):
        packer.pack_rows({**rows, "wide": rows["wide"][:, :1]})
