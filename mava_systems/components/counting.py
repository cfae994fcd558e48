"""The program's central counter, checkpointed with the run."""

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
        if self._checkpointing is not None:
            self._checkpointing.save(force=True)
        keep_serving_after_stop()


# Every count a program keeps; logged rows carry all of them so CSV columns are fixed from row one.
COUNT_KEYS = ("executor_steps", "executor_episodes", "trainer_steps",
              "evaluator_steps", "evaluator_episodes")


def complete_counts(counts: Mapping[str, Number]) -> Dict[str, Number]:
    """`counts` with every key of `COUNT_KEYS` present (missing ones are 0)."""
    return {**{key: 0 for key in COUNT_KEYS}, **counts}
