"""Where a run's checkpoints are on disk: each node's indexed checkpoints and replay's complete
ones. Only reads; `checkpointing` and `replay_checkpointing` write them."""

import os
from typing import List, Optional

import tensorflow as tf

REPLAY_NODE = "replay"


def indexed_checkpoints(directory: str) -> List[str]:
    """The checkpoints the directory's index lists, newest first."""
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
    paths = [path if os.path.isabs(path) else os.path.join(directory, path) for path in paths]
    return list(reversed(paths))


def replay_checkpoint_directory(run_dir: str) -> str:
    """Where Reverb keeps the replay checkpoint of a run."""
    return os.path.join(run_dir, "checkpoints", REPLAY_NODE)


def latest_replay_checkpoint(run_dir: str) -> Optional[str]:
    """The newest complete (`DONE`) replay checkpoint of a run, if any."""
    directory = replay_checkpoint_directory(run_dir)
    if not os.path.isdir(directory):
        return None
    complete = [os.path.join(directory, name) for name in sorted(os.listdir(directory))
                if os.path.exists(os.path.join(directory, name, "DONE"))]
    return complete[-1] if complete else None
