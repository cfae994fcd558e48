"""Periodic, atomic checkpoints of one node's state under `<run_dir>/checkpoints/<node>/`.

TensorFlow writes a checkpoint's data files before it records the checkpoint in
the directory's index (`checkpoint`), with an atomic rename: a process killed
while saving leaves the index naming the previous checkpoint. Restoring checks
each indexed checkpoint from the newest down and falls back, with a warning,
past any that cannot be read (truncated or corrupted files).
"""

import json
import os
import shutil
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

from absl import logging
from acme import core
from acme.tf import savers
import tensorflow as tf

from mava_systems.runs.checkpoint_files import indexed_checkpoints
from mava_systems.runs.disk_space import is_disk_full, stop_for_full_disk

SAVES_LOG = "saves.jsonl"


class CheckpointError(ValueError):
    """No checkpoint of a node in the run directory can be restored."""


def read_checkpoint(path: str) -> Dict[str, Any]:
    """Every tensor of a checkpoint by name; reading them all checks every file's checksums.

    Raises:
      CheckpointError: naming the checkpoint, if any of its files is missing or corrupted.
    """
    try:
        reader = tf.train.load_checkpoint(path)
        return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    except Exception as error:  # pylint: disable=broad-except
        # Damaged files surface as OpError, IndexError, ValueError and more, by where they break.
        raise CheckpointError(f"checkpoint {path} cannot be read: "
                              f"{_first_line(error)}") from error


def latest_readable_checkpoint(directory: str) -> Optional[str]:
    """The newest indexed checkpoint whose files can all be read (warning about newer bad ones).

    Raises:
      CheckpointError: if checkpoints are indexed but none can be read.
    """
    errors = []
    for path in indexed_checkpoints(directory):
        try:
            read_checkpoint(path)
        except CheckpointError as error:
            logging.warning("Skipping %s", error)
            errors.append(str(error))
            continue
        return path
    if errors:
        raise CheckpointError(_no_good_checkpoint(directory, errors))
    return None


def _first_line(error: Exception) -> str:
    message = getattr(error, "message", None) or str(error)
    return message.strip().splitlines()[0] if message.strip() else type(error).__name__


def _no_good_checkpoint(directory: str, errors: List[str]) -> str:
    return (f"no checkpoint in {directory} can be restored: {'; '.join(errors)}. "
            "Remove the damaged files or start over with --start_fresh (the old run is "
            "moved aside, not deleted).")


def log_save(run_dir: str, record: Dict[str, Any], name: str) -> None:
    """Appends a save's `record` to the run's save log; a full disk stops the program, in
    `name`'s name (see `disk_space`)."""
    path = os.path.join(run_dir, "checkpoints", SAVES_LOG)
    try:
        with open(path, "a") as saves_log:
            saves_log.write(json.dumps(record) + "\n")
    except OSError as error:
        if not is_disk_full(error):
            raise
        stop_for_full_disk(name, run_dir, path, error)


def _size_bytes(path: str) -> int:
    directory, prefix = os.path.split(path)
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory)
               if name.startswith(os.path.basename(prefix) + "."))


class Checkpointing:
    """Saves a node's state every `interval_s` seconds (and on demand); restores the latest good one.

    Every save is also appended as a JSON line to <run_dir>/checkpoints/saves.jsonl
    (node, path, seconds, bytes and whatever `describe_save` adds).
    """

    def __init__(
        self,
        objects_to_save: Mapping[str, Any],
        run_dir: str,
        node: str,
        interval_s: float = 300.0,
        max_to_keep: int = 3,
        before_save: Optional[Callable[[], Dict[str, Any]]] = None,
    ):
        """Restores the newest readable checkpoint of `node`, if there is one.

        Args:
          objects_to_save: trackable TF objects (variables, modules, optimizers)
            or Acme `Saveable`s (objects with `save()` and `restore()`).
          run_dir: the run directory.
          node: the checkpoint subdirectory's name.
          interval_s: seconds between periodic saves.
          max_to_keep: how many checkpoints to keep.
          before_save: called before each save; its dict is added to the save's log line.

        Raises:
          CheckpointError: if checkpoints exist but none can be restored.
        """
        self.node = node
        self.run_dir = run_dir
        self.directory = os.path.join(run_dir, "checkpoints", node)
        self._interval_s = interval_s
        self._before_save = before_save
        self._checkpoint = tf.train.Checkpoint(**{
            name: savers.SaveableAdapter(value) if isinstance(value, core.Saveable) else value
            for name, value in objects_to_save.items()})
        self._manager = tf.train.CheckpointManager(self._checkpoint, self.directory,
                                                   max_to_keep=max_to_keep)
        self._remove_partial_saves()
        self.restored_from = self._restore_latest()
        self._last_save = time.time()

    def _restore_latest(self) -> Optional[str]:
        errors = []
        for path in indexed_checkpoints(self.directory):
            try:
                read_checkpoint(path)
                self._checkpoint.restore(path).assert_existing_objects_matched()
            except (CheckpointError, tf.errors.OpError, AssertionError, ValueError) as error:
                message = str(error) if isinstance(error, CheckpointError) else (
                    f"checkpoint {path} does not fit this {self.node}: {_first_line(error)}")
                logging.warning("%s: skipping %s; trying an older one", self.node, message)
                errors.append(message)
                continue
            if errors:
                logging.warning("%s: restored the older checkpoint %s", self.node, path)
            else:
                logging.info("%s: restored from checkpoint %s", self.node, path)
            return path
        if errors:
            raise CheckpointError(_no_good_checkpoint(self.directory, errors))
        return None

    def save(self, force: bool = False, call_before_save: bool = True) -> bool:
        """Saves when the interval has passed (or always, with `force`); says whether it saved.

        With `call_before_save` False, `before_save` is skipped (e.g. a fresh
        node's initial state, with nothing yet to save beside it).

        A save that fails is logged as an error and retried at the next interval;
        the checkpoints saved before it stay restorable (the index names a
        checkpoint only once all its files are written) and its partial files are
        removed. A full disk stops the program instead (see `disk_space`).
        """
        if not force and time.time() - self._last_save < self._interval_s:
            return False
        record: Dict[str, Any] = {"node": self.node, "time": time.time()}
        if self._before_save is not None and call_before_save:
            record.update(self._before_save())
        start = time.time()
        try:
            path = self._manager.save()
        except (OSError, tf.errors.OpError) as error:
            self._last_save = time.time()
            self._remove_partial_saves()
            logging.error("%s: saving a checkpoint in %s failed (%s); the previous checkpoint "
                          "%s is kept, the next save is in %.0f s", self.node, self.directory,
                          _first_line(error), self._manager.latest_checkpoint, self._interval_s)
            if is_disk_full(error):
                stop_for_full_disk(f"{self.node} checkpoint", self.run_dir, self.directory, error)
            return False
        record.update(path=path, seconds=round(time.time() - start, 4), bytes=_size_bytes(path))
        self._last_save = time.time()
        log_save(self.run_dir, record, f"{self.node} checkpoint")
        logging.info("%s: saved %s (%d bytes, %.2f s)", self.node, path, record["bytes"],
                     record["seconds"])
        return True

    def _remove_partial_saves(self) -> None:
        """Removes what saves that failed left: `ckpt-<n>_temp` folders, and the files of a
        checkpoint newer than every indexed one (this node alone writes its directory)."""
        if not os.path.isdir(self.directory):
            return
        newest = max((_number(os.path.basename(path)) for path in self._manager.checkpoints),
                     default=None)
        for name in os.listdir(self.directory):
            prefix = name.split(".", 1)[0]
            if not name.startswith("ckpt-"):
                continue
            if "_temp" not in prefix and (newest is None or _number(prefix) <= newest):
                continue
            path = os.path.join(self.directory, name)
            try:
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
            except OSError as error:
                logging.warning("%s: could not remove the partial save %s: %s", self.node, path,
                                error)
                continue
            logging.warning("%s: removed the partial save %s", self.node, path)


def _number(prefix: str) -> int:
    """The save number of a checkpoint prefix such as `ckpt-12` or `ckpt-12_temp` (-1: none)."""
    digits = prefix[len("ckpt-"):].split("_", 1)[0]
    return int(digits) if digits.isdigit() else -1
