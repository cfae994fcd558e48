"""The summary a launch ends with: did it learn, how fast, where everything went, what to run next.

Learning is read from the evaluator's log (`logs/evaluator/logs.csv`): the
greedy return of its first and its final round, each with the executor step it
was measured at, beside a uniformly random policy's return on the same
environment (measured once per run and kept in `random_policy.json`).
"""

import dataclasses
import json
import os
import shlex
import sys
from typing import Any, List, Optional, Sequence

from mava_systems import plot
from mava_systems.acting.random_policy import BaselineReturn, random_policy_return
from mava_systems.runs.checkpointing import CheckpointError
from mava_systems.runs.run_directory import CONFIG_FILE, read_status
from mava_systems.terminal.progress import format_duration, read_snapshot

RANDOM_POLICY_FILE = "random_policy.json"
RANDOM_EPISODES = 100
RANDOM_MAX_SECONDS = 15.0
# Flags a resume command must not repeat: it sets its own run dir and step limit.
_RESUME_DROPS = ("--run_dir", "--start_fresh", "--nostart_fresh")


@dataclasses.dataclass
class EvaluationRound:
    """One greedy evaluation round: its mean return and the executor step it was measured at."""

    executor_steps: int
    mean_return: float


def evaluation_rounds(run_dir: str) -> List[EvaluationRound]:
    """The evaluator's rounds in executor-step order (none if it logged none)."""
    try:
        curve = plot.read_learning_curve(run_dir)
    except (FileNotFoundError, ValueError):  # No evaluator log, or no round in it (yet).
        return []
    return [EvaluationRound(int(steps), float(value))
            for steps, value in zip(curve.steps, curve.returns)]


def random_baseline(run_dir: str, environment_factory: Any, seed: int,
                    episodes: int = RANDOM_EPISODES,
                    max_seconds: float = RANDOM_MAX_SECONDS) -> BaselineReturn:
    """The random policy's return on the run's environment, measured once and kept in the run dir."""
    path = os.path.join(run_dir, RANDOM_POLICY_FILE)
    environment = repr(environment_factory)
    try:
        with open(path) as saved_file:
            saved = json.load(saved_file)
        if saved.pop("environment") == environment and saved["seed"] == seed:
            return BaselineReturn(**saved)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # Not measured yet, or for another environment: measure it.
    baseline = random_policy_return(environment_factory, episodes, seed, max_seconds)
    try:
        with open(path, "w") as saved_file:
            json.dump({"environment": environment, **dataclasses.asdict(baseline)}, saved_file)
    except OSError:  # E.g. a full disk: measured again next time.
        if os.path.exists(path):
            os.remove(path)
    return baseline


def display_path(path: str) -> str:
    """`path` relative to the working directory when it lies below it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def resume_command(argv: Sequence[str], run_dir: str, steps_flag: str,
                   next_limit: Optional[int]) -> str:
    """The command line continuing this run: the same program and flags, this run dir, a new limit
    (None: none, written `--<steps_flag>=0`), shell-quoted."""
    kept = [argument for argument in argv[1:]
            if argument.split("=", 1)[0] not in _RESUME_DROPS + (f"--{steps_flag}",)]
    return shlex.join([display_path(sys.executable), *program_words(argv[0]), *kept,
                       f"--run_dir={display_path(run_dir)}", f"--{steps_flag}={next_limit or 0}"])


def program_words(program: str) -> List[str]:
    """How a command line names `program` (its `argv[0]`): `-m <module>` for the module this
    process runs with `python -m`, else its path."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if (spec is not None and spec.name and spec.origin
            and os.path.abspath(program) == os.path.abspath(spec.origin)):
        return ["-m", spec.name]
    return [display_path(program)]


def resume_step_limit(limit: Optional[int], steps_at_end: int) -> Optional[int]:
    """The step limit the Resume line suggests: the same one if the run stopped short of it (a
    failure, a signal), else a higher one, since the limit counts across a run's parts."""
    if not limit:
        return None
    if steps_at_end < limit:
        return limit
    return 2 * limit if 2 * limit > steps_at_end else steps_at_end + limit


def _round_line(label: str, value: float, steps: int) -> str:
    return f"  {label:<14}{value:9.2f}   at executor step {steps:,}"


def evaluation_protocol(config: Any) -> str:
    """The evaluation schedule and episodes of `config`, as the summary states them (with a
    leading space), or "" for a config without them."""
    episodes = getattr(config, "episodes_per_evaluation", None)
    if not episodes:
        return ""
    if getattr(config, "evaluates_by_steps", False):
        return (f" ({episodes} greedy episodes per round, every "
                f"{config.evaluation_every_steps:,} executor steps)")
    return f" ({episodes} greedy episodes per round)"  # On the clock: rounds fall where they may.


def format_summary(system: Any, steps_at_start: int, steps_at_end: int, wall_s: float,
                   argv: Sequence[str], log_file: Optional[str],
                   baseline: Optional[BaselineReturn],
                   rounds: Sequence[EvaluationRound], evaluable: bool = True,
                   failure: Optional[str] = None) -> str:
    """The summary's text (see the module docstring); `failure` says why the launch stopped
    early, if a node failed."""
    run_dir = display_path(system.run_dir)
    steps = steps_at_end - steps_at_start
    rate = steps / wall_s if wall_s > 0 else 0.0
    if failure is not None:
        ending = f"Stopped because a node failed ({failure})."
    elif reached_limit(system, steps_at_end):
        ending = "Finished."
    else:
        ending = "Stopped before the step limit (Ctrl-C or a stop signal)."
    lines = [f"{ending} {steps_at_end:,} executor steps ({steps:,} in this launch) in "
             f"{format_duration(wall_s)}, {rate:,.1f} steps/s."]
    per_round = evaluation_protocol(system.config)
    if rounds:
        lines.append(f"Evaluation return, summed over agents{per_round}:")
        lines.append(_round_line("first round", rounds[0].mean_return, rounds[0].executor_steps))
        if len(rounds) > 1:
            lines.append(_round_line("final round", rounds[-1].mean_return,
                                     rounds[-1].executor_steps))
    else:
        lines.append("No evaluation round was logged.")
    if baseline is not None:
        lines.append(f"  {'random policy':<14}{baseline.mean_return:9.2f}   "
                     f"(mean of {baseline.episodes} episodes on the same environment)")
    lines += [
        f"Logs:         {os.path.join(run_dir, 'logs')}/<node>/logs.csv",
        f"TensorBoard:  tensorboard --logdir {shlex.quote(os.path.join(run_dir, 'tensorboard'))}",
        f"Checkpoints:  {os.path.join(run_dir, 'checkpoints')}",
        f"Config:       {os.path.join(run_dir, CONFIG_FILE)}",
    ]
    if log_file:
        lines.append(f"Output log:   {display_path(log_file)} (library messages; "
                     "--verbose shows them here)")
    python = shlex.quote(display_path(sys.executable))
    lines.append(f"Plot:      {python} -m mava_systems.plot {shlex.quote(run_dir)} "
                 f"--out {shlex.quote(os.path.join(run_dir, 'curves.png'))}")
    if evaluable:
        lines.append(f"Evaluate:  {python} -m mava_systems.evaluate "
                     f"--run_dir={shlex.quote(run_dir)} --episodes=100")
    lines.append("Resume:    " + resume_command(
        argv, system.run_dir, f"max_{getattr(system, 'executors_group', 'executor')}_steps",
        resume_step_limit(system.max_executor_steps, steps_at_end)))
    return "\n".join(lines)


def is_evaluable(system: Any) -> bool:
    """Whether `python -m mava_systems.evaluate` can evaluate this system's checkpoints."""
    from mava_systems import evaluate  # pylint: disable=import-outside-toplevel

    return evaluate.can_evaluate(system)


def reached_limit(system: Any, steps_at_end: int) -> bool:
    """Whether a run of `system` at `steps_at_end` executor steps reached its step limit (a run
    without one never does: only a stop ends it)."""
    return bool(system.max_executor_steps) and steps_at_end >= system.max_executor_steps


def steps_at_end(system: Any, steps_at_start: int) -> int:
    """The executor steps of `system`'s run once a launch has ended: the most its counter's
    last checkpoint, progress snapshot and evaluation rounds record (at least `steps_at_start`).
    """
    snapshot = read_snapshot(system.run_dir)
    return max([steps_at_start, snapshot.executor_steps if snapshot else 0,
                _saved_count(system)]
               + [evaluation.executor_steps for evaluation in evaluation_rounds(system.run_dir)])


def _saved_count(system: Any) -> int:
    """The step count in `system`'s counter's newest checkpoint (saved at the stop), else 0."""
    try:
        counts = read_status(system.run_dir).counts
    except CheckpointError:  # Reported where the run resumes; the logs still count.
        return 0
    return int(counts.get(getattr(system, "steps_key", "executor_steps"), 0))


def summarize(system: Any, steps_at_start: int, wall_s: float, argv: Sequence[str],
              log_file: Optional[str], failure: Optional[str] = None) -> str:
    """The summary of a launch of `system` that just ended (see `format_summary`)."""
    rounds = evaluation_rounds(system.run_dir)
    steps = steps_at_end(system, steps_at_start)
    seed = getattr(system.config, "seed", 0)
    baseline = random_baseline(system.run_dir, system.environment_factory, seed)
    return format_summary(system, steps_at_start, steps, wall_s, argv, log_file,
                          baseline, rounds, is_evaluable(system), failure)
