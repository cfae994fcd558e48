"""Replay that survives restarts: Reverb's own checkpoints, taken together with the trainer's.

The trainer asks the replay server for a checkpoint just before each of its
periodic checkpoints (`ReplayCheckpointRequest`), so a trainer checkpoint and
the replay it was trained from are saved together; at program stop, the replay
node saves its tables itself. Reverb writes a checkpoint into a new timestamped
directory, marks it complete with a `DONE` file, and only then removes the
previous one, so a crash while saving leaves the previous checkpoint in place.
"""

import json
import os
import shutil
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from absl import logging
import launchpad as lp
from launchpad import address as lp_address
import reverb

from mava_systems.runs.checkpoint_files import (REPLAY_NODE, latest_replay_checkpoint,
                                                replay_checkpoint_directory)
from mava_systems.runs.checkpointing import log_save
from mava_systems.runs.disk_space import is_disk_full, stop_for_full_disk
from mava_systems.nodes.lifecycle import stop_program_after_failure
from mava_systems.nodes.replay import POLL_INTERVAL_MS

# Beside, not inside, Reverb's directory: Reverb treats every entry there as a checkpoint.
RESTORE_RECORD = "replay_restore.json"


def checkpoint_time(path: str) -> float:
    """When a replay checkpoint was completed (its `DONE` file's time)."""
    return os.path.getmtime(os.path.join(path, "DONE"))


def _directory_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def remove_partial_replay_checkpoints(run_dir: str) -> None:
    """Removes the replay checkpoints Reverb did not complete (no `DONE` file), e.g. on a full
    disk; call it only while no checkpoint is being written."""
    directory = replay_checkpoint_directory(run_dir)
    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.exists(os.path.join(path, "DONE")):
            shutil.rmtree(path, ignore_errors=True)
            logging.warning("Removed the partial replay checkpoint %s", path)


def replay_checkpoint_failed(run_dir: str, error: BaseException) -> None:
    """After a replay checkpoint failed: removes its partial files; a full disk stops the
    program (see `disk_space`)."""
    remove_partial_replay_checkpoints(run_dir)
    if is_disk_full(error):
        stop_for_full_disk(REPLAY_NODE, run_dir, replay_checkpoint_directory(run_dir), error)


class ReplayCheckpointRequest:
    """Asks the replay server for a checkpoint and waits, giving up at program stop or timeout.

    Called by the trainer before each of its checkpoints; returns what the
    trainer's save log records about the replay checkpoint.
    """

    def __init__(self, replay_client: reverb.Client, stop_event: threading.Event,
                 timeout_s: float = 600.0, run_dir: Optional[str] = None):
        self._replay_client = replay_client
        self._stop_event = stop_event
        self._timeout_s = timeout_s
        self._run_dir = run_dir

    def __call__(self) -> Dict[str, Any]:
        if self._stop_event.is_set():
            # The replay node saves its own tables at stop; the server may already be gone.
            return {"replay_checkpoint": None}
        result: Dict[str, Any] = {}

        def request() -> None:
            try:
                result["path"] = self._replay_client.checkpoint()
            except Exception as error:  # pylint: disable=broad-except
                result["error"] = error

        start = time.time()
        thread = threading.Thread(target=request, daemon=True, name="replay_checkpoint")
        thread.start()
        while thread.is_alive() and not self._stop_event.is_set():
            if time.time() - start > self._timeout_s:
                break
            thread.join(0.1)
        if "error" in result and self._run_dir is not None:
            replay_checkpoint_failed(self._run_dir, result["error"])
        if "path" not in result:
            logging.warning("The replay checkpoint was not taken (%s); the trainer checkpoint "
                            "goes ahead without it", result.get("error", "program stopping or "
                                                                "timed out"))
            return {"replay_checkpoint": None}
        return {"replay_checkpoint": result["path"],
                "replay_seconds": round(time.time() - start, 4),
                "replay_bytes": _directory_bytes(result["path"])}


def start_restored_server(tables_fn: Callable[[], Sequence[reverb.Table]], run_dir: str,
                          port: Optional[int] = None) -> Tuple[reverb.Server, Dict[str, Any]]:
    """A Reverb server checkpointing to the run directory, with the latest checkpoint loaded.

    A checkpoint Reverb cannot read is moved aside (to
    <run_dir>/checkpoints/replay-unreadable-<name>, never deleted) and the server starts empty, with a warning naming it. The
    returned record (also written to <run_dir>/checkpoints/replay_restore.json)
    says which checkpoint was loaded and how many items each table got back.
    """
    directory = replay_checkpoint_directory(run_dir)
    os.makedirs(directory, exist_ok=True)
    remove_partial_replay_checkpoints(run_dir)

    def make_server() -> reverb.Server:
        return reverb.Server(tables=tables_fn(), port=port,
                             checkpointer=reverb.checkpointers.DefaultCheckpointer(directory))

    latest = latest_replay_checkpoint(run_dir)
    error = None
    try:
        server = make_server()
    except RuntimeError as load_error:  # How Reverb reports an unreadable checkpoint.
        # Out of Reverb's directory: Reverb would load anything in it with a DONE file.
        moved_to = os.path.join(run_dir, "checkpoints",
                                f"{REPLAY_NODE}-unreadable-{os.path.basename(latest)}")
        shutil.move(latest, moved_to)
        error = (f"replay checkpoint {latest} cannot be read ({load_error}); moved it to "
                 f"{moved_to} and started with an empty replay")
        logging.warning("%s", error)
        latest = None
        server = make_server()
    sizes = {name: info.current_size
             for name, info in server.localhost_client().server_info().items()}
    record = {"checkpoint": latest, "items": sizes, "error": error, "time": time.time()}
    path = os.path.join(run_dir, "checkpoints", RESTORE_RECORD)
    with open(path + ".tmp", "w") as record_file:
        json.dump(record, record_file)
    os.replace(path + ".tmp", path)
    logging.info("Replay restored %s from %s", sizes, latest)
    return server, record


def save_replay(server: reverb.Server, run_dir: str) -> None:
    """Checkpoints every table of `server` and logs the save in the run's save log."""
    client = server.localhost_client()
    start = time.time()
    try:
        sizes = {name: info.current_size for name, info in client.server_info().items()}
        path = client.checkpoint()
    except Exception as error:  # pylint: disable=broad-except
        logging.warning("The replay checkpoint failed: %s", error)
        replay_checkpoint_failed(run_dir, error)
        return
    log_save(run_dir, {"node": REPLAY_NODE, "time": time.time(), "path": path,
                        "seconds": round(time.time() - start, 4),
                        "bytes": _directory_bytes(path), "items": sizes}, REPLAY_NODE)
    logging.info("Replay saved %s to %s", sizes, path)


# How long the server keeps serving after the program stops (see `ReplayNode.run`).
CLIENT_GRACE_S = 3 * POLL_INTERVAL_MS / 1000


class ReplayNode(lp.ReverbNode):
    """A Reverb node whose tables are restored from, and saved to, <run_dir>/checkpoints/replay.

    See `start_restored_server`; the tables are saved once more at program stop.
    """

    def __init__(self, priority_tables_fn: Callable[[], Sequence[reverb.Table]], run_dir: str):
        super().__init__(priority_tables_fn)
        self._run_dir = run_dir

    def run(self) -> None:
        port = lp_address.get_port_from_address(self._address.resolve())
        try:
            self._server, _ = start_restored_server(self._priority_tables_fn, self._run_dir, port)
        except Exception as error:  # pylint: disable=broad-except
            # Under local_mp nothing else would end the program: see `stop_program_after_failure`.
            stop_program_after_failure("replay (while starting)", error)
            raise
        lp.wait_for_stop()
        stopped_at = time.monotonic()
        save_replay(self._server, self._run_dir)
        # A client waiting for a sample when the server goes away waits for it to come back,
        # forever; serving a little longer lets every client's replay call return (they wait
        # in slices of POLL_INTERVAL_MS) and see the stop.
        time.sleep(max(0.0, CLIENT_GRACE_S - (time.monotonic() - stopped_at)))
