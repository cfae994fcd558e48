"""One run of an experiment grid: any registered system through the examples' launch machinery.

    python -m mava_systems.experiment.run_one --system=madqn --env=debug/line_world_v0 \\
        --run_dir=DIR --max_executor_steps=2000 --lp_launch_type=local_mt [--<config field>=...]

The flags are an example's (see `mava_systems.launching.launch.example_main`) for the
system `--system` names, so the run starts, resumes and refuses bad input like
any example run. Once the program has reached its step limit, the latest
trainer checkpoint is evaluated greedily (`mava_systems.evaluate`) and the
result saved as `<run_dir>/final_evaluation.json`: the mark of a finished run.
"""

import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from absl import app, flags, logging

from mava_systems import evaluate, registry, train
from mava_systems.experiment import grid as grid_lib
from mava_systems.launching import launch
from mava_systems.nodes import lifecycle
from mava_systems.runs.run_directory import read_status
from mava_systems.terminal import console
from mava_systems.experiment import systems

FINAL_EVALUATION_FILE = "final_evaluation.json"
FINAL_EVALUATION_FACTOR = grid_lib.FINAL_EVALUATION_FACTOR
INTERRUPTED_EXIT_CODE = 3

FLAGS = flags.FLAGS


def final_evaluation_path(run_dir: str) -> str:
    """Where a finished run's final evaluation is saved."""
    return os.path.join(run_dir, FINAL_EVALUATION_FILE)


def read_final_evaluation(run_dir: str) -> Optional[Dict[str, Any]]:
    """A run's final evaluation, or None if the run has not finished."""
    try:
        with open(final_evaluation_path(run_dir)) as result_file:
            return json.load(result_file)
    except (OSError, ValueError):
        return None


def final_evaluation(run_dir: str, episodes: int, seed: int) -> Dict[str, Any]:
    """The greedy evaluation of a run's latest checkpoint, or why the system cannot be evaluated so.

    On any failure (e.g. no trainer checkpoint) the reason is recorded and
    reports use the last evaluator round.
    """
    try:
        return evaluate.evaluate(run_dir, episodes, seed)
    except Exception as error:  # pylint: disable=broad-except
        # The run itself has finished: a failed final evaluation must not make it
        # count as unfinished (it would be relaunched on every command).
        logging.exception("No final evaluation of %s", run_dir)
        return {"episodes": 0, "returns": [], "unavailable": f"{type(error).__name__}: {error}"}


def set_aside_final_evaluation(run_dir: str) -> Optional[str]:
    """Renames a run's final evaluation to `final_evaluation_at_<executor steps>.json`, where
    it is kept, so that the run counts as unfinished and continues (its grid's step budget
    was raised); returns the new path (None if the run had none)."""
    path = final_evaluation_path(run_dir)
    if not os.path.exists(path):
        return None
    steps = int(read_status(run_dir).counts.get("executor_steps", 0))
    kept = os.path.join(run_dir, f"final_evaluation_at_{steps}.json")
    os.replace(path, kept)
    return kept


def save_final_evaluation(run_dir: str, result: Dict[str, Any]) -> None:
    """Writes `result` as the run's final evaluation (atomically)."""
    path = final_evaluation_path(run_dir)
    with open(path + ".tmp", "w") as result_file:
        json.dump(result, result_file, indent=2)
    os.replace(path + ".tmp", path)


def system_class_of(argv: Sequence[str]) -> Any:
    """The system class `--system` names, once the `--env_module`s and `--system_module`s
    (which may define it) are imported.

    Raises:
      ValueError: if `--system` is missing or unknown, or a module cannot be imported.
    """
    name = train.flag_value(argv, "system")
    if not name:
        raise ValueError("--system is required")
    grid_lib.import_modules({kind: train.flag_values(argv, flag)
                             for kind, flag in grid_lib.MODULE_KINDS.items()})
    return registry.system_class(name)


def make_main(system_class: Any, env: str = "debug/line_world_v0"):
    """Defines `system_class`'s flags as `python -m mava_systems.train` does for `env` (its
    family's settings; see `mava_systems.family_settings`) and returns a main that runs it, then
    evaluates it."""
    example = train.system_main(system_class, env)
    step_flag = systems.step_limit_flag(system_class)

    def main(argv: List[str]) -> None:
        if not FLAGS.run_dir:
            raise app.UsageError("--run_dir is required")
        # A node loop given up at the stop (local_mt) must not end the process before the
        # final evaluation.
        with lifecycle.work_after_the_program():
            try:
                example(argv)
            except SystemExit as stop:  # Stopped before the limit: said below, as always.
                if stop.code != launch.STOPPED_EXIT_CODE:
                    raise
            max_steps = getattr(FLAGS, step_flag)
            steps = read_status(FLAGS.run_dir).counts.get("executor_steps", 0)
            if max_steps and steps < max_steps:
                console.say([f"Stopped at {int(steps)} of {max_steps} executor steps: "
                             "not finished"])
                sys.exit(INTERRUPTED_EXIT_CODE)
            config = launch.config_from_flags(system_class.config_class)
            episodes = FINAL_EVALUATION_FACTOR * config.episodes_per_evaluation
            result = final_evaluation(FLAGS.run_dir, episodes, seed=FLAGS.seed)
            save_final_evaluation(FLAGS.run_dir, result)
            # On the terminal, not in the run's output log: the terminal is quiet by now.
            console.say([f"Final evaluation ({result['episodes']} greedy episodes) saved in "
                         f"{final_evaluation_path(FLAGS.run_dir)}"])
        lifecycle.exit_if_loops_were_abandoned(0, final=True)

    return main


def run(argv: List[str]) -> None:
    """Runs the system that `--system` in `argv` names."""
    try:
        system_class = system_class_of(argv[1:])
    except ValueError as error:
        sys.exit(f"error: {error}")
    flags.DEFINE_string("system", None, "The registered system to run.")
    flags.DEFINE_multi_string("system_module", [],
                              "A module (or .py file) defining --system, imported first "
                              "(repeatable).")
    app.run(make_main(system_class, train.flag_value(argv[1:], "env") or "debug/line_world_v0"),
            argv)


if __name__ == "__main__":
    run(sys.argv)
