"""A run's progress in the launching terminal, read from the run directory's CSV logs.

The launching process does not hold the counter in every launch type (in
`local_mp` each node is its own process), so progress comes from the files
every node writes anyway: the newest row of each `logs/executor_<i>/logs.csv`
carries the program-wide counts, and the newest row of
`logs/evaluator/logs.csv` the latest evaluator return.
"""

import collections
import contextlib
import csv
import dataclasses
import glob
import io
import os
import sys
import threading
import time
from typing import Callable, Deque, Dict, Iterator, Optional, TextIO, Tuple

TTY_INTERVAL_S = 1.0
PLAIN_INTERVAL_S = 30.0
RATE_WINDOW_S = 30.0
_TAIL_BYTES = 16_384
CLEAR_LINE = "\r\x1b[K"  # Back to the line's start and erase it (on a terminal).


@dataclasses.dataclass
class ProgressSnapshot:
    """The counts and latest evaluator return a run's logs show."""

    executor_steps: int
    executor_episodes: int
    evaluator_return: Optional[float] = None
    # The trainer node has started (made its log directory) but logged no step yet: it is
    # building (tracing, compiling) its first step, or waiting for its first batch.
    trainer_pending: bool = False


def read_last_row(path: str) -> Optional[Dict[str, str]]:
    """The last complete row of a CSV file with a header, or None if it has none (yet)."""
    try:
        with open(path, "rb") as csv_file:
            header = csv_file.readline()
            if not header.endswith(b"\n"):
                return None
            size = os.fstat(csv_file.fileno()).st_size
            start = max(csv_file.tell(), size - _TAIL_BYTES)
            csv_file.seek(start)
            tail = csv_file.read(size - start)
    except OSError:  # Not there yet, or unreadable: no progress from it this time.
        return None
    lines = tail.split(b"\n")[:-1]  # The piece after the last newline may be half written.
    if start > len(header):
        lines = lines[1:]  # The first piece may start mid-row.
    if not lines or lines[-1] == header.rstrip(b"\n"):
        return None
    text = (header + lines[-1] + b"\n").decode("utf-8", errors="replace")
    try:
        return next(csv.DictReader(io.StringIO(text)), None)
    except csv.Error:
        return None


def _number(row: Dict[str, str], key: str) -> Optional[float]:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def read_snapshot(run_dir: str) -> Optional[ProgressSnapshot]:
    """The newest counts in the run's executor logs and its latest evaluator return.

    None until some executor has logged an episode.
    """
    latest: Optional[Tuple[float, float]] = None
    for path in glob.glob(os.path.join(run_dir, "logs", "executor_*", "logs.csv")):
        row = read_last_row(path)
        steps = None if row is None else _number(row, "executor_steps")
        if steps is not None and (latest is None or steps > latest[0]):
            latest = (steps, _number(row, "executor_episodes") or 0.0)
    if latest is None:
        return None
    evaluator_row = read_last_row(os.path.join(run_dir, "logs", "evaluator", "logs.csv"))
    evaluator_return = None if evaluator_row is None else _number(evaluator_row,
                                                                   "evaluation_return")
    return ProgressSnapshot(int(latest[0]), int(latest[1]), evaluator_return,
                            trainer_pending(run_dir))


def trainer_pending(run_dir: str) -> bool:
    """Whether the run's trainer node has started its logs but written no row yet (no step)."""
    trainer_logs = os.path.join(run_dir, "logs", "trainer")
    return os.path.isdir(trainer_logs) and read_last_row(
        os.path.join(trainer_logs, "logs.csv")) is None


def format_rate(steps_per_s: Optional[float], trainer_is_pending: bool) -> str:
    """The executor step rate's part of the progress line. Before the trainer's first step,
    a rate of 0 (executors wait for it: an on-policy queue is full) or none yet says that
    the trainer is building its first step instead."""
    if trainer_is_pending and not steps_per_s:
        return "trainer compiling its first step"
    rate = "n/a steps/s" if steps_per_s is None else f"{steps_per_s:,.1f} steps/s"
    return rate + (" (trainer: no step yet)" if trainer_is_pending else "")


def format_duration(seconds: float) -> str:
    """`h:mm:ss`, e.g. 3725 -> '1:02:05'."""
    seconds = int(round(max(seconds, 0.0)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def format_progress(snapshot: Optional[ProgressSnapshot], max_steps: Optional[int],
                    elapsed_s: float, steps_per_s: Optional[float]) -> str:
    """One progress line: steps of the maximum, episodes, latest return, rate, elapsed, remaining."""
    if snapshot is None:
        return f"waiting for the first executor episode | elapsed {format_duration(elapsed_s)}"
    steps = f"executor steps {snapshot.executor_steps:,}"
    if max_steps:
        percent = min(100.0, 100.0 * snapshot.executor_steps / max_steps)
        steps += f"/{max_steps:,} ({percent:.0f}%)"
    evaluator_return = ("n/a" if snapshot.evaluator_return is None
                        else f"{snapshot.evaluator_return:.3f}")
    parts = [steps, f"episodes {snapshot.executor_episodes:,}",
             f"eval return {evaluator_return}",
             format_rate(steps_per_s, snapshot.trainer_pending),
             f"elapsed {format_duration(elapsed_s)}"]
    if max_steps:
        left = max(max_steps - snapshot.executor_steps, 0)
        if left == 0:
            parts.append("remaining 0:00:00")
        elif steps_per_s:
            parts.append(f"remaining {format_duration(left / steps_per_s)}")
        else:
            parts.append("remaining n/a")
    return " | ".join(parts)


class CountRate:
    """A growing count's rate per second over the last `window_s` seconds of observations."""

    def __init__(self, window_s: float = RATE_WINDOW_S):
        self._window_s = window_s
        self._samples: Deque[Tuple[float, float]] = collections.deque()

    def observe(self, now: float, count: float) -> Optional[float]:
        """Records `count` at time `now` and returns the rate, None before two samples apart.

        A count lower than the last one (a run resumed from older counts) starts the
        window over: a rate is never negative.
        """
        if self._samples and count < self._samples[-1][1]:
            self._samples.clear()
        self._samples.append((now, count))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self._window_s:
            self._samples.popleft()
        (first_time, first_count), (last_time, last_count) = self._samples[0], self._samples[-1]
        if last_time <= first_time:
            return None
        return (last_count - first_count) / (last_time - first_time)


class ProgressReporter:
    """Writes the progress of the run in `run_dir` to `stream` from a background thread.

    On a terminal it keeps one line up to date (carriage return) every
    second; otherwise (CI, files) it writes a plain line every 30 seconds.
    `stop()` writes a final line.
    """

    def __init__(self, run_dir: str, max_steps: Optional[int], stream: Optional[TextIO] = None,
                 interval_s: Optional[float] = None, is_tty: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic):
        self._run_dir = run_dir
        self._max_steps = max_steps
        self._stream = stream or sys.stdout
        if is_tty is None:
            is_tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._is_tty = is_tty
        if interval_s is None:
            interval_s = TTY_INTERVAL_S if is_tty else PLAIN_INTERVAL_S
        self._interval_s = interval_s
        self._clock = clock
        self._start = clock()
        self._rate = CountRate()
        self._steps_per_s: Optional[float] = None
        self._stop_event = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _read_line(self) -> str:
        """Reads the logs, updates the step rate and returns the current progress line."""
        now = self._clock()
        snapshot = read_snapshot(self._run_dir)
        if snapshot is not None:
            self._steps_per_s = self._rate.observe(now, snapshot.executor_steps)
        return format_progress(snapshot, self._max_steps, now - self._start, self._steps_per_s)

    def report(self) -> str:
        """Writes the current progress line (in place on a terminal) and returns it."""
        line = self._read_line()
        if self._is_tty:
            self._stream.write(CLEAR_LINE + line)
        else:
            self._stream.write(f"Progress: {line}\n")
        self._stream.flush()
        return line

    def start(self) -> None:
        """Starts reporting every interval in a daemon thread."""
        self._start = self._clock()
        # The counts at launch (0, or a resumed run's) start the rate, so that a run
        # shorter than one interval still gets one in its final line.
        snapshot = read_snapshot(self._run_dir)
        self._rate.observe(self._start, snapshot.executor_steps if snapshot else 0)
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread and writes the final line (ending the live line on a terminal)."""
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join()
        self.report()
        if self._is_tty:
            self._stream.write("\n")
            self._stream.flush()

    def _run(self) -> None:
        while not self._stop_event.wait(self._interval_s):
            self.report()


@contextlib.contextmanager
def reporting_progress(run_dir: str, max_steps: Optional[int],
                       interval_s: Optional[float] = None,
                       stream: Optional[TextIO] = None) -> Iterator[None]:
    """Reports the run's progress to `stream` (default stdout) while the body runs, and a final line after it.

    `interval_s` None picks the default of `ProgressReporter`; 0 reports nothing.
    """
    if interval_s == 0:
        yield
        return
    reporter = ProgressReporter(run_dir, max_steps, stream=stream, interval_s=interval_s)
    reporter.start()
    try:
        yield
    finally:
        reporter.stop()
