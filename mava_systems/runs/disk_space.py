"""A full disk under a run directory: noticed where a node writes, said in one line, survived.

Every node writes into the run directory (CSV and TensorBoard rows, checkpoints,
Reverb's replay checkpoints). When that disk fills, the first write that fails
stops the whole program (as a failed node does: see
`lifecycle.stop_program_after_failure`) with a `DiskFullError` naming the
directory and the space a resumed run needs; later writes are dropped instead of
retried, so no thread waits on the disk. The last complete checkpoints stay
usable (their index names only complete ones) and partial saves are removed, so
the same command resumes the run once there is room.
"""

import errno
import glob
import os
import shutil
from typing import Dict, Optional

from mava_systems.nodes.lifecycle import stop_program_after_failure

# Room for the logs (CSV, TensorBoard, output.log) a resumed run writes besides its checkpoints.
LOG_SPACE_BYTES = 16 * 2**20
_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# How TensorFlow's and Reverb's C++ errors say it (they carry no errno).
_DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")
_RESUME = "then resume with the same command"


class DiskFullError(OSError):
    """The disk holding a run directory is full; the message says where and how much room a run needs."""


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` (an OSError, a TensorFlow or Reverb error) says the disk is full."""
    if isinstance(error, DiskFullError):
        return True
    if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
        return True
    return any(text in str(error) for text in _DISK_FULL_TEXTS)


def format_bytes(size: float) -> str:
    """A size in the unit that suits it, e.g. 23.4 MB."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"  # Unreachable; for the type checker.


def _tree_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(path) for name in names)


def latest_checkpoint_bytes(run_dir: str) -> Dict[str, int]:
    """The size of each node's newest checkpoint in the run directory, by node."""
    # Imported here: TensorFlow only when sizes are asked for (launching imports this module).
    from mava_systems.runs.checkpoint_files import (  # pylint: disable=import-outside-toplevel
                                                    REPLAY_NODE, indexed_checkpoints, latest_replay_checkpoint)

    sizes = {}
    for directory in sorted(glob.glob(os.path.join(run_dir, "checkpoints", "*", ""))):
        node = os.path.basename(os.path.dirname(directory))
        if node == REPLAY_NODE:
            latest = latest_replay_checkpoint(run_dir)
            if latest is not None:
                sizes[node] = _tree_bytes(latest)
            continue
        try:
            newest = indexed_checkpoints(directory)[:1]
        except Exception:  # pylint: disable=broad-except
            newest = []  # A damaged index: restoring says so; no size from it here.
        if newest:
            sizes[node] = sum(os.path.getsize(path) for path in glob.glob(newest[0] + ".*"))
    return sizes


def space_needed(run_dir: str) -> int:
    """The free space a (resumed) run in `run_dir` needs: one more set of its checkpoints (a
    new checkpoint is written before the oldest is removed) and `LOG_SPACE_BYTES` for logs."""
    return sum(latest_checkpoint_bytes(run_dir).values()) + LOG_SPACE_BYTES


def _room_text(run_dir: str) -> str:
    checkpoints = sum(latest_checkpoint_bytes(run_dir).values())
    return (f"at least {format_bytes(checkpoints + LOG_SPACE_BYTES)} free there (one set of "
            f"the run's checkpoints, {format_bytes(checkpoints)}, and "
            f"{format_bytes(LOG_SPACE_BYTES)} for logs)")


def disk_full_error(run_dir: str, path: str, error: BaseException) -> DiskFullError:
    """The error saying the disk of `run_dir` filled while writing `path`."""
    reason = getattr(error, "strerror", None) or "No space left on device"
    return DiskFullError(f"the disk holding {run_dir} is full ({reason} writing {path}); the "
                         f"run stopped with its last complete checkpoints. Make "
                         f"{_room_text(run_dir)}, {_RESUME}")


def stop_for_full_disk(name: str, run_dir: str, path: str, error: BaseException) -> None:
    """Stops the program because `name` could not write `path` on a full disk (see the module
    docstring); nothing if the program is stopping already."""
    stop_program_after_failure(name, disk_full_error(run_dir, path, error))


def disk_full_message(failure: str) -> Optional[str]:
    """The first disk-full sentence in the text of node failures (see `launch.NodeFailure`)."""
    marker = f"{DiskFullError.__name__}: "
    if marker not in failure:
        return None
    message = failure.split(marker, 1)[1]
    end = message.find(_RESUME)
    return message if end < 0 else message[:end + len(_RESUME)]


def check_free_space(run_dir: str) -> None:
    """Refuses to launch into a disk without the room the run needs (see `space_needed`).

    Raises:
      ValueError: naming the directory, its free space and the space needed.
    """
    free = shutil.disk_usage(run_dir).free
    if free < space_needed(run_dir):
        raise no_room_error(run_dir, free)


def no_room_error(run_dir: str, free: int) -> ValueError:
    """The error refusing a launch into `run_dir`, whose disk has `free` bytes free."""
    return ValueError(f"the disk holding {run_dir} has {format_bytes(free)} free; the run "
                      f"needs {_room_text(run_dir)}. Free some space (or use another "
                      "--run_dir); nothing was changed.")
