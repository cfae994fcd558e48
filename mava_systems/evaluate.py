"""Evaluates a run's latest trainer checkpoint greedily, without a trainer, replay or program.

    python -m mava_systems.evaluate --run_dir=runs/spread --episodes=100 --seed=0

Prints the mean return over the episodes with a 95% confidence interval, and
as its last line a JSON object with the figures.
"""

import dataclasses
import json
import os
import threading
from typing import Any, Dict, Sequence, Tuple

from absl import app, flags
from acme.utils import counting, loggers
import numpy as np
import scipy.stats
import sonnet as snt
import tensorflow as tf

from mava_systems import console, registry
from mava_systems.components.checkpointing import latest_readable_checkpoint
from mava_systems.components.environment_loop import EnvironmentLoop
from mava_systems.components.run_directory import RUN_FILE
from mava_systems.system import DistributedSystem
import wrappers


def recorded_system_class(description: Dict[str, Any], path: str) -> Any:
    """The system class a run.json describes: its recorded class if importable, else its name's.

    A run of a registered system (or of a subclass defined in an importable
    module) is rebuilt with its own class; a subclass defined in a script is
    rebuilt as the system whose name it kept.
    """
    recorded = description.get("system_class")
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
        value = description.get(f"config.{field.name}", field.default)
        config_values[field.name] = tuple(value) if isinstance(field.default, tuple) else value
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


def restore_trainer(system: Any) -> Tuple[Any, str]:
    """A trainer of the system (serving variables; never stepped) whose networks are restored
    from the latest readable trainer checkpoint, and that checkpoint's path."""
    directory = os.path.join(system.run_dir, "checkpoints", "trainer")
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


def evaluate(run_dir: str, episodes: int, seed: int = 0) -> Dict[str, Any]:
    """Greedy returns of the latest checkpoint over `episodes` episodes (each, and their mean
    with a 95% interval), for any system with a builder and a `greedy_executor`."""
    if episodes < 2:
        raise ValueError(f"episodes must be at least 2 for an interval, got {episodes}")
    system = load_system(run_dir)
    if not can_evaluate(system):
        raise ValueError(f"{type(system).__name__} has no builder or greedy executor to "
                         "evaluate with")
    trainer, checkpoint = restore_trainer(system)
    executor, variable_client = system.greedy_executor(trainer, seed)
    variable_client.update_and_wait()
    environment = system.environment_factory(evaluation=True, seed=seed)
    loop = EnvironmentLoop(environment, executor, counting.Counter(), stop_event=threading.Event())
    returns = np.array([loop.run_episode()["episode_return"] for _ in range(episodes)])
    mean = float(returns.mean())
    half_width = float(scipy.stats.t.ppf(0.975, episodes - 1) * returns.std(ddof=1)
                       / np.sqrt(episodes))
    return {"checkpoint": checkpoint, "trainer_steps": trainer.num_steps,
            "episodes": episodes, "seed": seed, "mean_return": mean,
            "ci95_low": mean - half_width, "ci95_high": mean + half_width,
            "std_return": float(returns.std(ddof=1)), "returns": returns.tolist()}


def define_flags() -> None:
    """This command's flags (not defined on import: a program importing `evaluate` has its own)."""
    flags.DEFINE_string("run_dir", None, "The run directory to evaluate.")
    flags.DEFINE_integer("episodes", 100, "Greedy episodes to play.")
    flags.DEFINE_integer("seed", 0, "Seed of the environment and the executor.")


def main(argv: Sequence[str]) -> None:
    """Evaluates the run the flags name; a user error is one line on stderr and exit status 1."""
    if len(argv) > 1:
        console.fail(f"error: unexpected arguments: {' '.join(argv[1:])}")
    if not flags.FLAGS.run_dir:
        console.fail("error: --run_dir is required: the run directory to evaluate, e.g. "
                     "--run_dir=runs/spread")
    try:
        result = evaluate(flags.FLAGS.run_dir, flags.FLAGS.episodes, flags.FLAGS.seed)
    except ValueError as error:  # Bad input (incl. CheckpointError): say it, without a trace.
        console.fail(f"error: {error}")
    print(f"{result['checkpoint']}: greedy return over {result['episodes']} episodes "
          f"{result['mean_return']:.3f} (95% CI {result['ci95_low']:.3f} to "
          f"{result['ci95_high']:.3f})")
    print(json.dumps(result))


if __name__ == "__main__":
    define_flags()
    app.run(main)
