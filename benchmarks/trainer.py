"""Trainer benchmark: MADQN trainer steps per second at batch 256 against the bare compiled step.

    .venv/bin/python -m benchmarks.trainer [--repeats 9 --seconds 3]
    .venv/bin/python -m benchmarks.trainer --systems mappo,maddpg,mad4pg --clock cpu

A Reverb server in this process is filled by a random executor on
mpe/simple_spread_v3 (no rate limit: samples_per_insert=None), then:

  bare_step        the trainer's compiled `train_step` (double Q-learning, Adam, target update)
                   on one batch already in memory, unpacked: the limit
  trainer          `trainer.step()`: a batch from Reverb through the dataset pipeline
                   (builder.make_dataset_iterator), drawn inside the compiled step, counting
                   (`--steps_per_call` K: K batches per call, rates in trainer steps)
  trainer_logging  (diagnostic) the same with the trainer node's logger (CSV, TensorBoard;
                   a row at most once a second)
  dataset          (diagnostic) batches/s the dataset pipeline alone delivers (to Python)
  trainer_<system> `trainer.step()` of the systems named by `--systems` (default VDN and
                   QMIX; any registered system, e.g. mappo, maddpg, mad4pg), each at its own
                   default batch (`--batch_size` sets those batching transitions) from its own
                   replay, filled the same way by the system's own executor and adder
                   (MADDPG and MAD4PG on simple_spread with continuous actions); also as a
                   ratio of MADQN's trainer
  bare_step_<system>  (diagnostic) that system's bare step, as bare_step
  trainer_recurrent_<system>  with `--recurrent` (e.g. madqn,qmix,mappo): that system's trainer with
                   config recurrent=True (the reference GRU agent on stored sequences, or
                   MAPPO's GRU policy and critic on chunks), at its default batch of
                   sequences (`sequence_batch_size`, MAPPO's `batch_size`); with its bare step too
  <variant>_xla    with `--jit_compile`: each trainer variant above (bare step and trainer.step(),
                   MADQN's and every system's) again, with a trainer of config jit_compile=True
                   (its step compiled with XLA) on the same replay, timed in the same
                   interleaved turns; a table gives XLA's ratio and each first step's seconds

A second table says what one step of each system's trainer is, and the
minibatch updates (gradient steps) and environment steps sampled per second
that makes: a MAPPO step is `num_epochs` x `num_minibatches` updates on a batch
of sequences. A queue (MAPPO's) would be drained within seconds: here it is
served as a table of the same signature whose items stay (uniform sampling; see
`common.keeping_items`), filled by MAPPO's executor and sequence adder.

Variants take turns in short runs (9 x 3 s by default): this machine's speed
drifts by 20% over seconds, and short turns spread that over every variant.
"""

import contextlib
import gc
import os
import sys
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

VARIANTS = {
    "bare_step": "compiled step on an in-memory batch (limit)",
    "trainer": "trainer.step() from Reverb",
    "trainer_logging": "    trainer.step() + node logger (CSV, TensorBoard)",
    "dataset": "    dataset pipeline alone (batches/s)",
}
DIAGNOSTIC = ("trainer_logging", "dataset")
SYSTEM_VARIANT = "trainer_{}"
SYSTEM_BARE_VARIANT = "bare_step_{}"
RECURRENT_NAME = "recurrent_{}"
# Systems with a trainer target against MADQN's (issue 12: at least 70% of its steps/s).
RATIO_TARGET_SYSTEMS = ("vdn", "qmix")
XLA_SUFFIX = "_xla"


def fill_replay(system: Any, client: Any, steps: int, seed: int) -> int:
    """Writes at least `steps` joint steps of random play (and `min_replay_size` items) to
    replay through the system's adder; returns the replay's size."""
    from mava_systems.acting.environment_loop import EnvironmentLoop

    builder = system.builder
    adder = builder.make_adder(client)
    executor = common.acting_executor(system, 1.0, adder=adder, seed=seed)
    loop = EnvironmentLoop(system.environment_factory(evaluation=False, seed=seed), executor)
    # Enough items for a batch too: a queue's items are sequences of many steps.
    items = max(getattr(system.config, "min_replay_size", 0), system.config.batch_size)
    if is_recurrent(system.config):  # Replay sizes count steps, held in sequences.
        items = max(builder.replay_size_in_items(system.config.min_replay_size),
                    builder.batch_size)
    played = 0
    while played < steps or replay_size(client) < items:
        played += loop.run_episode()["episode_length"]
    del loop, executor, adder
    gc.collect()  # Closes the writer's stream.
    return replay_size(client)


def replay_size(client: Any) -> int:
    """The items in every table of a Reverb server."""
    return sum(info.current_size for info in client.server_info().values())


def is_recurrent(config: Any) -> bool:
    """Whether a MADQN-family config has its recurrent switch on (it trains on stored
    sequences instead of transitions; MAPPO's trains on sequences either way)."""
    return bool(getattr(config, "recurrent", False)) and hasattr(config, "sequence_batch_size")


def system_config_kwargs(system_name: str, config_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Those of the benchmark's config arguments that system `system_name`'s config has;
    systems training only on sequences (MAPPO's) keep their own batch size (of sequences)."""
    fields = common.config_fields(system_name)
    kwargs = {name: value for name, value in config_kwargs.items() if name in fields}
    if "sequence_length" in fields and "sequence_batch_size" not in fields:
        kwargs.pop("batch_size", None)
    return kwargs


def step_work(config: Any) -> Tuple[int, int, str]:
    """What one trainer step of a system with `config` does: its minibatch updates (gradient
    steps, each of every network its loss covers), the environment steps it samples, and
    both in words."""
    batch_size = config.batch_size
    if hasattr(config, "num_epochs"):  # PPO: epochs over minibatches of one batch.
        steps = config.sequence_length - 1  # A sequence's last step only bootstraps.
        updates = config.num_epochs * config.num_minibatches
        return updates, batch_size * steps, (
            f"{config.num_epochs} epochs x {config.num_minibatches} minibatches of "
            f"{batch_size // config.num_minibatches} sequences of {steps} steps (+1 bootstrap)")
    if is_recurrent(config):
        batch, steps = config.sequence_batch_size, config.sequence_length - 1
        return 1, batch * steps, (f"1 update on {batch} sequences of {steps} steps (the first "
                                  f"{config.burn_in_length} a burn-in unless an episode starts)")
    if hasattr(config, "sequence_length") and not hasattr(config, "sequence_batch_size"):
        steps = config.sequence_length - 1
        return 1, batch_size * steps, f"1 update on {batch_size} sequences of {steps} steps"
    return 1, batch_size, f"1 update on {batch_size} {config.n_step}-step transitions"


def in_memory_batch(builder: Any, dataset: Any) -> Any:
    """A batch the dataset pipeline gives, unpacked as the trainer unpacks it: the input of
    the trainer's compiled `train_step`."""
    sample = next(dataset)
    unpack = builder.unpack_replay_items()
    return sample if unpack is None else sample._replace(data=unpack(sample.data))


@contextlib.contextmanager
def jit_compiled(config: Any, jit_compile: bool) -> Any:
    """Within: `config.jit_compile` (what the builder's next trainer compiles with) is
    `jit_compile`."""
    saved = config.jit_compile
    config.jit_compile = jit_compile
    try:
        yield
    finally:
        config.jit_compile = saved


def make_trainer(system: Any, client: Any, jit_compile: bool, label: str
                 ) -> Tuple[Any, Any, float]:
    """`system`'s trainer (compiled with XLA with `jit_compile`) reading from `client`'s
    replay, after its first (tracing, and compiling) step; a batch for its bare step
    (`in_memory_batch`) and the seconds that first step took."""
    builder = system.builder
    dataset = builder.make_dataset_iterator(client)
    with jit_compiled(system.config, jit_compile):
        trainer = builder.make_trainer(builder.make_networks(), dataset, replay_client=client,
                                       checkpoint=False)
    start = time.perf_counter()
    trainer.step()
    first_step_s = time.perf_counter() - start
    sample = in_memory_batch(builder, dataset)
    start = time.perf_counter()
    trainer.compiled_train_step(sample)  # The bare step's own first call traces it again.
    first_step_s = max(first_step_s, time.perf_counter() - start)
    common.progress(f"{label}{' (XLA)' if jit_compile else ''}: first trainer step (tracing"
                    f"{', XLA compiling' if jit_compile else ''}) took {first_step_s:.1f} s")
    return trainer, sample, first_step_s


def add_trainer_variants(variants: Dict[str, Callable[[], int]], first_steps: Dict[str, float],
                         state: Dict[str, Any], system: Any, client: Any, jit_modes: Tuple[bool, ...],
                         trainer_name: str, bare_name: str) -> None:
    """Adds `system`'s trainer.step() and bare step as variants `trainer_name` and `bare_name`,
    once per jit_compile setting in `jit_modes` (XLA's names end in `XLA_SUFFIX`)."""
    for jit_compile in jit_modes:
        suffix = XLA_SUFFIX if jit_compile else ""
        trainer, sample, first_step_s = make_trainer(system, client, jit_compile,
                                                     trainer_name + suffix)
        state[trainer_name + suffix] = trainer
        first_steps[trainer_name + suffix] = first_step_s
        variants[trainer_name + suffix] = counted(trainer.step, trainer.steps_per_call)
        variants[bare_name + suffix] = counted(
            lambda trainer=trainer, sample=sample: trainer.compiled_train_step(sample))


def counted(function: Callable[[], Any], units: int = 1) -> Callable[[], int]:
    """`function` as a timing step of `units` units (e.g. a trainer's steps per call)."""
    def step() -> int:
        function()
        return units
    return step


def main() -> None:
    parser = common.make_parser(
        "trainer", __doc__.split("\n\n")[0], seconds=3.0, repeats=9, warmup=1.0,
        seconds_help="seconds timed per variant and repeat", in_process=True)
    parser.add_argument("--batch_size", type=int, default=None,
                        help="transitions per batch of MADQN and of the systems batching "
                             "transitions (default: each system's own, 256 for MADQN)")
    parser.add_argument("--dataset_parallel_calls", type=int, default=None,
                        help="Reverb sampling streams (default: MADQNConfig's)")
    parser.add_argument("--fill_steps", type=int, default=5_000,
                        help="joint environment steps written to replay before timing "
                             "(default 5000)")
    parser.add_argument("--steps_per_call", type=int, default=1,
                        help="trainer steps per compiled call (trainer_steps_per_call; default "
                             "1); rates count trainer steps")
    parser.add_argument("--prioritized_replay", action="store_true",
                        help="prioritised replay: trainer.step() also sends priority updates")
    parser.add_argument("--no_diagnostics", action="store_true",
                        help=f"skip the diagnostic variants {', '.join(DIAGNOSTIC)}")
    parser.add_argument("--systems", default="vdn,qmix",
                        help="registered systems whose trainer is timed beside MADQN's "
                             "(comma-separated, e.g. vdn,qmix,mappo,maddpg,mad4pg; empty: none)")
    parser.add_argument("--recurrent", default="",
                        help="systems (of madqn, vdn, qmix, mappo, ippo) whose recurrent trainer is timed "
                             "too, at its default batch of sequences (comma-separated)")
    parser.add_argument("--jit_compile", action="store_true",
                        help="also time every trainer compiled with XLA (config jit_compile=True), "
                             "in the same interleaved turns; a table gives XLA's ratios and "
                             "first-step (compile) times")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    common.prepare_in_process(args.tf_threads)

    config_kwargs = dict(
        prioritized_replay=args.prioritized_replay, seed=args.seed,
        trainer_steps_per_call=args.steps_per_call,
        **({} if args.batch_size is None else {"batch_size": args.batch_size}),
        **({} if args.dataset_parallel_calls is None else
           {"dataset_parallel_calls": args.dataset_parallel_calls}))
    system, server, client = common.local_madqn("trainer", **config_kwargs)
    config, builder = system.config, system.builder
    other_systems = {name: common.local_madqn("trainer", name, keep_items=True,
                                              **system_config_kwargs(name, config_kwargs))
                     for name in common.system_names(args.systems)}
    for name in common.system_names(args.recurrent):
        kwargs = system_config_kwargs(name, config_kwargs)
        kwargs.pop("batch_size", None)  # Its own batch: `sequence_batch_size` sequences.
        other_systems[RECURRENT_NAME.format(name)] = common.local_madqn(
            "trainer", name, keep_items=True, recurrent=True, **kwargs)
    state: Dict[str, Any] = {}
    first_steps: Dict[str, float] = {}
    jit_modes = (False, True) if args.jit_compile else (False,)
    try:
        # Fill replay with a random executor.
        start = time.perf_counter()
        replay_items = fill_replay(system, client, args.fill_steps, args.seed)
        common.progress(f"replay filled with {replay_items:,} items in "
                        f"{time.perf_counter() - start:.1f} s")

        variants: Dict[str, Callable[[], int]] = {}
        add_trainer_variants(variants, first_steps, state, system, client, jit_modes,
                             "trainer", "bare_step")
        if not args.no_diagnostics:
            networks = builder.make_networks()
            dataset = builder.make_dataset_iterator(client)
            state["dataset"] = dataset
            logged = builder.make_trainer(
                networks, dataset, replay_client=client, checkpoint=False,
                logger=system.trainer_logger())
            state["logged"] = logged
            start = time.perf_counter()
            logged.step()
            common.progress(f"first step of the logging trainer took "
                            f"{time.perf_counter() - start:.1f} s")
            variants["trainer_logging"] = counted(logged.step, logged.steps_per_call)
            variants["dataset"] = counted(lambda: next(dataset))
        for name, (other, _, other_client) in other_systems.items():
            items = fill_replay(other, other_client, args.fill_steps, args.seed)
            common.progress(f"{name}: {items:,} items in replay")
            add_trainer_variants(variants, first_steps, state, other, other_client, jit_modes,
                                 SYSTEM_VARIANT.format(name), SYSTEM_BARE_VARIANT.format(name))

        common.progress(f"timing {len(variants)} variants x {args.repeats} repeats x "
                        f"{args.seconds:g} s (+{args.warmup:g} s warm-up each)")
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                             args.clock)
        variants.clear()
    finally:
        state.clear()
        gc.collect()  # Frees the datasets' streams while the server is still up.
        common.stop_local([(system, server, client), *other_systems.values()])

    medians = {name: common.median(values) for name, values in rates.items()}
    bare = medians["bare_step"]
    labels = dict(VARIANTS)
    for name in other_systems:
        labels[SYSTEM_VARIANT.format(name)] = f"{name.upper()}'s trainer.step()"
        labels[SYSTEM_BARE_VARIANT.format(name)] = f"    {name.upper()}'s compiled step, in memory"
    labels.update({name + XLA_SUFFIX: f"{label} (XLA)" for name, label in labels.items()})
    rows = [(labels[name],
             common.fmt(medians[name]),
             common.fmt(common.ratio(medians[name], medians[
                 "bare_step_xla" if name.endswith(XLA_SUFFIX) else "bare_step"]), 3),
             " ".join(common.fmt(value, 0) for value in rates[name]))
            for name in rates]
    common.print_table(
        f"Trainer: steps/s at MADQN's batch of {config.batch_size} on {common.ENV_NAME} (median "
        f"of {args.repeats} x {args.seconds:g} s; {replay_items:,} items in replay)",
        ["variant", "steps/s", "ratio to bare", "runs"], rows)
    trainer_sps, trainer_ratio = medians["trainer"], common.ratio(medians["trainer"], bare)
    met = bool(trainer_sps and trainer_sps >= 200 and trainer_ratio >= 0.8)
    print(f"Target: trainer >= 200 steps/s and >= 80% of the bare step: "
          f"{'met' if met else 'NOT met'} ({common.fmt(trainer_sps)} steps/s, "
          f"{common.fmt(100 * trainer_ratio if trainer_ratio else None)}%)")

    figures: Dict[str, Any] = {f"{name}_sps": medians[name] for name in rates}
    figures["trainer_ratio"] = trainer_ratio
    if "trainer_logging" in medians:
        figures["trainer_logging_ratio"] = common.ratio(medians["trainer_logging"], bare)
    if other_systems:
        work = system_rows({"madqn": (config, trainer_sps, bare), **{
            name: (other.config, medians[SYSTEM_VARIANT.format(name)],
                   medians[SYSTEM_BARE_VARIANT.format(name)])
            for name, (other, _, _) in other_systems.items()}})
        common.print_table(
            "Trainer per system: what one step is, and the work per second it makes",
            ["system", "one trainer step", "steps/s", "of own bare step", "ratio to MADQN",
             "updates/s", "env steps sampled/s"],
            [(name.upper(), row["step"], common.fmt(row["steps_per_s"]),
              common.fmt(row["ratio_to_bare_step"], 3), common.fmt(row["ratio_to_madqn"], 3),
              common.fmt(row["updates_per_s"]), common.fmt(row["samples_per_s"], 0))
             for name, row in work.items()])
        for name in other_systems:
            if name in RATIO_TARGET_SYSTEMS:
                system_ratio = work[name]["ratio_to_madqn"]
                print(f"Target: {name.upper()} trainer >= 70% of MADQN's: "
                      f"{'met' if system_ratio and system_ratio >= 0.7 else 'NOT met'} "
                      f"({common.fmt(system_ratio, 3)} of MADQN's)")
        figures["systems"] = work
        figures.update({f"{SYSTEM_VARIANT.format(name)}_ratio_to_madqn":
                        work[name]["ratio_to_madqn"] for name in other_systems})
    if args.jit_compile:
        xla = xla_rows(medians, first_steps, ["madqn", *other_systems])
        common.print_table(
            "XLA (jit_compile=True) against TensorFlow's graph: trainer steps/s, and the first "
            "step's seconds (tracing, and XLA's compile)",
            ["system", "trainer.step() graph", "XLA", "ratio", "bare step graph", "XLA",
             "ratio", "first step graph s", "XLA s"],
            [(name.upper(), common.fmt(row["trainer_sps"]), common.fmt(row["trainer_xla_sps"]),
              common.fmt(row["trainer_ratio"], 3), common.fmt(row["bare_sps"]),
              common.fmt(row["bare_xla_sps"]), common.fmt(row["bare_ratio"], 3),
              common.fmt(row["first_step_s"], 1), common.fmt(row["first_step_xla_s"], 1))
             for name, row in xla.items()])
        figures["xla"] = xla
    figures["runs"] = {f"{name}_sps": values for name, values in rates.items()}
    common.emit(args, figures, {
        "benchmark": "trainer", "env": common.ENV_NAME, "batch_size": config.batch_size,
        "prioritized_replay": args.prioritized_replay, "replay_items": replay_items,
        "steps_per_call": args.steps_per_call, "jit_compile": args.jit_compile,
        "prefetch_size": config.prefetch_size,
        "dataset_parallel_calls": config.dataset_parallel_calls, "unit": "trainer steps/s"})


def xla_rows(medians: Dict[str, Optional[float]], first_steps: Dict[str, float],
             systems: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """Per system ("madqn" first), its trainer and bare steps/s with and without XLA, their
    ratios (XLA's over the graph's) and the seconds each trainer's first step took."""
    rows = {}
    for name in systems:
        trainer = "trainer" if name == "madqn" else SYSTEM_VARIANT.format(name)
        bare = "bare_step" if name == "madqn" else SYSTEM_BARE_VARIANT.format(name)
        rows[name] = {
            "trainer_sps": medians[trainer], "trainer_xla_sps": medians[trainer + XLA_SUFFIX],
            "trainer_ratio": common.ratio(medians[trainer + XLA_SUFFIX], medians[trainer]),
            "bare_sps": medians[bare], "bare_xla_sps": medians[bare + XLA_SUFFIX],
            "bare_ratio": common.ratio(medians[bare + XLA_SUFFIX], medians[bare]),
            "first_step_s": first_steps[trainer],
            "first_step_xla_s": first_steps[trainer + XLA_SUFFIX]}
    return rows


def system_rows(rates: Dict[str, Tuple[Any, Optional[float], Optional[float]]]
                ) -> Dict[str, Dict[str, Any]]:
    """Per system, from its config, trainer steps/s and bare steps/s (`rates`, MADQN's under
    "madqn"): what one step is (`step_work`), its steps/s as ratios of its bare step's and of
    MADQN's, and the updates and environment steps sampled per second."""
    madqn_sps = rates["madqn"][1]
    rows = {}
    for name, (config, steps_per_s, bare_per_s) in rates.items():
        updates, samples, step = step_work(config)
        rows[name] = {
            "step": step, "steps_per_s": steps_per_s, "bare_step_per_s": bare_per_s,
            "ratio_to_bare_step": common.ratio(steps_per_s, bare_per_s),
            "updates_per_step": updates, "samples_per_step": samples,
            "ratio_to_madqn": common.ratio(steps_per_s, madqn_sps),
            "updates_per_s": None if steps_per_s is None else steps_per_s * updates,
            "samples_per_s": None if steps_per_s is None else steps_per_s * samples}
    return rows

if __name__ == "__main__":
    main()
