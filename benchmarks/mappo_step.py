"""MAPPO trainer step benchmark: where a recurrent step's time goes, piece by piece, beside
the feedforward step's on the same batch.

    .venv/bin/python -m benchmarks.mappo_step [--system ippo --repeats 5 --seconds 1 --clock cpu]

Feedforward and recurrent MAPPO (or IPPO with `--system ippo`; each at its config's defaults: 16 sequences of
21 steps, 4 epochs x 2 minibatches; the recurrent ones trained on chunks from
stored states: `recurrent`, the default layout, EPyMARL's GRU agent (one input
layer) with an MLP critic; `recurrent_paper`, the MAPPO paper's rMAPPO layout,
both hidden layers before the GRU and a recurrent critic) on mpe/simple_spread_v3,
each trainer's replay filled by its own random executor. On one batch in memory,
each piece is compiled alone and timed per call in interleaved turns:

  step            the trainer's compiled `train_step` (everything below, once per batch)
  prepare         one network's `prepare`: the critic over every whole sequence, the
                  advantages and value targets (the recurrent one also cuts chunks)
  policy_forward  one minibatch's policy loss (the policy over its sequences or chunks)
  critic_forward  one minibatch's value loss (the critic over them)
  forward_backward  both losses and their gradients (one tape)
  minibatch_step  one minibatch's `minibatch_step`: the gradients and both optimizers' updates

It prints milliseconds per call of each piece for every trainer and the
recurrent ones' ratios to the feedforward one, and each network's multiply-adds per row and step (its weight matrices'
sizes): the arithmetic a row costs whatever the implementation.
"""

import os
import sys
from typing import Any, Callable, Dict

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

PIECES = ("step", "prepare", "policy_forward", "critic_forward", "forward_backward",
          "minibatch_step")
# Each trainer's config beside the defaults.
KINDS = {"feedforward": {},
         "recurrent": {"recurrent": True},
         "recurrent_paper": {"recurrent": True, "rnn_input_layers": None,
                             "recurrent_critic": True}}
RECURRENT = ("recurrent", "recurrent_paper")


def multiply_adds(module: Any) -> int:
    """Multiply-adds per input row of `module`'s matrices (the sizes of its 2-D weights)."""
    return sum(int(variable.shape[0]) * int(variable.shape[1])
               for variable in module.trainable_variables if len(variable.shape) == 2)


def pieces(trainer: Any, sample: Any) -> Dict[str, Callable[[], int]]:
    """Each of `PIECES` of `trainer`'s step on `sample` (its first network's), compiled alone,
    as a timing step of one call."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    key = next(iter(trainer.networks.policies))
    steps = sample.data
    fresh = tf.ones(tf.shape(steps.reward[key])[:1], tf.bool)
    prepare = tf.function(lambda steps: trainer.prepare(key, steps, fresh))
    batch = prepare(steps)
    size = trainer.config.batch_size // trainer.config.num_minibatches
    leading = batch["is_transition"].shape[0] * size // trainer.config.batch_size
    minibatch = tf.nest.map_structure(lambda value: value[:leading], batch)
    variables = (trainer.networks.policies[key].trainable_variables
                 + trainer.networks.critics[key].trainable_variables)

    def forward_backward(minibatch):
        with tf.GradientTape() as tape:
            loss = (trainer.policy_loss(key, minibatch)[0]
                    + trainer.value_loss(key, minibatch)[0])
        return tape.gradient(loss, variables)

    functions = {
        "step": lambda: trainer.compiled_train_step(sample),
        "prepare": lambda: prepare(steps),
        "policy_forward": tf.function(lambda: trainer.policy_loss(key, minibatch)[0]),
        "critic_forward": tf.function(lambda: trainer.value_loss(key, minibatch)[0]),
        "forward_backward": lambda function=tf.function(forward_backward): function(minibatch),
        "minibatch_step": tf.function(lambda: trainer.minibatch_step(key, minibatch))}
    return {name: common.one_call(function) for name, function in functions.items()}


def main() -> None:
    from benchmarks.trainer import fill_replay, in_memory_batch  # pylint: disable=import-outside-toplevel

    parser = common.make_parser("mappo_step", __doc__.split("\n\n")[0], seconds=1.0, repeats=5,
                                warmup=0.3, seconds_help="seconds timed per piece and repeat",
                                in_process=True)
    parser.add_argument("--fill_steps", type=int, default=2_000,
                        help="joint environment steps written to each replay (default 2000)")
    parser.add_argument("--system", choices=("mappo", "ippo"), default="mappo",
                        help="mappo (a centralised critic, default) or ippo (decentralised)")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    common.prepare_in_process(args.tf_threads)

    systems = {kind: common.local_madqn("mappo_step", args.system, keep_items=True, seed=args.seed,
                                        **config) for kind, config in KINDS.items()}
    variants: Dict[str, Callable[[], int]] = {}
    work: Dict[str, Dict[str, int]] = {}
    state = []
    try:
        for kind, (system, _, client) in systems.items():
            fill_replay(system, client, args.fill_steps, args.seed)
            builder = system.builder
            dataset = builder.make_dataset_iterator(client)
            trainer = builder.make_trainer(builder.make_networks(), dataset,
                                           replay_client=client, checkpoint=False)
            sample = in_memory_batch(builder, dataset)
            state.append((trainer, dataset))
            key = next(iter(trainer.networks.policies))
            work[kind] = {"policy": multiply_adds(trainer.networks.policies[key]),
                          "critic": multiply_adds(trainer.networks.critics[key])}
            variants.update({f"{kind}/{name}": step
                             for name, step in pieces(trainer, sample).items()})
            common.progress(f"{kind}: pieces compiled")
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                           args.clock)
        variants.clear()
    finally:
        state.clear()
        common.stop_local(systems.values())

    medians = {name: common.median(values) for name, values in rates.items()}
    milliseconds = {name: None if not rate else 1000.0 / rate for name, rate in medians.items()}
    rows = [(name, common.fmt(milliseconds[f"feedforward/{name}"], 2),
             *[common.fmt(value, 2) for kind in RECURRENT for value in (
                 milliseconds[f"{kind}/{name}"],
                 common.ratio(milliseconds[f"{kind}/{name}"],
                              milliseconds[f"feedforward/{name}"]))])
            for name in PIECES]
    common.print_table(
        f"{args.system.upper()} trainer step in pieces: ms per call (median of {args.repeats} x "
        f"{args.seconds:g} s, {args.clock} clock)",
        ["piece", "feedforward ms", *[label for kind in RECURRENT
                                      for label in (f"{kind} ms", f"{kind} / feedforward")]],
        rows)
    total = {kind: sum(work[kind].values()) for kind in KINDS}
    common.print_table(
        "Multiply-adds per row and step (weight matrices)",
        ["network", "feedforward", *[label for kind in RECURRENT
                                     for label in (kind, f"{kind} / feedforward")]],
        [(role, work["feedforward"][role],
          *[value for kind in RECURRENT for value in (
              work[kind][role], common.fmt(work[kind][role] / work["feedforward"][role], 2))])
         for role in ("policy", "critic")]
        + [("both", total["feedforward"],
            *[value for kind in RECURRENT for value in (
                total[kind], common.fmt(total[kind] / total["feedforward"], 2))])])
    step_ratios = {kind: common.ratio(medians[f"{kind}/step"], medians["feedforward/step"])
                   for kind in RECURRENT}
    for kind, step_ratio in step_ratios.items():
        arithmetic = (None if step_ratio is None
                      else step_ratio * total[kind] / total["feedforward"])
        print(f"{kind} over feedforward trainer steps per second: {common.fmt(step_ratio, 3)} "
              f"(target >= 0.5); arithmetic per second, {kind} over feedforward: "
              f"{common.fmt(arithmetic, 2)}")
    common.emit(args, {"milliseconds": milliseconds, "multiply_adds": work,
                       "step_ratio": step_ratios,
                       "runs": {name: values for name, values in rates.items()}},
                {"benchmark": "mappo_step", "system": args.system, "env": common.ENV_NAME, "unit": "ms per call"})


if __name__ == "__main__":
    main()
