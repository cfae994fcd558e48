"""The experiment command line: run a grid, or report on one.

    python -m mava_systems.experiment --systems=madqn,madqn_lr3=madqn \\
        --envs=debug/line_world_v0 --seeds=3 --max_executor_steps=20000 --out=experiments/line \\
        --set madqn_lr3.learning_rate=3e-3
    python -m mava_systems.experiment report experiments/line --out=experiments/line/report

See docs/experiments.md.
"""

import argparse
import datetime
import os
import shlex
import sys
from typing import List, Optional, Sequence, Tuple

from mava_systems.terminal import console
# The rest of the package is imported once the flags are parsed and checked (it imports
# TensorFlow): `--help` and bad flags are answered without.
# pylint: disable=import-outside-toplevel
from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import presets
import wrappers

INTERRUPTED_EXIT_CODE = 130
DEFAULT_SEEDS = 3
# Flags a grid of flags needs, and a preset sets itself (its --systems and --envs choose among
# its entries and tasks).
_PRESET_SETS = ("systems", "envs", "max_executor_steps")


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mava_systems.experiment",
        description="Runs every (system, environment, seed) of a grid as a resumable run "
                    "directory under --out. Rerunning it skips finished runs and resumes the "
                    "others. `python -m mava_systems.experiment report DIR` reports on a grid.")
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help="run a published protocol (its systems, tasks and budgets; "
                             "--systems/--envs then pick among its entries and tasks): one of "
                             f"{', '.join(sorted(presets.PRESETS))} (docs/experiments.md)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="with --preset: every budget, evaluation interval and exploration "
                             "schedule x this, in (0, 1] (stated on the output's and the "
                             "report's first line and in experiment.json)")
    parser.add_argument("--dry_run", action="store_true",
                        help="with --preset: print its grid and estimated hours; run nothing")
    parser.add_argument("--steps_per_s", type=float, default=presets.DEFAULT_STEPS_PER_S,
                        help="with --dry_run: the steps/s (executor and evaluation) of one run "
                             "the estimate assumes")
    parser.add_argument("--systems",
                        help="comma-separated registered systems, each optionally labelled "
                             "(label=system) to compare configurations of one system")
    parser.add_argument("--envs",
                        help="comma-separated environments, e.g. mpe/simple_spread_v3")
    parser.add_argument("--env_module", action="append", default=[], metavar="MODULE",
                        help="a module (or .py file) registering environments of --envs with "
                             "wrappers.register_environment (repeatable); every run imports it, "
                             "and the grid records it for later commands")
    parser.add_argument("--system_module", action="append", default=[], metavar="MODULE",
                        help="a module (or .py file, e.g. docs/tutorials/weighted_qmix.py) "
                             "defining system classes of --systems (repeatable); every run "
                             "imports it, and the grid records it for later commands")
    parser.add_argument("--seeds", type=int, default=None,
                        help=f"seeds per (system, environment) (default {DEFAULT_SEEDS}, or "
                             "the preset's)")
    parser.add_argument("--max_executor_steps", type=int,
                        help="executor (or actor) steps of each run")
    parser.add_argument("--out", help="the experiment's directory")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="LABEL.FIELD=VALUE",
                        help="a config field of one entry, e.g. madqn.learning_rate=3e-4, or the "
                             "exploration schedule of a value-based one, e.g. "
                             "qmix.exploration=linear:1,0.05,200000 "
                             "(repeatable)")
    parser.add_argument("--start_fresh", action="store_true",
                        help="move an existing --out aside (to <out>.old-<n>) and start anew")
    parser.add_argument("--launch_type", default="local_mt", choices=["local_mt", "local_mp"],
                        help="Launchpad launch type of each run")
    parser.add_argument("--progress_interval_s", type=float, default=None,
                        help="seconds between progress lines (default 1 on a terminal, "
                             "30 otherwise; 0: none)")
    return parser


def _report_parser() -> argparse.ArgumentParser:
    from mava_systems.experiment import results as results_lib
    from mava_systems.experiment import statistics
    parser = argparse.ArgumentParser(
        prog="python -m mava_systems.experiment report",
        description="Robust statistics, figures, a Markdown summary and marl-eval JSON of a "
                    "finished grid.")
    parser.add_argument("experiment", metavar="DIR", help="the experiment's --out directory")
    parser.add_argument("--out", default=None, help="report directory (default DIR/report)")
    parser.add_argument("--points", type=int, default=results_lib.DEFAULT_POINTS,
                        help="evenly spaced step points of the curves and marl-eval steps")
    parser.add_argument("--reps", type=int, default=statistics.DEFAULT_REPS,
                        help="bootstrap resamples per interval")
    return parser


def _quiet(quiet: bool) -> None:
    """With `quiet`, the libraries' output (TensorFlow's start-up lines, Gym's notice) goes to a
    log from here on (see `console.quiet_terminal`); what we print goes to the terminal."""
    if quiet:
        console.quiet_terminal()


def _grid(args: argparse.Namespace) -> grid_lib.Grid:
    """The grid the flags describe, checked (its modules imported: those saved in --out, then
    the flags').

    Raises:
      ValueError: naming what is wrong.
    """
    modules = grid_lib.modules_to_import(
        args.out, {"environments": args.env_module, "systems": args.system_module},
        args.start_fresh)
    for module in modules["environments"]:
        wrappers.import_registration(module)
    environments = grid_lib.parse_environments(args.envs)  # (Before the systems' import.)
    grid_lib.import_modules({"systems": modules["systems"]})
    entries = grid_lib.parse_entries(args.systems)
    return grid_lib.Grid(entries, environments, args.seeds, args.max_executor_steps,
                         grid_lib.parse_overrides(args.overrides, entries), modules,
                         getattr(args, "preset_record", None))


def _part_args(args: argparse.Namespace, preset: presets.Preset, part: presets.Part
               ) -> argparse.Namespace:
    """The flags of one part of a preset run: the preset's, then the user's --set items for
    the part's entries."""
    flags = presets.part_flags(preset, part, args.scale, args.seeds)
    own = [item for item in args.overrides if item.partition(".")[0] in part.labels]
    return argparse.Namespace(**{**vars(args), **flags,
                                 "env_module": flags["env_module"] + args.env_module,
                                 "overrides": flags["overrides"] + own,
                                 "out": os.path.join(args.out, part.name),
                                 "preset_record": presets.grid_record(preset, args.scale, part)})


def _check_preset_flags(args: argparse.Namespace) -> presets.Preset:
    """The preset a --preset command names, once its other flags are checked.

    Raises:
      ValueError: naming what is wrong.
    """
    preset = presets.narrowed(presets.get(args.preset), _items(args.systems),
                              _items(args.envs))
    presets.check_scale(args.scale)
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.steps_per_s <= 0:
        raise ValueError(f"--steps_per_s must be > 0, got {args.steps_per_s}")
    if args.max_executor_steps is not None:
        raise ValueError("--preset sets the budgets: leave out --max_executor_steps (--scale "
                         "shrinks them)")
    labels = {label for part in preset.parts for label in part.labels}
    for item in args.overrides:
        if item.partition(".")[0] not in labels:
            raise ValueError(f"--set {item!r}: the preset has no entry labelled "
                             f"{item.partition('.')[0]!r}; entries: {', '.join(sorted(labels))}")
    return preset


def _items(flag: Optional[str]) -> Optional[List[str]]:
    """A comma-separated flag's items (None when the flag is not given)."""
    return None if flag is None else [item.strip() for item in flag.split(",") if item.strip()]


def _preset_grids(args: argparse.Namespace, preset: presets.Preset
                  ) -> Tuple[List[Tuple[str, grid_lib.Grid]], Optional[str]]:
    """Checks every part's grid of a preset run, then saves the preset and the grids in --out
    (each part in `<out>/<part>`); returns the (part, grid) pairs and where an earlier
    experiment in --out was moved (`--start_fresh`).

    Raises:
      ValueError: naming what is wrong (nothing is saved then, when a part's settings are).
    """
    part_args = [_part_args(args, preset, part) for part in preset.parts]
    grids = [(part.name, _grid(flags)) for part, flags in zip(preset.parts, part_args)]
    moved_to = None
    if args.start_fresh:
        from mava_systems.runs.run_directory import move_aside
        moved_to = move_aside(os.path.abspath(args.out))
    presets.save(args.out, preset, args.scale, args.seeds, args.overrides)
    for (_, grid), flags in zip(grids, part_args):
        grid_lib.prepare_out(grid, flags.out)
    return grids, moved_to


def _checked_grids(parser: argparse.ArgumentParser, args: argparse.Namespace
                   ) -> Tuple[List[Tuple[str, grid_lib.Grid]], Optional[str]]:
    """The grids a command runs, checked and saved in --out: ("", grid) for a grid of flags,
    (part, grid) for each part of a preset; and where --start_fresh moved an earlier
    experiment. Bad flags end the command (exit status 2) before anything starts."""
    try:
        if args.parallel < 1:
            raise ValueError(f"--parallel must be >= 1, got {args.parallel}")
        if args.preset:
            preset = _check_preset_flags(args)
            if args.dry_run:
                print(presets.describe(preset, args.scale, args.seeds, args.steps_per_s,
                                       args.parallel), file=console.terminal(), flush=True)
                return [], None
            if not args.out:
                raise ValueError("--out is required (or --dry_run)")
            return _preset_grids(args, preset)
        missing = [f"--{name}" for name in (*_PRESET_SETS, "out") if getattr(args, name) is None]
        if missing:
            raise ValueError(f"the following arguments are required: {', '.join(missing)} "
                             "(or --preset)")
        if args.dry_run or args.scale != 1.0:
            raise ValueError("--dry_run and --scale go with --preset")
        args.seeds = DEFAULT_SEEDS if args.seeds is None else args.seeds
        grid = _grid(args)
        return [("", grid)], grid_lib.prepare_out(grid, args.out, args.start_fresh)
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    raise AssertionError("unreachable: parser.exit raises SystemExit")


def run_main(argv: Sequence[str], quiet: bool = False) -> int:
    """Checks the grid (or every grid of a preset), then runs its unfinished runs."""
    parser = _run_parser()
    args = parser.parse_args(argv)
    _quiet(quiet)
    say = console.terminal()
    grids, moved_to = _checked_grids(parser, args)
    if not grids:  # A dry run.
        return 0
    from mava_systems.experiment import scheduling
    console.attach_run_dir(args.out, f"==== {datetime.datetime.now():%Y-%m-%d %H:%M:%S} "
                                     f"{shlex.join(sys.argv)}\n")
    if moved_to:
        print(f"Moved the previous experiment in {args.out} to {moved_to}", file=say, flush=True)
    if args.preset:
        print(presets.scale_line(_check_preset_flags(args), args.scale), file=say, flush=True)
    runs, failed = 0, []
    for part, grid in grids:
        out = os.path.join(args.out, part) if part else args.out
        if part:
            print(f"Part {part}: {len(grid.runs(out))} runs of {grid.max_executor_steps:,} "
                  f"executor steps in {out}", file=say, flush=True)
        try:
            outcome = scheduling.run_grid(grid, out, args.parallel, args.launch_type,
                                          args.progress_interval_s, grid.module_flags(),
                                          stream=say)
        except scheduling.Interrupted as signal_name:
            print(f"Stopped by {signal_name}; run the same command again to resume.", file=say,
                  flush=True)
            return INTERRUPTED_EXIT_CODE
        failed += outcome.failed
        runs += len(grid.runs(out))
    if failed:
        print(f"{len(failed)} run(s) failed:\n  " + "\n  ".join(failed), file=say, flush=True)
        return 1
    print(f"All {runs} runs finished. Report: python -m "
          f"mava_systems.experiment report {shlex.quote(args.out)}", file=say, flush=True)
    return 0


def report_main(argv: Sequence[str], quiet: bool = False) -> int:
    """Writes the report of a finished grid."""
    parser = _report_parser()
    args = parser.parse_args(argv)
    _quiet(quiet)
    if args.points < 1 or args.reps < 1:
        parser.exit(2, "error: --points and --reps must be >= 1\n")
    report_dir = args.out or f"{args.experiment.rstrip('/')}/report"
    from mava_systems.experiment import report as report_lib
    try:
        write = (report_lib.write_preset_report if presets.read(args.experiment) is not None
                 else report_lib.write_report)
        files = write(args.experiment, report_dir, args.points, args.reps)
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    for kind, path in files.items():
        print(f"{kind}: {path}", file=console.terminal())
    return 0


def main(argv: Optional[List[str]] = None, quiet: bool = False) -> int:
    """Dispatches to `report` or to running a grid; with `quiet` (the command line), once the
    flags are parsed the libraries' output goes to the experiment's output.log (dropped if it
    stops before)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        return report_main(argv[1:], quiet)
    return run_main(argv, quiet)


if __name__ == "__main__":
    sys.exit(main(quiet=True))
