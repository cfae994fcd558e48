"""Trainer benchmark: MADQN trainer steps per second at batch 256 against the bare compiled step.

    .venv/bin/python -m benchmarks.trainer [--repeats 9 --seconds 3]

A Reverb server in this process is filled by a random executor on
mpe/simple_spread_v3 (no rate limit: samples_per_insert=None), then:

  bare_step        the trainer's compiled `_step` (double Q-learning, Adam, target update) on
                   one batch already in memory, unpacked: the limit
  trainer          `trainer.step()`: a batch from Reverb through the dataset pipeline
                   (builder.make_dataset_iterator), drawn inside the compiled step, counting
                   (`--steps_per_call` K: K batches per call, rates in trainer steps)
  trainer_logging  (diagnostic) the same with the trainer node's logger (CSV, TensorBoard;
                   a row at most once a second)
  dataset          (diagnostic) batches/s the dataset pipeline alone delivers (to Python)
  trainer_<system> `trainer.step()` of VDN and QMIX (`--systems`; one team loss through the
                   mixer), each from its own replay filled the same way; also as a ratio of
                   MADQN's trainer

Variants take turns in short runs (9 x 3 s by default): this machine's speed
drifts by 20% over seconds, and short turns spread that over every variant.
"""

import gc
import os
import shutil
import sys
import time
from typing import Any, Callable, Dict

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


def fill_replay(system: Any, client: Any, steps: int, seed: int) -> int:
    """Writes at least `steps` joint steps of random play (and `min_replay_size` items) to
    replay through the system's adder; returns the replay's size."""
    from mava_systems.components.environment_loop import EnvironmentLoop
    from mava_systems.components.exploration import ConstantEpsilon

    builder = system.builder
    adder = builder.make_adder(client)
    executor = builder.make_executor(builder.make_networks(), ConstantEpsilon(1.0), adder=adder,
                                     seed=seed)
    loop = EnvironmentLoop(system.environment_factory(evaluation=False, seed=seed), executor)
    played = 0
    while played < max(steps, system.config.min_replay_size):
        played += loop.run_episode()["episode_length"]
    del loop, executor, adder
    gc.collect()  # Closes the writer's stream.
    return sum(info.current_size for info in client.server_info().values())


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
    parser.add_argument("--batch_size", type=int, default=256)
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
                             "(comma-separated; empty: none)")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    common.prepare_in_process(args.tf_threads)

    config_kwargs = dict(
        batch_size=args.batch_size, prioritized_replay=args.prioritized_replay,
        trainer_steps_per_call=args.steps_per_call,
        **({} if args.dataset_parallel_calls is None else
           {"dataset_parallel_calls": args.dataset_parallel_calls}),
        seed=args.seed)
    system, server, client = common.local_madqn("trainer", **config_kwargs)
    run_dir, config, builder = system.run_dir, system.config, system.builder
    other_systems = {name: common.local_madqn("trainer", name, **config_kwargs)
                     for name in filter(None, args.systems.split(","))}
    state: Dict[str, Any] = {}
    try:
        # Fill replay with a random executor.
        start = time.perf_counter()
        replay_items = fill_replay(system, client, args.fill_steps, args.seed)
        common.progress(f"replay filled with {replay_items:,} items in "
                        f"{time.perf_counter() - start:.1f} s")

        networks = builder.make_networks()
        dataset = builder.make_dataset_iterator(client)
        state["dataset"] = dataset
        trainer = builder.make_trainer(networks, dataset, replay_client=client, checkpoint=False)
        state["trainer"] = trainer
        start = time.perf_counter()
        trainer.step()  # Traces the compiled step.
        common.progress(f"first trainer step (tracing) took {time.perf_counter() - start:.1f} s")
        # The in-memory batch: one the pipeline gives, unpacked as the trainer unpacks it.
        sample = next(dataset)
        unpack = builder.unpack_replay_items()
        if unpack is not None:
            sample = sample._replace(data=unpack(sample.data))
        variants: Dict[str, Callable[[], int]] = {
            "bare_step": counted(lambda: trainer._step(sample)),  # pylint: disable=protected-access
            "trainer": counted(trainer.step, trainer.steps_per_call),
        }
        if not args.no_diagnostics:
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
            fill_replay(other, other_client, args.fill_steps, args.seed)
            other_trainer = other.builder.make_trainer(
                other.builder.make_networks(), other.builder.make_dataset_iterator(other_client),
                replay_client=other_client, checkpoint=False)
            state[name] = other_trainer
            start = time.perf_counter()
            other_trainer.step()
            common.progress(f"first {name} trainer step (tracing) took "
                            f"{time.perf_counter() - start:.1f} s")
            variants[SYSTEM_VARIANT.format(name)] = counted(other_trainer.step,
                                                            other_trainer.steps_per_call)

        common.progress(f"timing {len(variants)} variants x {args.repeats} repeats x "
                        f"{args.seconds:g} s (+{args.warmup:g} s warm-up each)")
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                             args.clock)
        variants.clear()
    finally:
        state.clear()
        gc.collect()  # Frees the datasets' streams while the server is still up.
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
        for other, other_server, _ in other_systems.values():
            other_server.stop()
            shutil.rmtree(other.run_dir, ignore_errors=True)

    medians = {name: common.median(values) for name, values in rates.items()}
    bare = medians["bare_step"]
    labels = {**VARIANTS, **{SYSTEM_VARIANT.format(name): f"{name.upper()}'s trainer.step()"
                             for name in other_systems}}
    rows = [(labels[name], common.fmt(medians[name]), common.fmt(common.ratio(medians[name], bare), 3),
             " ".join(common.fmt(value, 0) for value in rates[name]))
            for name in rates]
    common.print_table(
        f"Trainer: steps/s at batch {args.batch_size} on {common.ENV_NAME} (median of "
        f"{args.repeats} x {args.seconds:g} s; {replay_items:,} items in replay)",
        ["variant", "steps/s", "ratio to bare", "runs"], rows)
    trainer_sps, trainer_ratio = medians["trainer"], common.ratio(medians["trainer"], bare)
    met = bool(trainer_sps and trainer_sps >= 200 and trainer_ratio >= 0.8)
    print(f"Target: trainer >= 200 steps/s and >= 80% of the bare step: "
          f"{'met' if met else 'NOT met'} ({common.fmt(trainer_sps)} steps/s, "
          f"{common.fmt(100 * trainer_ratio if trainer_ratio else None)}%)")

    for name in other_systems:
        system_ratio = common.ratio(medians[SYSTEM_VARIANT.format(name)], trainer_sps)
        print(f"Target: {name.upper()} trainer >= 70% of MADQN's: "
              f"{'met' if system_ratio and system_ratio >= 0.7 else 'NOT met'} "
              f"({common.fmt(system_ratio, 3)} of MADQN's)")

    figures: Dict[str, Any] = {f"{name}_sps": medians[name] for name in rates}
    figures["trainer_ratio"] = trainer_ratio
    figures.update({f"{SYSTEM_VARIANT.format(name)}_ratio_to_madqn":
                    common.ratio(medians[SYSTEM_VARIANT.format(name)], trainer_sps)
                    for name in other_systems})
    if "trainer_logging" in medians:
        figures["trainer_logging_ratio"] = common.ratio(medians["trainer_logging"], bare)
    figures["runs"] = {f"{name}_sps": values for name, values in rates.items()}
    common.emit(args, figures, {
        "benchmark": "trainer", "env": common.ENV_NAME, "batch_size": args.batch_size,
        "prioritized_replay": args.prioritized_replay, "replay_items": replay_items,
        "steps_per_call": args.steps_per_call,
        "prefetch_size": config.prefetch_size,
        "dataset_parallel_calls": config.dataset_parallel_calls, "unit": "trainer steps/s"})


if __name__ == "__main__":
    main()
