"""The program's central counter, checkpointed with the run."""

import time
from typing import Dict, Mapping, Optional

import launchpad as lp
from acme.utils import counting
from acme.utils.counting import Number

from mava_systems.components.checkpointing import Checkpointing
from mava_systems.components.lifecycle import keep_serving_after_stop


class CheckpointedCounter(counting.Counter):
    """An Acme counter whose counts are saved under `<run_dir>/checkpoints/counter/`."""

    def __init__(self, run_dir: Optional[str] = None, checkpoint_interval_s: float = 300.0,
                 max_checkpoints_to_keep: int = 3):
        super().__init__()
        self._checkpointing = None
        if run_dir is not None:
            self._checkpointing = Checkpointing(
                {"counter": self}, run_dir, "counter", checkpoint_interval_s, max_checkpoints_to_keep
            )

    def run(self) -> None:
        """Serves counts until the program stops, saving them periodically and at the end."""
        while not lp.wait_for_stop(1.0):
            if self._checkpointing is not None:
                self._checkpointing.save()
        stopped_at = time.monotonic()
        if self._checkpointing is not None:
            self._checkpointing.save(force=True)
        keep_serving_after_stop(stopped_at)


# Every count a program keeps; logged rows carry all of them so CSV columns are fixed from row one.
COUNT_KEYS = ("executor_steps", "executor_episodes", "trainer_steps",
              "evaluator_steps", "evaluator_episodes")


def complete_counts(counts: Mapping[str, Number]) -> Dict[str, Number]:
    """The program-wide counts of `COUNT_KEYS` in `counts` (missing ones are 0), nothing else."""
    return {key: counts.get(key, 0) for key in COUNT_KEYS}


def executor_steps_key(executor_id: int) -> str:
    """The count of one executor's own steps: where its exploration schedule stands."""
    return f"executor_{executor_id}_steps"


class ExecutorCounter(counting.Counter):
    """Counts an executor's steps and episodes into the program's totals and its own steps.

    The central counter keeps both `executor_steps` (all executors) and
    `executor_<id>_steps` (this one), so a resumed executor continues its
    exploration schedule where it stopped. Like Acme's counter, increments
    reach the central counter at most once per `time_delta` seconds.
    """

    def __init__(self, parent: counting.Counter, executor_id: int, time_delta: float = 1.0):
        super().__init__(parent, time_delta=time_delta)
        self._own_steps_key = executor_steps_key(executor_id)

    def increment(self, **counts: Number) -> Dict[str, Number]:
        totals = {f"executor_{key}": value for key, value in counts.items()}
        if "steps" in counts:
            totals[self._own_steps_key] = counts["steps"]
        return super().increment(**totals)

    def own_steps(self) -> int:
        """This executor's steps so far, as the central counter has them (restored on resume)."""
        return int(self._parent.get_counts().get(self._own_steps_key, 0))
