"""Continuous-control throughput: executor and trainer steps per second of HAPPO, MATD3 and
MASAC beside MADDPG's on a Multi-Agent MuJoCo task (default mamujoco/HalfCheetah-2x3).

    .venv/bin/python -m benchmarks.continuous_control [--repeats 3 --seconds 10]
    .venv/bin/python -m benchmarks.continuous_control --systems maddpg,matd3 --clock cpu

`benchmarks.executor` and `benchmarks.trainer` time every system beside MADQN's on
simple_spread, where a discrete MADQN runs; this times the continuous-control systems on a
MuJoCo task instead, each with the MaMuJoCo family's settings (a policy per agent, no agent
IDs) and every other config default, each with its own in-process Reverb server (no rate
limit; a queue, HAPPO's, served as a table whose items stay: see `common.keeping_items`):

  executor_<system>  EnvironmentLoop + the system's acting executor + its adder writing to
                     replay: joint environment steps per second (whole episodes, reset included)
  trainer_<system>   `trainer.step()` on replay filled by random play through the system's
                     adder: trainer steps per second, and the environment steps they sample

Variants take turns (every system's executor, then every trainer, repeated), so a shared
machine's slow phases spread over all of them; each is also given as a ratio of MADDPG's.
"""

import gc
import os
import sys
from typing import Any, Callable, Dict, List

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402
from benchmarks import trainer as trainer_benchmark  # noqa: E402
from benchmarks.executor import loop_episode  # noqa: E402

DEFAULT_ENV = "mamujoco/HalfCheetah-2x3"
DEFAULT_SYSTEMS = "maddpg,matd3,masac,happo"
BASELINE = "maddpg"


def make_system(env: str, name: str, seed: int) -> Any:
    """(system, server, client): registered system `name` on `env` with its family's settings."""
    from mava_systems import family_settings  # pylint: disable=import-outside-toplevel

    settings = family_settings.settings_for(env, name, sorted(common.config_fields(name)))
    return common.local_madqn("continuous", name, keep_items=True, env=env, seed=seed,
                              **dict(settings.config))


def main() -> None:
    parser = common.make_parser("continuous_control", __doc__.split("\n\n")[0], seconds=10.0,
                                seconds_help="seconds timed per variant and repeat",
                                warmup=2.0, in_process=True)
    parser.add_argument("--env", default=DEFAULT_ENV,
                        help=f"the continuous-action task (default {DEFAULT_ENV})")
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS,
                        help=f"registered systems timed, comma-separated (default "
                             f"{DEFAULT_SYSTEMS}; ratios are to {BASELINE}'s when it is one)")
    parser.add_argument("--fill_steps", type=int, default=5000,
                        help="environment steps of random play written to each trainer's "
                             "replay before timing (default 5000)")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    names = common.system_names(args.systems)
    if not names:
        raise SystemExit("--systems names no system")
    common.prepare_in_process(args.tf_threads)

    from mava_systems.acting.environment_loop import EnvironmentLoop  # noqa: E402

    systems = {name: make_system(args.env, name, args.seed) for name in names}
    variants: Dict[str, Callable[[], int]] = {}
    work: Dict[str, Any] = {}
    keep: List[Any] = []
    try:
        for name, (system, _, client) in systems.items():
            # Systems exploring by a schedule explore at their config's largest noise scale.
            exploration = getattr(system.config, "noise_scale", 0.0)
            executor = common.acting_executor(system, exploration,
                                              adder=system.builder.make_adder(client),
                                              seed=args.seed)
            environment = system.environment_factory(evaluation=False, seed=args.seed)
            variants[f"executor_{name}"] = loop_episode(EnvironmentLoop(environment, executor))
        for name, (system, _, client) in systems.items():
            trainer_benchmark.fill_replay(system, client, args.fill_steps, args.seed)
            trainer, _, first_step_s = trainer_benchmark.make_trainer(system, client, False,
                                                                      f"trainer_{name}")
            keep.append(trainer)
            work[name] = (trainer_benchmark.step_work(system.config), first_step_s)
            variants[f"trainer_{name}"] = trainer_benchmark.counted(trainer.step,
                                                                    trainer.steps_per_call)
        common.progress(f"timing {len(variants)} variants x {args.repeats} repeats x "
                        f"{args.seconds:g} s (+{args.warmup:g} s warm-up each) on {args.env}")
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                           args.clock)
    finally:
        variants.clear()
        keep.clear()
        gc.collect()  # Closes the adders' streams before the servers stop.
        common.stop_local(systems.values())

    medians = {variant: common.median(values) for variant, values in rates.items()}
    baseline = BASELINE if BASELINE in names else None
    rows, figures = [], {}
    for name in names:
        (updates, sampled, description), first_step_s = work[name]
        executor_sps, trainer_sps = medians[f"executor_{name}"], medians[f"trainer_{name}"]
        executor_ratio = common.ratio(executor_sps, medians.get(f"executor_{baseline}"))
        trainer_ratio = common.ratio(trainer_sps, medians.get(f"trainer_{baseline}"))
        sampled_sps = None if trainer_sps is None else trainer_sps * sampled
        rows.append([name.upper(), common.fmt(executor_sps), common.fmt(executor_ratio, 2),
                     common.fmt(trainer_sps, 2), common.fmt(trainer_ratio, 2),
                     common.fmt(sampled_sps, 0), description, common.fmt(first_step_s)])
        figures.update({f"executor_{name}_sps": executor_sps,
                        f"executor_{name}_ratio_to_{BASELINE}": executor_ratio,
                        f"trainer_{name}_steps_per_s": trainer_sps,
                        f"trainer_{name}_ratio_to_{BASELINE}": trainer_ratio,
                        f"trainer_{name}_sampled_env_steps_per_s": sampled_sps,
                        f"trainer_{name}_updates_per_step": updates,
                        f"trainer_{name}_first_step_s": first_step_s})
    common.print_table(
        f"Continuous control on {args.env} (median of {args.repeats} x {args.seconds:g} s, "
        f"{args.clock} clock, variants in turns)",
        ["system", "executor steps/s", f"/ {BASELINE.upper()}", "trainer steps/s",
         f"/ {BASELINE.upper()}", "env steps sampled/s", "one trainer step", "first step s"],
        rows)
    common.emit(args, {**figures, "rates": rates},
                {"benchmark": "continuous_control", "env": args.env, "systems": names,
                 "fill_steps": args.fill_steps, "seed": args.seed})


if __name__ == "__main__":
    main()
