"""Periodic checkpoints of one node's state under `<run_dir>/checkpoints/<node>/`."""

import os
from typing import Any, Mapping, Optional

from absl import logging
from acme.tf import savers
import tensorflow as tf


class Checkpointing:
    """Saves a node's state every `interval_s` seconds (and on demand) and restores the latest."""

    def __init__(
        self,
        objects_to_save: Mapping[str, Any],
        run_dir: str,
        node: str,
        interval_s: float = 300.0,
        max_to_keep: int = 3,
    ):
        self.directory = os.path.join(run_dir, "checkpoints", node)
        latest = tf.train.latest_checkpoint(self.directory)
        # Acme's Checkpointer restores the latest checkpoint in its constructor.
        self._checkpointer = savers.Checkpointer(
            objects_to_save=dict(objects_to_save),
            directory=run_dir,
            subdirectory=node,
            time_delta_minutes=interval_s / 60.0,
            add_uid=False,
            max_to_keep=max_to_keep,
        )
        self.restored_from: Optional[str] = latest
        if latest:
            logging.info("%s: restored from checkpoint %s", node, latest)

    def save(self, force: bool = False) -> bool:
        """Saves when the interval has passed (or always, with `force`); says whether it saved."""
        return self._checkpointer.save(force=force)
