"""The program's central counter, checkpointed with the run."""

from typing import Optional

import launchpad as lp
from acme.utils import counting

from mava_systems.components.checkpointing import Checkpointing


class CheckpointedCounter(counting.Counter):
    """An Acme counter whose counts are saved under <run_dir>/checkpoints/counter/."""

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
        if self._checkpointing is None:
            lp.wait_for_stop()
            return
        while not lp.wait_for_stop(1.0):
            self._checkpointing.save()
        self._checkpointing.save(force=True)
