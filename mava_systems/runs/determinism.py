"""Deterministic construction of a run's networks (`config.deterministic`).

A node builds its networks (and the trainer its optimiser and target networks) inside
`seeded_construction(seed)`: TensorFlow's global seed is set to the run's seed just before,
while a lock keeps the other nodes of the process (`local_mt` runs
every node as a thread) from drawing random numbers from the same global seed meanwhile. So
every run of the same seed and flags starts from the same weights in every node, whichever
node is built first. (The nodes draw their random numbers while acting from their own
seeded generators, not from the global seed: a random op without a seed run by another thread
during a construction would still change its weights.)

TensorFlow 2.8's `tf.config.experimental.enable_op_determinism()` is not turned on: it refuses
`tf.timestamp`, which the trainer's compiled step uses to measure its wait for batches. On
the CPU with one thread per op pool (`--tf_threads=1`, the launchers' default) the kernels
these systems use give the same results for the same inputs without it. What makes the rest of
a run repeat (replay read in order, seeded sampling, lockstep variable fetches) is in
`mava_systems/nodes/lockstep.py`; docs/experiments.md, "Deterministic runs", says what holds.
"""

import contextlib
import random
import threading
from typing import Any, Iterator, List

import numpy as np
import tensorflow as tf

_CONSTRUCTION = threading.Lock()


@contextlib.contextmanager
def seeded_construction(seed: int, deterministic: bool = True) -> Iterator[None]:
    """With `deterministic`: the block runs alone among the process's seeded constructions,
    after Python's, NumPy's and TensorFlow's global seeds are set to `seed` (so the random
    initial values it draws are those of every other run of `seed`). Without: a no-op."""
    if not deterministic:
        yield
        return
    with _CONSTRUCTION:
        random.seed(seed)
        np.random.seed(seed)
        tf.random.set_seed(seed)  # Also restarts the per-op seeds drawn from it.
        yield


# The launch under which `config.deterministic` runs are tested to repeat.
TESTED_LAUNCH_TYPE = "local_mt"


def launch_notes(config: Any, num_executors: int, launch_type: str) -> List[str]:
    """What a run with `config` (if `config.deterministic`) launched `launch_type` with
    `num_executors` executors does not promise to repeat, one line each (none for a
    deterministic run that repeats, or a usual run): docs/experiments.md, Deterministic runs."""
    if not getattr(config, "deterministic", False):
        return []
    notes = []
    if launch_type != TESTED_LAUNCH_TYPE:
        notes.append(
            f"--deterministic under {launch_type}: each node process seeds its own construction "
            "and the lockstep calls are the same, but repeats are tested only under "
            f"{TESTED_LAUNCH_TYPE}, and a node restarted after a failure starts a new schedule "
            "(docs/experiments.md, Deterministic runs)")
    if num_executors > 1:
        notes.append(f"--deterministic with {num_executors} executors: their items reach replay "
                     "in the order of their timing, so training is lockstepped but runs do not "
                     "repeat; use --num_executors=1 for repeatable runs")
    if not config.evaluates_by_steps:
        notes.append("--deterministic with evaluation on the clock (evaluation_interval_s): "
                     "each round plays the trainer's variables when its time comes, so the "
                     "evaluator's rows do not repeat; use --evaluation_every_steps")
    return notes
