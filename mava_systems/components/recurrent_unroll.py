"""A GRU unrolled over time-major sequences as one graph loop, from states stored along them.

Only the recurrence is stepped: the input projection of every step is one
matrix product over all of them before the loop, and the loop body holds just
the hidden-state update (a `tf.while_loop`, so the graph, its tracing and its
gradient stay the same size for any length, and XLA compiles it as one loop
when the step is compiled with `jit_compile`).
"""

from typing import Tuple

import sonnet as snt
import tensorflow as tf


def gru_unroll_from_stored(gru: snt.GRU, inputs: tf.Tensor, stored_states: tf.Tensor,
                           resets: tf.Tensor, present: tf.Tensor
                           ) -> Tuple[tf.Tensor, tf.Tensor]:
    """`gru`'s outputs [T, N, H] over `inputs` [T, N, I], as stepping it T times would give.

    The state at step 0, and at every step whose `resets` [T, N] (bool) is set,
    is the one stored there (`stored_states` [T, N, H]); elsewhere it is the one
    the previous step left, except for rows not `present` [T, N] (bool) whose
    state stays as it was (their outputs are still the GRU's on that step).
    Returns the outputs and the final state [N, H].
    """
    length = inputs.shape[0]
    if length is None:
        length = tf.shape(inputs)[0]
    hidden = stored_states.shape[-1]
    input_gates = tf.matmul(tf.reshape(inputs, [-1, inputs.shape[-1]]), gru.input_to_hidden)
    input_gates = tf.reshape(input_gates + gru.b, tf.concat([tf.shape(inputs)[:2], [3 * hidden]], 0))
    weights = gru.hidden_to_hidden
    update_reset_weights, candidate_weights = weights[:, :2 * hidden], weights[:, 2 * hidden:]
    resets, present = resets[..., None], present[..., None]
    outputs = tf.TensorArray(inputs.dtype, size=length, element_shape=stored_states.shape[1:])

    def step(t, state, outputs):
        state = tf.where(resets[t], stored_states[t], state)
        gates = input_gates[t]
        update_reset = tf.sigmoid(gates[:, :2 * hidden] + tf.matmul(state, update_reset_weights))
        update, reset = update_reset[:, :hidden], update_reset[:, hidden:]
        candidate = tf.tanh(gates[:, 2 * hidden:] + tf.matmul(reset * state, candidate_weights))
        new_state = (1 - update) * state + update * candidate  # As snt.GRU computes it.
        return t + 1, tf.where(present[t], new_state, state), outputs.write(t, new_state)

    # `maximum_iterations` bounds the loop for XLA (its gradient keeps every step's values).
    _, state, outputs = tf.while_loop(lambda t, *_: t < length, step,
                                      (tf.constant(0), stored_states[0], outputs),
                                      maximum_iterations=length)
    return outputs.stack(), state
