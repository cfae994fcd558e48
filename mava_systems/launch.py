"""Launch helpers shared by the examples: common flags, launching, and the run summary."""

import os
from typing import Any, Optional

from absl import flags
import launchpad as lp

FLAGS = flags.FLAGS


def define_flags(default_env: str, default_max_executor_steps: int = 20_000) -> None:
    """Defines the flags every example takes (`--lp_launch_type` comes from Launchpad)."""
    flags.DEFINE_string("env", default_env, "Environment name, e.g. mpe/simple_spread_v3.")
    flags.DEFINE_integer("num_executors", 1, "Executor nodes.")
    flags.DEFINE_integer("num_caches", 0, "Variable caches between trainer and executors.")
    flags.DEFINE_integer("max_executor_steps", default_max_executor_steps,
                         "Stop after this many executor environment steps (0: never).")
    flags.DEFINE_string("run_dir", None, "Where logs and checkpoints go (default: runs/<system>-<time>).")
    flags.DEFINE_integer("seed", 0, "Base random seed.")


def max_executor_steps_flag() -> Optional[int]:
    """The step limit from `--max_executor_steps`, None for 0 (run until stopped)."""
    if FLAGS.max_executor_steps < 0:
        raise ValueError(f"--max_executor_steps must be >= 0, got {FLAGS.max_executor_steps}")
    return FLAGS.max_executor_steps or None


def launch(program: lp.Program, launch_type: str) -> None:
    """Launches `program` and blocks until every node has finished."""
    kwargs: dict = {}
    if launch_type in ("local_mp", "test_mp"):
        kwargs["terminal"] = "current_terminal"
    worker_manager = lp.launch(program, launch_type=launch_type, **kwargs)
    if worker_manager is not None:
        worker_manager.wait()


def run(system: Any, launch_type: Optional[str] = None) -> None:
    """Builds and launches `system`, saying where its logs and checkpoints go."""
    launch_type = launch_type or FLAGS.lp_launch_type
    os.makedirs(system.run_dir, exist_ok=True)
    print(f"Run directory: {system.run_dir} (launch type {launch_type})", flush=True)
    launch(system.build(), launch_type)
    print(f"Finished. Logs: {os.path.join(system.run_dir, 'logs')}  "
          f"TensorBoard: {os.path.join(system.run_dir, 'tensorboard')}  "
          f"Checkpoints: {os.path.join(system.run_dir, 'checkpoints')}", flush=True)
