"""What a run directory already holds: its saved run description and its latest checkpoints.

A run directory is reused to continue a run. Before anything launches, the
system's description is compared with the saved `run.json`: a different
environment, agents or network shapes cannot fit the saved checkpoints, so
that is an error naming the difference (nothing is overwritten). Changed
hyper-parameters are allowed and reported.
"""

import csv
import dataclasses
import fcntl
import glob
import json
import os
import pickle
import shutil
import textwrap
from typing import IO, Any, Dict, List, Mapping, Optional, Tuple

from mava_systems.runs.checkpointing import latest_readable_checkpoint, read_checkpoint
from mava_systems.nodes.counting import COUNT_KEYS
from mava_systems.runs.disk_space import is_disk_full, no_room_error
from mava_systems.terminal.progress import read_last_row
from mava_systems.runs.replay_checkpointing import checkpoint_time, latest_replay_checkpoint

RUN_FILE = "run.json"
# Held (flock) by the program writing the run directory, for as long as it runs.
LOCK_FILE = ".lock"
# Replay and trainer checkpoints this close in time count as taken together.
REPLAY_SKEW_S = 60.0
CONFIG_FILE = "config.json"
# Where a log's rows beyond the counts a run resumed from are moved (see `roll_back_logs`).
ROLLED_BACK_FILE = "rolled_back.csv"


@dataclasses.dataclass
class RunStatus:
    """Whether a run starts fresh or continues, and from which counts and replay."""

    resumed: bool
    trainer_steps: int = 0
    counts: Dict[str, float] = dataclasses.field(default_factory=dict)
    # Seconds between the trainer's and the replay's latest checkpoints (None: no replay one).
    replay_age_s: Optional[float] = None
    replay_checkpoint: Optional[str] = None
    # Log files cut back to these counts at this launch: {path: rows moved to rolled_back.csv}.
    rolled_back_rows: Dict[str, int] = dataclasses.field(default_factory=dict)

    def reached_limit(self, max_executor_steps: Optional[int]) -> bool:
        """Whether the saved executor steps already reach `max_executor_steps` (None: no limit)."""
        return (max_executor_steps is not None
                and self.counts.get("executor_steps", 0) >= max_executor_steps)

    def summary(self, run_dir: str) -> str:
        """What this launch does: start fresh, or resume from which trainer step, counts and replay."""
        if not self.resumed:
            return f"Starting a fresh run in {run_dir}"
        counts = ", ".join(f"{key}={int(value)}" for key in COUNT_KEYS
                           if (value := self.counts.get(key)) is not None)
        lines = [f"Resuming the run in {run_dir} from trainer step {self.trainer_steps}"
                 + (f" ({counts})" if counts else "")]
        if self.replay_checkpoint is None:
            lines.append("Replay: no saved replay; it starts empty.")
        elif abs(self.replay_age_s or 0.0) <= REPLAY_SKEW_S:
            lines.append(f"Replay: restored from {self.replay_checkpoint}, saved with the "
                         "trainer checkpoint.")
        else:
            when = "before" if self.replay_age_s > 0 else "after"
            lines.append(f"Replay: restored from {self.replay_checkpoint}, saved "
                         f"{abs(self.replay_age_s):.0f} s {when} the trainer checkpoint.")
        if self.rolled_back_rows:
            rows = sum(self.rolled_back_rows.values())
            lines.append(f"Logs: {rows} row{'s' if rows != 1 else ''} logged after the saved "
                         f"counts (in {len(self.rolled_back_rows)} of logs/*/logs.csv) moved to "
                         f"logs/<node>/{ROLLED_BACK_FILE}; the logs continue from the counts.")
        return "\n".join(lines)


def check_writable(run_dir: str) -> None:
    """Creates `run_dir` if needed and checks a file can be written in it.

    Raises:
      ValueError: naming the directory, if it is a file or cannot be written.
    """
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(f"run directory {run_dir} is a file, not a directory; "
                         "use another --run_dir")
    probe = os.path.join(run_dir, ".write-test")
    try:
        os.makedirs(run_dir, exist_ok=True)
        with open(probe, "w") as probe_file:
            probe_file.write("ok")
        os.remove(probe)
    except OSError as error:
        if is_disk_full(error):
            raise no_room_error(run_dir, shutil.disk_usage(run_dir).free) from None
        raise ValueError(f"cannot write to run directory {run_dir}: {error.strerror or error}; "
                         "use another --run_dir") from None


# Run directories this process holds: {path: open lock file}. Module-level, not on the system
# object, which is pickled into every node.
_HELD: Dict[str, IO[str]] = {}


def hold(run_dir: str) -> None:
    """Marks `run_dir` as written by this process until it exits (re-entrant in one process).

    Raises:
      ValueError: if another running program holds it: two programs must never
        write one run directory.
    """
    run_dir = os.path.abspath(run_dir)
    if run_dir in _HELD and os.path.exists(os.path.join(run_dir, LOCK_FILE)):
        return
    lock_file = open(os.path.join(run_dir, LOCK_FILE), "a+")  # pylint: disable=consider-using-with
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock_file.seek(0)
        holder = lock_file.read().strip() or "unknown"
        lock_file.close()
        raise ValueError(f"{run_dir} is in use by another running program (pid {holder}): two "
                         "programs must never write one run directory. Wait for it to end, or "
                         "use another --run_dir.") from None
    lock_file.seek(0)
    lock_file.truncate()
    lock_file.write(str(os.getpid()))
    lock_file.flush()
    _HELD[run_dir] = lock_file


def release(run_dir: str) -> None:
    """Stops holding `run_dir` (see `hold`); the lock also ends with the process."""
    lock_file = _HELD.pop(os.path.abspath(run_dir), None)
    if lock_file is not None:
        lock_file.close()


def move_aside(run_dir: str) -> Optional[str]:
    """Renames a non-empty run directory to `<run_dir>.old-<n>` and returns the new name."""
    if not os.path.isdir(run_dir) or not set(os.listdir(run_dir)) - {LOCK_FILE}:
        return None
    index = 1
    while os.path.exists(f"{run_dir}.old-{index}"):
        index += 1
    os.rename(run_dir, f"{run_dir}.old-{index}")
    return f"{run_dir}.old-{index}"


def drop_partial_log_rows(run_dir: str) -> List[str]:
    """Cuts the unfinished last row a killed run left in its CSV logs; returns the files cut.

    Without this, the resumed run's first row would be glued onto the partial one.
    """
    repaired = []
    for path in glob.glob(os.path.join(run_dir, "logs", "*", "logs.csv")):
        with open(path, "rb+") as log_file:
            content = log_file.read()
            if content and not content.endswith(b"\n"):
                log_file.truncate(content.rfind(b"\n") + 1)
                repaired.append(path)
    return repaired


def _log_files(run_dir: str) -> List[str]:
    return sorted(glob.glob(os.path.join(run_dir, "logs", "*", "logs.csv")))


def _row_counts(header: List[str], line: bytes) -> Dict[str, float]:
    """The counts of `COUNT_KEYS` one CSV line holds (those it cannot say are left out)."""
    try:
        values = next(csv.reader([line.decode("utf-8", errors="replace")]), [])
    except csv.Error:
        return {}
    counts = {}
    for key, value in zip(header, values):
        if key in COUNT_KEYS:
            try:
                counts[key] = float(value)
            except ValueError:
                pass
    return counts


def _read_log(path: str) -> Tuple[bytes, List[str], List[bytes]]:
    """A CSV log's header line, its column names and its complete data lines."""
    with open(path, "rb") as log_file:
        content = log_file.read()
    lines = content.split(b"\n")[:-1]  # After the last newline: nothing, or a partial row.
    if not lines:
        return b"", [], []
    header = lines[0]
    columns = next(csv.reader([header.decode("utf-8", errors="replace")]), [])
    return header, columns, lines[1:]


def counts_past(row: Mapping[str, Any], counts: Mapping[str, float]) -> bool:
    """Whether a logged row (CSV text or numbers) counts past `counts` in any of `COUNT_KEYS`."""
    for key in COUNT_KEYS:
        try:
            if float(row[key]) > counts.get(key, 0):
                return True
        except (KeyError, TypeError, ValueError):
            pass
    return False


def logged_counts(run_dir: str) -> Dict[str, float]:
    """The highest value of each of `COUNT_KEYS` in the last rows of the run's CSV logs (the
    highest of each log: its counts never go backwards); empty without any."""
    highest: Dict[str, float] = {}
    for path in _log_files(run_dir):
        row = read_last_row(path) or {}
        for key in COUNT_KEYS:
            try:
                value = float(row[key])
            except (KeyError, TypeError, ValueError):
                continue
            highest[key] = max(value, highest.get(key, value))
    return highest


def check_logs_have_checkpoints(run_dir: str, status: RunStatus) -> None:
    """Refuses to start a run where the logs of one with no checkpoint left are.

    Without trainer and counter checkpoints (removed), a launch would start a
    fresh run under the old run's logs (executor steps going 3000 -> 25 in the
    same CSV files, negative rates, the old run's evaluation rounds in the
    summary), so nothing is launched and nothing is changed. (A run with a
    trainer checkpoint but none of its counter, e.g. killed before its first,
    resumes: its logs are cut back to the counts, see `roll_back_logs`.)

    Raises:
      ValueError: naming the directory, how far its logs go, and what to do.
    """
    if status.resumed:
        return
    logged = logged_counts(run_dir)
    if not any(logged.values()):
        return
    steps = ", ".join(f"{key}={int(value):,}" for key, value in logged.items() if value)
    raise ValueError(
        f"{run_dir} holds the logs of a run ({steps}) but no trainer or counter checkpoint "
        f"to continue it from (none in {os.path.join(run_dir, 'checkpoints')}: were they "
        "removed?); a new run there would mix into the old logs. Start over with --start_fresh "
        "(the old run is moved to <run_dir>.old-<n>, not deleted), restore the checkpoints, or "
        "use another --run_dir; nothing was changed.")


def resumed_counts(status: RunStatus, label: str) -> Dict[str, float]:
    """The counts the rows of node `label`'s log continue from when `status` resumes: the
    counter's, except the trainer's own step count (restored with its weights) in its log."""
    counts = {key: float(value) for key, value in status.counts.items()}
    if label == "trainer":
        counts["trainer_steps"] = float(status.trainer_steps)
    return counts


def roll_back_logs(run_dir: str, status: RunStatus) -> Dict[str, int]:
    """Cuts each CSV log back to the counts `status` resumes from (see `resumed_counts`), so
    that its counts never go backwards.

    A run continues from its latest counter and trainer checkpoints, which can be
    older than the last rows its nodes logged (a kill, a failed save, counts not
    yet synced at a stop). From the first row counting past them (any of
    `COUNT_KEYS`), rows are moved to `rolled_back.csv` beside the log (kept, not
    deleted); the resumed run's rows follow the ones kept. Returns the rows
    moved per log file (only files that were cut).
    """
    moved = {}
    for path in _log_files(run_dir):
        counts = resumed_counts(status, os.path.basename(os.path.dirname(path)))
        if not counts_past(read_last_row(path) or {}, counts):
            continue  # The usual case, read from the file's end: nothing to cut.
        header, columns, lines = _read_log(path)
        cut = next((index for index, line in enumerate(lines)
                    if counts_past(_row_counts(columns, line), counts)), None)
        if cut is None:
            continue
        aside = os.path.join(os.path.dirname(path), ROLLED_BACK_FILE)
        with open(aside, "ab") as aside_file:
            if aside_file.tell() == 0:
                aside_file.write(header + b"\n")
            aside_file.write(b"".join(line + b"\n" for line in lines[cut:]))
        with open(path + ".tmp", "wb") as log_file:
            log_file.write(b"".join(line + b"\n" for line in [header, *lines[:cut]]))
        os.replace(path + ".tmp", path)
        moved[path] = len(lines) - cut
    return moved


def _latest(run_dir: str, node: str) -> Optional[str]:
    return latest_readable_checkpoint(os.path.join(run_dir, "checkpoints", node))


def read_status(run_dir: str) -> RunStatus:
    """Reads the trainer step, counts and replay checkpoint a resumed run continues from.

    Raises:
      CheckpointError: if a node has checkpoints but none of them can be read.
    """
    trainer, counter = _latest(run_dir, "trainer"), _latest(run_dir, "counter")
    if trainer is None and counter is None:
        return RunStatus(resumed=False)
    status = RunStatus(resumed=True)
    if trainer is not None:
        for name, value in read_checkpoint(trainer).items():
            if name.startswith("num_steps/"):
                status.trainer_steps = int(value)
    if counter is not None:
        for name, value in read_checkpoint(counter).items():
            if name.startswith("counter/"):
                state = pickle.loads(value)
                # Counts not yet synced to the cache are in "counts"; both make the total.
                status.counts = {key: state["cache"].get(key, 0) + state["counts"].get(key, 0)
                                 for key in set(state["cache"]) | set(state["counts"])}
    replay = latest_replay_checkpoint(run_dir)
    if replay is not None:
        status.replay_checkpoint = replay
        if trainer is not None:
            status.replay_age_s = _index_time(trainer) - checkpoint_time(replay)
    return status


def _index_time(checkpoint: str) -> float:
    return os.path.getmtime(checkpoint + ".index")


def check_description(run_dir: str, description: Mapping[str, Any],
                      must_match: List[str],
                      recorded_before: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Checks `description` against the run.json saved in `run_dir`, if there is one.

    Returns the names of the changed entries that may change between launches.
    `recorded_before` maps entries added since some runs were saved to the value those runs
    had: a refusal names the ones the saved run lacks and that differ now.

    Raises:
      ValueError: if run.json is damaged, or an entry named in `must_match` differs
        from the saved run.
    """
    path = os.path.join(run_dir, RUN_FILE)
    if not os.path.exists(path):
        return []
    description = json.loads(json.dumps(description, default=str))  # As it would be read back.
    try:
        with open(path) as run_file:
            saved = json.load(run_file)
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError.
        raise ValueError(
            f"{path} is damaged ({error}): it says which run the directory holds. Restore "
            "it, start over with --start_fresh (the old run is moved aside, not deleted), "
            "or use another --run_dir; nothing was changed.") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path} is damaged (not a JSON object); restore it, use "
                         "--start_fresh or another --run_dir; nothing was changed.")
    mismatched = [key for key in must_match if saved.get(key) != description.get(key)]
    if mismatched:
        details = "; ".join(f"{key}: saved {saved.get(key)!r}, now {description.get(key)!r}"
                            for key in mismatched)
        older = {key: value for key, value in (recorded_before or {}).items()
                 if key not in saved and description.get(key) != value}
        hint = ""
        if older:
            settings = ", ".join(f"{key.rpartition('.')[2]}={value}"
                                 for key, value in sorted(older.items()))
            hint = (f" It was saved before {', '.join(sorted(older))} existed, and ran as "
                    f"{settings}: launch with those settings to continue it.")
        raise ValueError(
            f"{run_dir} holds a run that this configuration cannot continue ({details}).{hint} "
            "Use another --run_dir; the saved run was left untouched.")
    return sorted(key for key in set(saved) | set(description)
                  if key not in must_match and saved.get(key) != description.get(key))


def save_description(run_dir: str, description: Mapping[str, Any]) -> None:
    """Saves `description` as `<run_dir>/run.json` (atomically)."""
    path = os.path.join(run_dir, RUN_FILE)
    os.makedirs(run_dir, exist_ok=True)
    with open(path + ".tmp", "w") as run_file:
        json.dump(description, run_file, indent=2, sort_keys=True, default=str)
    os.replace(path + ".tmp", path)


def check_and_save_description(run_dir: str, description: Mapping[str, Any],
                               must_match: List[str]) -> List[str]:
    """Checks `description` (see `check_description`), then saves it as run.json.

    Returns the names of the changed entries that may change between launches.
    """
    changed = check_description(run_dir, description, must_match)
    save_description(run_dir, description)
    return changed


def save_run_config(run_dir: str, run_config: Mapping[str, Any]) -> str:
    """Writes the settings a run was launched with as `<run_dir>/config.json`; returns its path."""
    path = os.path.join(run_dir, CONFIG_FILE)
    os.makedirs(run_dir, exist_ok=True)
    with open(path + ".tmp", "w") as config_file:
        json.dump(run_config, config_file, indent=2, default=str)
    os.replace(path + ".tmp", path)
    return path


def format_run_config(run_config: Mapping[str, Any], width: int = 100) -> str:
    """`key=value` pairs, wrapped and indented; the fields of `config` are listed unprefixed."""
    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, default=str)

    items = []
    for key, value in run_config.items():
        if key == "config" and isinstance(value, Mapping):
            items.extend(f"{name}={text(item)}" for name, item in value.items())
        else:
            items.append(f"{key}={text(value)}")
    return textwrap.fill(" ".join(items), width=width, initial_indent="  ",
                         subsequent_indent="  ", break_on_hyphens=False)
