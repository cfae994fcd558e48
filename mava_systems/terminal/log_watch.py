"""Finds the lines of a run's captured output that need the user's attention, and shows them.

Everything the program's processes print goes to `<run_dir>/output.log` (see
`mava_systems.terminal.console`). A `LogWatcher` follows that file and copies to the
terminal the lines a user must not miss: warnings and errors logged by this
project's code (absl's `W`/`E` lines naming one of its files), errors logged
by any Python code, and Launchpad's messages about crashed or stuck nodes.
Following the file rather than hooking the logging of one process covers
`local_mp`, where each node is its own process.
"""

import contextlib
import os
import re
import threading
from typing import Callable, FrozenSet, Iterable, Iterator, List, Optional

import mava_systems
import wrappers

WATCH_INTERVAL_S = 0.5
# Under local_mp Launchpad prefixes each node's lines with its group and index: "[trainer/0] ".
_NODE_PREFIX = r"(\[[\w./-]+\] )?"
# absl's Python log line: level letter, date, time, thread id, file:line] message.
_ABSL_LINE = re.compile(
    "^" + _NODE_PREFIX + r"([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ ([^:\s]+):\d+\] ?(.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Launchpad's own prints that say a node failed, hangs or is being stopped by the user.
_LAUNCHPAD = re.compile("^" + _NODE_PREFIX + r"(Node .* crashed:|Worker groups that did not terminate in time|"
                        r"User-requested termination|Press CTRL\+C|Killing entire runtime)")
_LEVEL_NAMES = {"W": "warning", "E": "error", "F": "fatal"}


def project_files(extra: Iterable[str] = ()) -> FrozenSet[str]:
    """The base names of this project's Python files (as absl's log lines name them)."""
    names = set(extra)
    for package in (mava_systems, wrappers):
        for _, _, files in os.walk(os.path.dirname(package.__file__)):
            names.update(name for name in files if name.endswith(".py") and name != "__init__.py")
    return frozenset(names)


def attention_line(line: str, own_files: FrozenSet[str]) -> Optional[str]:
    """What to show on the terminal for one captured output line, or None for noise."""
    line = _ANSI.sub("", line).strip()
    match = _ABSL_LINE.match(line)
    if match:
        node, level, source, message = match.groups()
        if level in "EF" or (level == "W" and source in own_files):
            return f"{_LEVEL_NAMES[level]}: {node or ''}{message}"
        return None
    if _LAUNCHPAD.match(line):
        return line
    return None


class LogWatcher:
    """Follows a log file from `offset` in a thread, passing each attention line to `show`."""

    def __init__(self, path: str, show: Callable[[str], None], offset: int = 0,
                 own_files: Optional[FrozenSet[str]] = None,
                 interval_s: float = WATCH_INTERVAL_S):
        self._path = path
        self._show = show
        self._offset = offset
        self._own_files = project_files() if own_files is None else own_files
        self._interval_s = interval_s
        self._partial = b""
        self._stop_event = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def poll(self) -> List[str]:
        """Reads the lines added since the last poll and shows those that need attention."""
        try:
            with open(self._path, "rb") as log_file:
                log_file.seek(self._offset)
                data = log_file.read()
        except OSError:
            return []
        self._offset += len(data)
        pieces = re.split(rb"[\r\n]", self._partial + data)
        self._partial = pieces.pop()  # The piece after the last line end may be half written.
        shown = []
        for piece in pieces:
            text = attention_line(piece.decode("utf-8", errors="replace"), self._own_files)
            if text is not None:
                self._show(text)
                shown.append(text)
        return shown

    def start(self) -> None:
        """Polls every interval in a daemon thread until `stop()`."""
        self._thread = threading.Thread(target=self._run, name="log-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread after a last poll."""
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join()
        self.poll()

    def _run(self) -> None:
        while not self._stop_event.wait(self._interval_s):
            self.poll()


@contextlib.contextmanager
def watching_log(path: Optional[str], offset: int, show: Callable[[str], None]) -> Iterator[None]:
    """Shows the attention lines `path` gets (from `offset`) while the body runs; nothing if None."""
    if path is None:
        yield
        return
    watcher = LogWatcher(path, show, offset)
    watcher.start()
    try:
        yield
    finally:
        watcher.stop()
