"""The fused GRU unroll (`components.recurrent_unroll`) against stepping `snt.GRU`: outputs,
final state and every gradient, with XLA and in TensorFlow's graph."""

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from mava_systems.training.recurrent_unroll import gru_unroll, gru_unroll_from_stored

T, N, I, H = 6, 5, 3, 4


def stepped_from_stored(gru, inputs, stored, resets, present):
    """The reference: `gru` stepped one step at a time in Python, as executors step it."""
    state, outputs = stored[0], []
    for t in range(inputs.shape[0]):
        state = tf.where(resets[t][:, None], stored[t], state)
        output, new_state = gru(inputs[t], state)
        state = tf.where(present[t][:, None], new_state, state)
        outputs.append(output)
    return tf.stack(outputs), state


def data(seed):
    rng = np.random.default_rng(seed)
    inputs = tf.constant(rng.normal(size=(T, N, I)), tf.float32)
    stored = tf.constant(rng.normal(size=(T, N, H)), tf.float32)
    resets = tf.constant(rng.random((T, N)) < 0.3)
    present = tf.constant(rng.random((T, N)) < 0.7)
    return inputs, stored, resets, present


def outputs_and_gradients(unroll, gru, inputs, stored, resets, present):
    """The unroll's outputs and final state, and the gradients of a loss weighing both
    differently at every entry, in its inputs, stored states and the GRU's variables."""
    weights = tf.random.stateless_normal([T, N, H], seed=[5, 6])
    with tf.GradientTape() as tape:
        tape.watch([inputs, stored])
        outputs, state = unroll(gru, inputs, stored, resets, present)
        loss = tf.reduce_sum(weights * outputs) + tf.reduce_sum(tf.square(state))
    gradients = tape.gradient(loss, [inputs, stored] + list(gru.trainable_variables))
    return [outputs, state] + gradients


@pytest.mark.parametrize("jit_compile", [True, False], ids=["xla", "graph"])
@pytest.mark.parametrize("known_length", [True, False], ids=["known_T", "unknown_T"])
def test_fused_unroll_from_stored_equals_stepping_the_gru(jit_compile, known_length):
    gru = snt.GRU(H)
    inputs, stored, resets, present = data(seed=1)
    assert resets.numpy()[1:].any() and not present.numpy().all()

    def fused(gru, inputs, stored, resets, present):
        return gru_unroll_from_stored(gru, inputs, stored, resets, present,
                                      jit_compile=jit_compile)

    expected = outputs_and_gradients(stepped_from_stored, gru, inputs, stored, resets, present)
    length = T if known_length else None
    traced = tf.function(
        lambda *args: outputs_and_gradients(fused, gru, *args),
        input_signature=[tf.TensorSpec([length, N, I]), tf.TensorSpec([length, N, H]),
                         tf.TensorSpec([length, N], tf.bool), tf.TensorSpec([length, N], tf.bool)])
    got = traced(inputs, stored, resets, present)
    assert len(got) == 2 + 2 + len(gru.trainable_variables)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, atol=1e-5)


def test_fused_unroll_inside_a_step_compiled_with_xla_equals_stepping_the_gru():
    # A trainer's `jit_compile` step: the unroll's loops are compiled as part of it.
    gru = snt.GRU(H)
    args = data(seed=3)
    expected = outputs_and_gradients(stepped_from_stored, gru, *args)
    got = tf.function(lambda *args: outputs_and_gradients(gru_unroll_from_stored, gru, *args),
                      jit_compile=True)(*args)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, atol=1e-5)


def test_fused_unroll_from_a_state_equals_static_unroll_and_its_gradients():
    gru = snt.GRU(H)
    inputs, stored, _, _ = data(seed=2)
    state = stored[0]

    def gradients(unroll):
        with tf.GradientTape() as tape:
            tape.watch([inputs, state])
            outputs, final = unroll(gru, inputs, state)
            loss = tf.reduce_sum(tf.sin(outputs)) + tf.reduce_sum(final)
        return [outputs, final] + tape.gradient(loss, [inputs, state]
                                                + list(gru.trainable_variables))

    expected = gradients(snt.static_unroll)
    for value, reference in zip(tf.function(lambda: gradients(gru_unroll))(), expected):
        np.testing.assert_allclose(value, reference, atol=1e-5)
