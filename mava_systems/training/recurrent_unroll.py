"""A GRU unrolled over time-major sequences as one fused operation: its forward pass and its
gradient each one loop compiled with XLA, only the recurrence stepped.

The input projection of every step is one matrix product over all of them
before the unroll, and each step holds just the hidden-state update (about a
dozen operations). The gradient is written out (backpropagation through time
over the values the forward loop kept) rather than derived by TensorFlow,
whose gradient of a loop cannot cross into an XLA cluster; each loop is a
`tf.while_loop` compiled with XLA (`jit_compile`), on a sequence length known
when the step is traced. On 20-step chunks of 24 rows (recurrent MAPPO's
minibatches) forward and backward ran 2.4 to 3.2 times as many unrolls per
CPU-second as `snt.static_unroll` with TensorFlow's gradient, and 3.5 times the
stored-state recurrence stepped in the graph (`benchmarks.gru_unroll`); they
compile in seconds, where XLA took minutes over the unrolled graph. Unknown lengths, and
`jit_compile=False`, run the same loops in TensorFlow's graph.
"""

from typing import Optional, Tuple

import sonnet as snt
import tensorflow as tf
# Private, as of TensorFlow 2.8: whether a graph being traced is inside an XLA cluster.
from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext

# Compile the unroll's loops with XLA by default (see the module docstring).
JIT_COMPILE = True


def _gru_forward(gates: tf.Tensor, weights: tf.Tensor, initial_state: tf.Tensor,
                 stored: Optional[tf.Tensor], resets: Optional[tf.Tensor],
                 keep: Optional[tf.Tensor]) -> Tuple[tf.Tensor, ...]:
    """The GRU over input gates [T, N, 3H] (each step's input projection plus bias): outputs
    [T, N, H], final state [N, H], and what the gradient needs: each step's entering state,
    update and reset gates [T, N, 2H] and candidate [T, N, H]."""
    hidden = initial_state.shape[-1]
    update_reset_weights, candidate_weights = weights[:, :2 * hidden], weights[:, 2 * hidden:]
    length = tf.shape(gates)[0]

    def step(t, state, arrays):
        if resets is not None:
            state = tf.where(resets[t][:, None], stored[t], state)
        step_gates = gates[t]
        update_reset = tf.sigmoid(step_gates[:, :2 * hidden]
                                  + tf.matmul(state, update_reset_weights))
        update, reset_gate = update_reset[:, :hidden], update_reset[:, hidden:]
        candidate = tf.tanh(step_gates[:, 2 * hidden:]
                            + tf.matmul(reset_gate * state, candidate_weights))
        output = (1 - update) * state + update * candidate  # As snt.GRU computes it.
        values = (output, state, update_reset, candidate)
        arrays = [array.write(t, value) for array, value in zip(arrays, values)]
        new_state = output if keep is None else tf.where(keep[t][:, None], output, state)
        return t + 1, new_state, arrays

    arrays = [tf.TensorArray(gates.dtype, size=length, element_shape=[None, size])
              for size in (hidden, hidden, 2 * hidden, hidden)]
    _, state, arrays = tf.while_loop(lambda t, *_: t < length, step,
                                     (tf.constant(0), initial_state, arrays),
                                     maximum_iterations=length)
    outputs, states, update_reset, candidates = [array.stack() for array in arrays]
    return outputs, state, states, update_reset, candidates


def _gru_backward(output_gradients: tf.Tensor, state_gradient: tf.Tensor, weights: tf.Tensor,
                  states: tf.Tensor, update_reset: tf.Tensor, candidates: tf.Tensor,
                  resets: Optional[tf.Tensor], keep: Optional[tf.Tensor]
                  ) -> Tuple[tf.Tensor, ...]:
    """Backpropagation through `_gru_forward`'s loop: the gradients of its input gates
    [T, N, 3H], weights [H, 3H], initial state [N, H] and stored states [T, N, H] (zeros
    without `resets`) from those of its outputs [T, N, H] and final state [N, H]."""
    hidden = states.shape[-1]
    # Transposed once, outside the loop (each step multiplies by both).
    update_reset_weights = tf.transpose(weights[:, :2 * hidden])
    candidate_weights = tf.transpose(weights[:, 2 * hidden:])
    length = tf.shape(states)[0]

    def step(i, carried, arrays):
        t = length - 1 - i
        state, gates, candidate = states[t], update_reset[t], candidates[t]
        update, reset_gate = gates[:, :hidden], gates[:, hidden:]
        output_gradient = output_gradients[t]
        if keep is None:
            output_gradient += carried
            state_gradient = tf.zeros_like(carried)
        else:
            kept = keep[t][:, None]
            output_gradient += tf.where(kept, carried, 0.0)
            state_gradient = tf.where(kept, 0.0, carried)
        state_gradient += output_gradient * (1 - update)
        candidate_gate_gradient = output_gradient * update * (1 - tf.square(candidate))
        reset_state_gradient = tf.matmul(candidate_gate_gradient, candidate_weights)
        state_gradient += reset_state_gradient * reset_gate
        update_reset_gradient = tf.concat(
            [output_gradient * (candidate - state), reset_state_gradient * state], -1)
        update_reset_gradient *= gates * (1 - gates)
        state_gradient += tf.matmul(update_reset_gradient, update_reset_weights)
        gate_gradient = tf.concat([update_reset_gradient, candidate_gate_gradient], -1)
        arrays[0] = arrays[0].write(t, gate_gradient)
        if resets is not None:
            reset = resets[t][:, None]
            arrays[1] = arrays[1].write(t, tf.where(reset, state_gradient, 0.0))
            state_gradient = tf.where(reset, 0.0, state_gradient)
        return i + 1, state_gradient, arrays

    arrays = [tf.TensorArray(states.dtype, size=length, element_shape=[None, 3 * hidden])]
    if resets is not None:
        arrays.append(tf.TensorArray(states.dtype, size=length, element_shape=[None, hidden]))
    _, initial_gradient, arrays = tf.while_loop(lambda i, *_: i < length, step,
                                                (tf.constant(0), state_gradient, arrays),
                                                maximum_iterations=length)
    gate_gradients = arrays[0].stack()
    stored_gradients = arrays[1].stack() if resets is not None else tf.zeros_like(states)
    # The weights' gradient: one product over every step (the reset-gated state feeds the
    # candidate's weights, the state the update and reset gates').
    rows = tf.reshape(states, [-1, hidden])
    gate_rows = tf.reshape(gate_gradients, [-1, 3 * hidden])
    reset_rows = tf.reshape(update_reset[..., hidden:], [-1, hidden]) * rows
    weight_gradient = tf.concat([tf.matmul(rows, gate_rows[:, :2 * hidden], transpose_a=True),
                                 tf.matmul(reset_rows, gate_rows[:, 2 * hidden:],
                                           transpose_a=True)], -1)
    return gate_gradients, weight_gradient, initial_gradient, stored_gradients


_COMPILED = {jit: (tf.function(_gru_forward, jit_compile=jit),
                   tf.function(_gru_backward, jit_compile=jit)) for jit in (False, True)}


def fused_gru(gates: tf.Tensor, weights: tf.Tensor, initial_state: tf.Tensor,
              stored: Optional[tf.Tensor] = None, resets: Optional[tf.Tensor] = None,
              keep: Optional[tf.Tensor] = None, jit_compile: Optional[bool] = None
              ) -> Tuple[tf.Tensor, tf.Tensor]:
    """The GRU recurrence (as `snt.GRU` steps it) over time-major input gates [T, N, 3H] (each
    step's input times `input_to_hidden`, plus the bias) with `weights` (`hidden_to_hidden`,
    [H, 3H]), from `initial_state` [N, H]: outputs [T, N, H] and the final state [N, H].

    With `resets` [T, N] (bool), the state entering step t is `stored[t]` where `resets[t]`
    is set; with `keep` [T, N] (bool), rows not kept at step t leave their state as it was
    (their outputs are still the GRU's). Differentiable in the gates, weights, initial state
    and stored states. `jit_compile` (default `JIT_COMPILE`) compiles the forward and backward
    loops with XLA when T is known at tracing (inside a function compiled with XLA they are
    part of its compilation).
    """
    if (stored is None) != (resets is None):
        raise ValueError("fused_gru: stored states and resets go together")
    # Inside a step compiled whole with XLA (a trainer's `jit_compile`) the loops join its
    # cluster: XLA-compiled functions nested there crashed recurrent MAPPO's step (a
    # segmentation fault in TensorFlow 2.8).
    jit = ((JIT_COMPILE if jit_compile is None else jit_compile) and gates.shape[0] is not None
           and not GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))
    forward, backward = _COMPILED[jit]
    masks = (resets, keep)

    @tf.custom_gradient
    def unroll(gates, weights, initial_state, *stored_states):
        # Cut from any tape: a loop compiled with XLA cannot hand TensorFlow the values its
        # own gradient would need (`gradient` is the gradient).
        outputs, state, *saved = forward(
            *map(tf.stop_gradient, (gates, weights, initial_state)),
            tf.stop_gradient(stored_states[0]) if stored_states else None, *masks)

        def gradient(output_gradients, state_gradient):
            gate_gradients, weight_gradient, initial_gradient, stored_gradients = backward(
                output_gradients, state_gradient, weights, *saved, *masks)
            return (gate_gradients, weight_gradient, initial_gradient,
                    *([stored_gradients] if stored_states else []))

        return (outputs, state), gradient

    return unroll(gates, weights, initial_state, *([] if stored is None else [stored]))


def input_gates(gru: snt.GRU, inputs: tf.Tensor) -> tf.Tensor:
    """`gru`'s input projection of every step of time-major `inputs` [T, N, I], plus its bias:
    [T, N, 3H] (one matrix product over all the steps)."""
    gates = tf.matmul(tf.reshape(inputs, [-1, inputs.shape[-1]]), gru.input_to_hidden) + gru.b
    return tf.reshape(gates, tf.concat([tf.shape(inputs)[:2], [gates.shape[-1]]], 0))


def gru_unroll(gru: snt.GRU, inputs: tf.Tensor, state: tf.Tensor,
               jit_compile: Optional[bool] = None) -> Tuple[tf.Tensor, tf.Tensor]:
    """`gru`'s outputs [T, N, H] over time-major `inputs` [T, N, I] from `state` [N, H], and
    its final state, as `snt.static_unroll(gru, ...)` gives them (see `fused_gru`)."""
    return fused_gru(input_gates(gru, inputs), gru.hidden_to_hidden, state,
                     jit_compile=jit_compile)


def gru_unroll_from_stored(gru: snt.GRU, inputs: tf.Tensor, stored_states: tf.Tensor,
                           resets: tf.Tensor, present: tf.Tensor,
                           jit_compile: Optional[bool] = None) -> Tuple[tf.Tensor, tf.Tensor]:
    """`gru`'s outputs [T, N, H] over `inputs` [T, N, I], as stepping it T times would give.

    The state at step 0, and at every step whose `resets` [T, N] (bool) is set,
    is the one stored there (`stored_states` [T, N, H]); elsewhere it is the one
    the previous step left, except for rows not `present` [T, N] (bool) whose
    state stays as it was (their outputs are still the GRU's on that step).
    Returns the outputs and the final state [N, H] (see `fused_gru`).
    """
    return fused_gru(input_gates(gru, inputs), gru.hidden_to_hidden, stored_states[0],
                     stored_states, resets, present, jit_compile=jit_compile)
