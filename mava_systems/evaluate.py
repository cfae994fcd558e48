"""Evaluates a run's latest trainer checkpoint greedily, without a trainer, replay or program.

    python -m mava_systems.evaluate --run_dir=runs/spread --episodes=100 --seed=0

Prints the mean return over the episodes with a 95% confidence interval, and
as its last line a JSON object with the figures. `--checkpoint` picks another
checkpoint than the latest. With `--record=episode.gif` (or .mp4, or .txt for
environments that render text) it records the episodes instead: see
`mava_systems.recording`.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines are caught.
    console.quiet_terminal()

import dataclasses  # noqa: E402  (after the line above)
import json
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import app, flags

from mava_systems.terminal import command_line

def define_flags() -> None:
    """This command's flags (not defined on import: a program importing `evaluate` has its own)."""
    flags.DEFINE_string("run_dir", None, "The run directory to evaluate.")
    flags.DEFINE_integer("episodes", 100, "Greedy episodes to play (1 with --record unless given).")
    flags.DEFINE_integer("seed", 0, "Seed of the environment and the executor.")
    flags.DEFINE_string("checkpoint", None, "A trainer checkpoint to use instead of the latest "
                        "(a path, or a name such as ckpt-3 in <run_dir>/checkpoints/trainer).")
    flags.DEFINE_string("record", None, "Record the episodes to this file instead of scoring "
                        "them: .gif or .mp4 (environments drawing images), .txt (text).")
    flags.DEFINE_float("record_fps", None, "Frames per second of --record (default: "
                      "recording.DEFAULT_FPS, 10).")
    flags.DEFINE_integer("record_max_size", None, "Shrink --record's frames so that their "
                         "longer side is at most this many pixels.")
    flags.DEFINE_integer("record_frame_skip", 1, "Keep every k-th step of --record (and the "
                         "first and last).")


def check_flags() -> None:
    """Checks the parsed flags before anything heavy is imported.

    Raises:
      ValueError: if `--run_dir` is missing or holds no run.
    """
    run_dir = flags.FLAGS.run_dir
    if not run_dir:
        raise ValueError("--run_dir is required: the run directory to evaluate, e.g. "
                         "--run_dir=runs/spread")
    if not os.path.isdir(run_dir):
        raise ValueError(f"no run directory {run_dir}")


if __name__ == "__main__":  # --help and bad flags answered before TensorFlow is imported.
    define_flags()
    ARGUMENTS = command_line.parse_and_check(sys.argv, check_flags)

# pylint: disable=wrong-import-position
from acme.utils import counting, loggers  # noqa: E402  (after the flags are checked)
import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import sonnet as snt  # noqa: E402
import tensorflow as tf  # noqa: E402

from mava_systems import recording, registry  # noqa: E402
from mava_systems.config import recorded_before_value  # noqa: E402
from mava_systems.runs.checkpointing import (indexed_checkpoints,  # noqa: E402
                                             latest_readable_checkpoint)
from mava_systems.acting.environment_loop import EnvironmentLoop  # noqa: E402
from mava_systems.runs.run_directory import RUN_FILE  # noqa: E402
from mava_systems.system import DistributedSystem  # noqa: E402
import wrappers  # noqa: E402


def recorded_system_class(description: Dict[str, Any], path: str) -> Any:
    """The system class a run.json describes: its recorded class if importable, else its name's.

    A run of a registered system, of a subclass defined in an importable module,
    or of one defined in the launching script (recorded with the script's path,
    see `registry.recorded_location`) is rebuilt with its own class; an
    unimportable subclass that kept its parent's name is rebuilt as the parent.

    Raises:
      ValueError: naming `path`, if the recorded script cannot be loaded or the
        system name is unknown.
    """
    recorded = description.get("system_class")
    if recorded and description.get("system_script"):
        try:
            return registry.import_recorded_class(description)
        except Exception as error:  # pylint: disable=broad-except
            raise ValueError(f"{path}: cannot load the system class {recorded.partition(':')[2]} "
                             f"from {description['system_script']}: {error}") from error
    if recorded:
        try:
            return registry.import_class(recorded)
        except ImportError:
            pass
    try:
        return registry.system_class(description.get("system"))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def load_system(run_dir: str) -> Any:
    """Rebuilds the system a run directory describes (its run.json)."""
    path = os.path.join(run_dir, RUN_FILE)
    if not os.path.exists(path):
        raise ValueError(f"{run_dir} has no {RUN_FILE}: not a run directory")
    try:
        with open(path) as run_file:
            description = json.load(run_file)
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError.
        raise ValueError(f"{path} is damaged ({error}): it says which system and environment "
                         "the run used; restore it to evaluate the run") from None
    if not isinstance(description, dict):
        raise ValueError(f"{path} is damaged (not a JSON object); restore it to evaluate the run")
    system_class = recorded_system_class(description, path)
    if not description.get("environment_name"):
        raise ValueError(f"{path} does not name a registered environment")
    config_class = system_class.config_class
    config_values = {}
    for field in dataclasses.fields(config_class):
        value = description.get(f"config.{field.name}", recorded_before_value(field))
        config_values[field.name] = tuple(value) if isinstance(field.default, tuple) else value
    wrappers.import_registration(description.get("environment_registration"))
    factory = wrappers.make_environment_factory(description["environment_name"],
                                                **(description.get("environment_kwargs") or {}))
    return system_class(factory, config=config_class(**config_values), run_dir=run_dir)


def can_evaluate(system: Any) -> bool:
    """Whether this command can evaluate the system's checkpoints: it has a builder (making
    networks and a trainer) and a greedy executor."""
    return (getattr(system, "builder", None) is not None
            and type(system).greedy_executor is not DistributedSystem.greedy_executor)


def _is_network_state(value: Any) -> bool:
    """Whether a trainer's checkpointed object is part of what acting needs (networks and their
    variables, not optimizers, whose slots exist only after a step)."""
    return isinstance(value, (tf.Module, tf.Variable)) and not isinstance(value, snt.Optimizer)


def chosen_checkpoint(directory: str, checkpoint: str) -> str:
    """The path of `checkpoint` (a path, or a name such as "ckpt-3" in `directory`), checked to exist."""
    path = checkpoint if os.path.dirname(checkpoint) else os.path.join(directory, checkpoint)
    if not os.path.exists(path + ".index"):
        indexed = [os.path.basename(indexed) for indexed in indexed_checkpoints(directory)]
        raise ValueError(f"no checkpoint {path}; {directory} has "
                         f"{', '.join(indexed) if indexed else 'none'}")
    return path


def restore_trainer(system: Any, checkpoint: Optional[str] = None) -> Tuple[Any, str]:
    """A trainer of the system (serving variables; never stepped) whose networks are restored
    from `checkpoint` (see `chosen_checkpoint`), by default the latest readable trainer
    checkpoint, and that checkpoint's path."""
    directory = os.path.join(system.run_dir, "checkpoints", "trainer")
    if checkpoint is not None:
        latest = chosen_checkpoint(directory, checkpoint)
    else:
        latest = latest_readable_checkpoint(directory)  # Skips damaged ones, with a warning.
    if latest is None:
        raise ValueError(f"no trainer checkpoint in {directory}")
    trainer = system.builder.make_trainer(
        system.builder.make_networks(), dataset=iter(()), counter=counting.Counter(),
        logger=loggers.NoOpLogger(), checkpoint=False)
    state = {name: value for name, value in trainer.state.items() if _is_network_state(value)}
    try:
        tf.train.Checkpoint(**state).restore(latest).assert_existing_objects_matched() \
            .expect_partial()
    except (tf.errors.OpError, AssertionError, ValueError) as error:
        raise ValueError(f"cannot restore the networks from {latest}: {error}") from error
    return trainer, latest


def evaluation_environment(system: Any, seed: int) -> Any:
    """The environment greedy episodes are played in: the system's, made for evaluation."""
    return system.environment_factory(evaluation=True, seed=seed)


def play_greedy(run_dir: str, episodes: int, seed: int = 0, checkpoint: Optional[str] = None,
                make_environment: Callable[[Any, int], Any] = evaluation_environment,
                observers: Sequence[Any] = ()) -> Tuple[str, int, List[Dict[str, Any]]]:
    """Plays `episodes` greedy episodes of a run's checkpoint (the latest by default) in
    `make_environment(system, seed)`, seen by `observers` (Acme `EnvLoopObserver`s).

    Returns the checkpoint's path, its trainer steps and each episode's statistics
    (`EnvironmentLoop.run_episode`'s). The same seed plays the same episodes.
    """
    system = load_system(run_dir)
    if not can_evaluate(system):
        raise ValueError(f"{type(system).__name__} has no builder or greedy executor to "
                         "evaluate with")
    environment = make_environment(system, seed)
    try:
        trainer, checkpoint = restore_trainer(system, checkpoint)
        executor, variable_client = system.greedy_executor(trainer, seed)
        variable_client.update_and_wait()
        loop = EnvironmentLoop(environment, executor, counting.Counter(),
                               stop_event=threading.Event(), observers=observers)
        played = [loop.run_episode() for _ in range(episodes)]
    finally:
        environment.close()
    return checkpoint, trainer.num_steps, played


def evaluate(run_dir: str, episodes: int, seed: int = 0,
             checkpoint: Optional[str] = None) -> Dict[str, Any]:
    """Greedy returns of the latest (or a chosen) checkpoint over `episodes` episodes (each, and
    their mean with a 95% interval), for any system with a builder and a `greedy_executor`."""
    if episodes < 2:
        raise ValueError(f"episodes must be at least 2 for an interval, got {episodes}")
    checkpoint, trainer_steps, played = play_greedy(run_dir, episodes, seed, checkpoint)
    returns = np.array([episode["episode_return"] for episode in played])
    mean = float(returns.mean())
    half_width = float(scipy.stats.t.ppf(0.975, episodes - 1) * returns.std(ddof=1)
                       / np.sqrt(episodes))
    return {"checkpoint": checkpoint, "trainer_steps": trainer_steps,
            "episodes": episodes, "seed": seed, "mean_return": mean,
            "ci95_low": mean - half_width, "ci95_high": mean + half_width,
            "std_return": float(returns.std(ddof=1)), "returns": returns.tolist()}


def record(run_dir: str, path: str, episodes: int = 1, seed: int = 0,
           checkpoint: Optional[str] = None, fps: float = recording.DEFAULT_FPS,
           max_size: Optional[int] = None, frame_skip: int = 1) -> Dict[str, Any]:
    """Plays `episodes` greedy episodes of a run's latest (or a chosen) checkpoint and writes
    them to `path`, a .gif, .mp4 or .txt (see `mava_systems.recording`); the same seed plays
    the same episodes as `evaluate`.

    Returns the checkpoint, its trainer steps, the path, the number of frames and each
    episode's return and length.
    """
    render_mode = recording.FORMATS[recording.recording_suffix(path)]
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    if max_size is not None and max_size < 2:
        raise ValueError(f"max_size must be at least 2 pixels, got {max_size}")
    recorder = recording.EpisodeRecorder(frame_skip)
    checkpoint, trainer_steps, played = play_greedy(
        run_dir, episodes, seed, checkpoint,
        make_environment=lambda system, seed: recording.rendering_environment(
            system.environment_factory, render_mode, seed),
        observers=[recorder])
    recording.write_recording(path, recorder.frames, fps, max_size)
    return {"checkpoint": checkpoint, "trainer_steps": trainer_steps, "path": path,
            "frames": len(recorder.frames), "episodes": episodes, "seed": seed,
            "returns": [episode["episode_return"] for episode in played],
            "episode_lengths": [episode["episode_length"] for episode in played]}


def main(argv: Sequence[str]) -> None:
    """Evaluates the run the flags name; a user error is one line on stderr and exit status 1."""
    if len(argv) > 1:
        console.fail(f"error: unexpected arguments: {' '.join(argv[1:])}")
    if os.path.isdir(flags.FLAGS.run_dir):  # The libraries' lines go to the run's output.log.
        console.attach_run_dir(flags.FLAGS.run_dir, f"==== {' '.join(sys.argv)}\n")
    try:
        if flags.FLAGS.record:
            episodes = flags.FLAGS.episodes if flags.FLAGS["episodes"].present else 1
            result = record(flags.FLAGS.run_dir, flags.FLAGS.record, episodes,
                            flags.FLAGS.seed, flags.FLAGS.checkpoint,
                            recording.DEFAULT_FPS if flags.FLAGS.record_fps is None
                            else flags.FLAGS.record_fps,
                            flags.FLAGS.record_max_size, flags.FLAGS.record_frame_skip)
        else:
            result = evaluate(flags.FLAGS.run_dir, flags.FLAGS.episodes, flags.FLAGS.seed,
                              flags.FLAGS.checkpoint)
    except ValueError as error:  # Bad input (incl. CheckpointError): say it, without a trace.
        console.fail(f"error: {error}")
    if flags.FLAGS.record:
        episodes = f"{result['episodes']} greedy episode{'s' if result['episodes'] > 1 else ''}"
        summary = (f"{result['checkpoint']}: recorded {episodes} ({result['frames']} frames, "
                   f"returns {', '.join(f'{value:.3f}' for value in result['returns'])}) "
                   f"to {result['path']}")
    else:
        summary = (f"{result['checkpoint']}: greedy return over {result['episodes']} episodes "
                   f"{result['mean_return']:.3f} (95% CI {result['ci95_low']:.3f} to "
                   f"{result['ci95_high']:.3f})")
    console.say([summary, json.dumps(result)])


if __name__ == "__main__":
    app.run(main, flags_parser=command_line.parsed(ARGUMENTS))
