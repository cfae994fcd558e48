"""GRU unroll benchmark: one forward and backward pass of a GRU over a chunk, per unroll.

    .venv/bin/python -m benchmarks.gru_unroll [--length 20 --rows 24 --clock cpu]

At recurrent MAPPO's minibatch by default (8 sequences x 3 agents = 24 rows, 20
steps, 64 inputs, a GRU of 64 units, the loss a linear head's squared output
plus the final state's mean), each variant computes the same values and gradients:

  static_unroll       `snt.static_unroll`: the GRU stepped in the graph, TensorFlow's
                      gradient (recurrent QMIX's unroll before issue 48)
  dynamic_unroll      `snt.dynamic_unroll`: a `tf.while_loop`, TensorFlow's gradient
  fused_graph         `recurrent_unroll.gru_unroll` (input projection batched, forward and
                      backward loops written out) in TensorFlow's graph (`jit_compile=False`)
  fused_xla           the same, each loop compiled with XLA (the default)
  fused_xla_step      the same inside a step compiled whole with XLA (a trainer's jit_compile)
  stepped_from_stored from stored states with resets and presence masks (recurrent MAPPO's
                      chunks): only the GRU's hidden update stepped in the graph, TensorFlow's
                      gradient (recurrent MAPPO's unroll before the fused loop)
  fused_from_stored   the same values by `recurrent_unroll.gru_unroll_from_stored` (XLA)

Rates are unrolls (forward and backward) per second, in interleaved turns, with
each variant's speed-up over its reference (static_unroll, or
stepped_from_stored for the stored-state pair); each variant's first call
(tracing, XLA's compile) is timed too.
"""

import os
import sys
import time
from typing import Callable, Dict, Tuple

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

# Each variant's reference in the speed-up column.
REFERENCES = {"static_unroll": "static_unroll", "dynamic_unroll": "static_unroll",
              "fused_graph": "static_unroll", "fused_xla": "static_unroll",
              "fused_xla_step": "static_unroll", "stepped_from_stored": "stepped_from_stored",
              "fused_from_stored": "stepped_from_stored"}


def stepped_from_stored(gru, inputs, stored, resets, present) -> Tuple[object, object]:
    """`gru_unroll_from_stored`'s values with only the GRU's hidden update stepped in the graph
    (the input projection batched), differentiated by TensorFlow."""
    import tensorflow as tf

    from mava_systems.training.recurrent_unroll import input_gates

    hidden = stored.shape[-1]
    weights = gru.hidden_to_hidden
    state, outputs = stored[0], []
    for t, gates in enumerate(tf.unstack(input_gates(gru, inputs))):
        state = tf.where(resets[t][:, None], stored[t], state)
        update_reset = tf.sigmoid(gates[:, :2 * hidden]
                                  + tf.matmul(state, weights[:, :2 * hidden]))
        update, reset_gate = update_reset[:, :hidden], update_reset[:, hidden:]
        candidate = tf.tanh(gates[:, 2 * hidden:]
                            + tf.matmul(reset_gate * state, weights[:, 2 * hidden:]))
        output = (1 - update) * state + update * candidate
        state = tf.where(present[t][:, None], output, state)
        outputs.append(output)
    return tf.stack(outputs), state


def make_variants(length: int, rows: int, inputs_size: int, hidden: int, reset_rate: float
                  ) -> Dict[str, Callable[[], object]]:
    """Each variant's step: one forward and backward pass over the same chunk."""
    import numpy as np
    import sonnet as snt
    import tensorflow as tf

    from mava_systems.training.recurrent_unroll import gru_unroll, gru_unroll_from_stored

    tf.get_logger().setLevel("ERROR")  # Not the retracing warning of seven steps alike.
    gru, head = snt.GRU(hidden), snt.Linear(5)
    head(gru(tf.zeros([1, inputs_size]), gru.initial_state(1))[0])
    variables = list(gru.trainable_variables) + list(head.trainable_variables)
    rng = np.random.default_rng(0)
    inputs = tf.constant(rng.normal(size=(length, rows, inputs_size)), tf.float32)
    stored = tf.constant(rng.normal(size=(length, rows, hidden)), tf.float32)
    resets = tf.constant(rng.random((length, rows)) < reset_rate)
    present = tf.constant(rng.random((length, rows)) >= reset_rate)

    def make(unroll: Callable, jit_compile: bool = False) -> Callable[[], object]:
        def step(inputs):
            with tf.GradientTape() as tape:
                outputs, final = unroll(inputs)
                loss = (tf.reduce_mean(tf.square(head(tf.reshape(outputs, [-1, hidden]))))
                        + tf.reduce_mean(final))
            return tape.gradient(loss, variables)
        compiled = tf.function(step, jit_compile=jit_compile)
        return lambda: compiled(inputs)

    def from_state(unroll: Callable) -> Callable:
        return lambda inputs: unroll(gru, inputs, stored[0])

    def from_stored(unroll: Callable) -> Callable:
        return lambda inputs: unroll(gru, inputs, stored, resets, present)

    return {"static_unroll": make(from_state(snt.static_unroll)),
            "dynamic_unroll": make(from_state(snt.dynamic_unroll)),
            "fused_graph": make(from_state(
                lambda *args: gru_unroll(*args, jit_compile=False))),
            "fused_xla": make(from_state(gru_unroll)),
            "fused_xla_step": make(from_state(gru_unroll), jit_compile=True),
            "stepped_from_stored": make(from_stored(stepped_from_stored)),
            "fused_from_stored": make(from_stored(gru_unroll_from_stored))}


def main() -> None:
    parser = common.make_parser("gru_unroll", __doc__.split("\n\n")[0], seconds=0.5, repeats=7,
                                warmup=0.2, seconds_help="seconds timed per variant and repeat",
                                in_process=True)
    parser.add_argument("--length", type=int, default=20, help="steps per chunk (default 20)")
    parser.add_argument("--rows", type=int, default=24,
                        help="chunks (sequences x agents) per unroll (default 24)")
    parser.add_argument("--inputs", type=int, default=64, help="input size (default 64)")
    parser.add_argument("--hidden", type=int, default=64, help="GRU units (default 64)")
    parser.add_argument("--reset_rate", type=float, default=0.05,
                        help="share of steps (and rows) whose state is reset to the stored one "
                             "(and absent rows) in the stored-state pair (default 0.05)")
    args = common.check_args(parser.parse_args())
    for name in ("length", "rows", "inputs", "hidden"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not 0.0 <= args.reset_rate <= 1.0:
        parser.error(f"--reset_rate must be within [0, 1], got {args.reset_rate}")
    common.prepare_in_process(args.tf_threads)
    variants = make_variants(args.length, args.rows, args.inputs, args.hidden, args.reset_rate)
    first_call_s = {}
    for name, step in variants.items():
        start = time.perf_counter()
        step()
        first_call_s[name] = time.perf_counter() - start
        common.progress(f"{name}: first call (tracing, compiling) {first_call_s[name]:.1f} s")
    counted = {name: common.one_call(step) for name, step in variants.items()}
    rates = common.measure_interleaved(counted, args.repeats, args.seconds, args.warmup,
                                       args.clock)
    medians = {name: common.median(values) for name, values in rates.items()}
    speed_ups = {name: common.ratio(rate, medians[REFERENCES[name]])
                 for name, rate in medians.items()}
    common.print_table(
        f"GRU unroll, forward and backward: {args.length} steps x {args.rows} rows, "
        f"{args.inputs} inputs, {args.hidden} units (median of {args.repeats} x "
        f"{args.seconds:g} s, per {args.clock} second)",
        ["variant", "unrolls/s", "ms each", "speed-up over its reference", "reference",
         "first call s"],
        [(name, common.fmt(rate), common.fmt(1e3 / rate if rate else None, 2),
          common.fmt(speed_ups[name], 2), REFERENCES[name], common.fmt(first_call_s[name], 1))
         for name, rate in medians.items()])
    common.emit(args, {"unrolls_per_s": medians, "speed_up": speed_ups,
                       "first_call_s": first_call_s, "runs": rates}, {
        "benchmark": "gru_unroll", "length": args.length, "rows": args.rows,
        "inputs": args.inputs, "hidden": args.hidden, "reset_rate": args.reset_rate,
        "unit": "unrolls/s"})


if __name__ == "__main__":
    main()
