"""A quiet launching terminal: library output goes to the run's log file, the terminal keeps what matters.

A program calls `quiet_terminal()` first thing (before TensorFlow is imported,
so that its start-up messages are caught too). From then on file descriptors
1 and 2 of the process point at a log file, so everything the libraries print
(TensorFlow's C++ logging, Gym's notices, absl INFO lines of every node,
Launchpad's stop countdown, Reverb's checkpointer) and everything child
processes print (`local_mp` nodes inherit the descriptors) lands there and
never breaks the progress line. Until the run directory is known the log is a
temporary file; `attach_run_dir` moves it to `<run_dir>/output.log`.

What the user should see goes to `terminal()` / `terminal_errors()`, copies of
the original stdout and stderr: the header, the progress line, warnings that
need attention (see `mava_systems.terminal.log_watch`) and the summary. `--verbose` (or
an absl verbosity flag) leaves the terminal as it was.
"""

import atexit
import errno
import io
import os
import re
import sys
import tempfile
import threading
from typing import Iterable, Optional, Sequence, Set, TextIO

LOG_FILE = "output.log"
# Command-line flags that ask for the libraries' output on the terminal.
VERBOSE_FLAGS = ("verbose", "v", "verbosity", "alsologtostderr", "logtostderr", "stderrthreshold")
CLEAR_LINE = "\r\x1b[K"  # Back to the line's start and erase it (on a terminal).

# Start-up lines that are noise even when a program stops before its run starts (a bad flag,
# --help): TensorFlow's C++ log lines, absl INFO lines, Gym's deprecation notice.
_NOISE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] |I\d{4} \d\d:\d\d:\d\d\.\d+ |"
    r"Gym has been unmaintained|Please upgrade to Gymnasium|See the migration guide at "
    r"https://gymnasium)")


def verbose_requested(argv: Sequence[str]) -> bool:
    """Whether `argv` asks for the libraries' output on the terminal (`--verbose`, `-v=1`, ...)."""
    for argument in argv[1:]:
        if argument == "--":
            break
        name = argument.lstrip("-").split("=", 1)[0]
        if argument.startswith("-") and name in VERBOSE_FLAGS:
            return not (name == "verbose" and argument.split("=", 1)[1:] in (["false"], ["0"]))
    return False


def is_startup_noise(line: str) -> bool:
    """Whether a line printed before the run started is library noise (not an error or help)."""
    return bool(_NOISE.match(line))


class TerminalStream(io.TextIOBase):
    """A text stream to the launching terminal whose writes from several threads never interleave."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            written = self._stream.write(text)
            self._stream.flush()
        return written

    def flush(self) -> None:
        with self._lock:
            self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def write_line(self, text: str) -> None:
        """Writes one whole line; on a terminal it first clears a live progress line."""
        self.write((CLEAR_LINE if self.isatty() else "") + text + "\n")


class DropsWritesOnFullDisk:
    """`stream` (the process's stdout or stderr, captured in a log file), except that what
    cannot be written because the log's disk is full is dropped instead of raising.

    Any `print` would otherwise raise there, e.g. Launchpad's stop countdown in
    the launcher's signal handler, ending the launcher before its summary.
    """

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.dropped = False

    def _tolerate_full_disk(self, error: OSError) -> None:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise error
        self.dropped = True

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            self._tolerate_full_disk(error)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            self._tolerate_full_disk(error)

    def __getattr__(self, name: str):  # fileno, isatty, encoding, buffer, reconfigure, ...
        return getattr(self._stream, name)


class OutputCapture:
    """Points this process's stdout and stderr (descriptors 1 and 2) at a log file.

    The original descriptors are kept as `terminal` and `terminal_errors`.
    """

    def __init__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.terminal = TerminalStream(self._reopen(os.dup(1), sys.stdout))
        self.terminal_errors = TerminalStream(self._reopen(os.dup(2), sys.stderr))
        pending, self.log_path = tempfile.mkstemp(prefix="mava-output-", suffix=".log")
        self._pending = True
        # Lines `say` showed on the terminal before the run started: not shown again at exit.
        self.said: Set[str] = set()
        self.launch_offset = 0  # Where this launch's output starts in the log.
        self._redirect(pending)
        os.close(pending)
        # Line by line, so the log reads in order and a watcher sees whole lines soon.
        sys.stdout.reconfigure(line_buffering=True)
        sys.stdout = DropsWritesOnFullDisk(sys.stdout)
        sys.stderr = DropsWritesOnFullDisk(sys.stderr)

    @staticmethod
    def _reopen(descriptor: int, like: TextIO) -> TextIO:
        return open(descriptor, "w", encoding=getattr(like, "encoding", None) or "utf-8",
                    errors="replace", buffering=1, closefd=True)

    @staticmethod
    def _redirect(descriptor: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)

    @property
    def attached(self) -> bool:
        """Whether the log is in a run directory yet (not the temporary file)."""
        return not self._pending

    def attach(self, run_dir: str, header: str = "") -> str:
        """Moves the log to `<run_dir>/output.log` (appending to an earlier launch's); its path."""
        path = os.path.join(run_dir, LOG_FILE)
        if os.path.abspath(path) == os.path.abspath(self.log_path):
            return path
        os.makedirs(run_dir, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        self.launch_offset = os.lseek(descriptor, 0, os.SEEK_END)
        with open(self.log_path, "rb") as earlier:
            os.write(descriptor, header.encode() + earlier.read())
        self._redirect(descriptor)
        os.close(descriptor)
        if self._pending:
            os.remove(self.log_path)
        self._pending, self.log_path = False, path
        return path

    def discard_startup_output(self) -> None:
        """Drops what was captured before the run started."""
        if self._pending:
            os.remove(self.log_path)
            self._pending = False

    def release_startup_output(self) -> None:
        """Shows what a program that never reached its run printed (help, errors), minus noise."""
        if not self._pending:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        with open(self.log_path, errors="replace") as pending:
            lines = [line for line in pending
                     if not is_startup_noise(line) and line.rstrip("\n") not in self.said]
        self.terminal_errors.write("".join(lines))
        os.remove(self.log_path)
        self._pending = False


_capture: Optional[OutputCapture] = None


def quiet_terminal(argv: Optional[Sequence[str]] = None) -> bool:
    """Sends the process's output to a log file unless `argv` (default sys.argv) asks to be verbose.

    Safe to call more than once; returns whether the output is captured.
    """
    global _capture
    if _capture is not None:
        return True
    if verbose_requested(sys.argv if argv is None else argv):
        return False
    _capture = OutputCapture()
    atexit.register(_at_exit)
    previous_hook = sys.excepthook

    def excepthook(kind, value, traceback):  # The traceback goes to the log; a line says so.
        previous_hook(kind, value, traceback)
        name = "interrupted" if issubclass(kind, KeyboardInterrupt) else f"{kind.__name__}: {value}"
        report_error(f"error: {name} (the traceback is in {_capture.log_path})")

    sys.excepthook = excepthook
    return True


def _at_exit() -> None:
    if _capture is not None:
        _capture.release_startup_output()


def is_quiet() -> bool:
    """Whether the output is being captured (see `quiet_terminal`)."""
    return _capture is not None


def attach_run_dir(run_dir: str, header: str = "") -> Optional[str]:
    """Moves the captured output to `<run_dir>/output.log` (after `header`); its path, or None."""
    if _capture is None:
        return None
    return _capture.attach(run_dir, header)


def log_path() -> Optional[str]:
    """Where the captured output goes now, or None if nothing is captured."""
    return None if _capture is None else _capture.log_path


def launch_offset() -> int:
    """Where this launch's output starts in the log file (earlier launches' precede it)."""
    return 0 if _capture is None else _capture.launch_offset


def terminal() -> TextIO:
    """The launching terminal's stdout (sys.stdout when nothing is captured)."""
    return sys.stdout if _capture is None else _capture.terminal


def terminal_errors() -> TextIO:
    """The launching terminal's stderr (sys.stderr when nothing is captured)."""
    return sys.stderr if _capture is None else _capture.terminal_errors


def _write_line(stream: TextIO, text: str) -> None:
    if isinstance(stream, TerminalStream):
        stream.write_line(text)
    else:
        stream.write((CLEAR_LINE if stream.isatty() else "") + text + "\n")
        stream.flush()


def say(lines: Iterable[str]) -> None:
    """Prints lines on the terminal (and, when captured, in the log too, for its reader's context)."""
    text = "\n".join(lines)
    _write_line(terminal(), text)
    if _capture is not None:
        _capture.said.update(text.splitlines())
        print(text, flush=True)


def report_error(text: str) -> None:
    """Prints a warning or error line on the terminal's stderr (the log has its details)."""
    _write_line(terminal_errors(), text)


def fail(text: str, exit_code: int = 1) -> None:
    """Prints an error line on the terminal's stderr and exits (before any run started).

    What the libraries printed up to here is start-up noise and is dropped.
    """
    report_error(text)
    if _capture is not None and not _capture.attached:
        _capture.discard_startup_output()
    sys.exit(exit_code)
