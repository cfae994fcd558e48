"""ConcatenatedAdam: Sonnet's Adam update, exactly, in a few operations over all variables."""

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from mava_systems.training.optimizers import ConcatenatedAdam


def make_variables(rng):
    return [tf.Variable(rng.normal(size=shape).astype(np.float32))
            for shape in [(5, 3), (3,), (), (2, 2, 4)]]


def test_its_updates_and_slots_equal_sonnets_adam_element_by_element():
    rng = np.random.default_rng(0)
    sonnet_variables, concatenated_variables = make_variables(rng), make_variables(rng)
    for sonnet_variable, concatenated_variable in zip(sonnet_variables, concatenated_variables):
        concatenated_variable.assign(sonnet_variable)
    initial = [variable.numpy() for variable in sonnet_variables]
    sonnet_adam, concatenated_adam = snt.optimizers.Adam(1e-2), ConcatenatedAdam(1e-2)
    apply_concatenated = tf.function(concatenated_adam.apply)
    for _ in range(5):
        updates = [tf.constant(rng.normal(size=v.shape).astype(np.float32))
                   for v in sonnet_variables]
        sonnet_adam.apply(updates, sonnet_variables)
        apply_concatenated(updates, concatenated_variables)
    assert int(concatenated_adam.step.numpy()) == 5
    for expected, actual in zip(sonnet_variables + sonnet_adam.m + sonnet_adam.v,
                                concatenated_variables + concatenated_adam.m + concatenated_adam.v):
        assert actual.shape == expected.shape
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    # Both moved every variable: the comparison is not between two unchanged copies.
    for before, variable in zip(initial, concatenated_variables):
        assert np.abs(variable.numpy() - before).min() > 0


def test_a_missing_update_is_an_error():
    variables = make_variables(np.random.default_rng(1))
    with pytest.raises(ValueError, match="dense updates"):
        ConcatenatedAdam(1e-3).apply([None] * len(variables), variables)
    with pytest.raises(ValueError, match="one update per parameter"):
        ConcatenatedAdam(1e-3).apply([], variables)
