"""Runs a grid's unfinished runs as subprocesses, some at a time, with one progress line over the grid.

Each run is `python -m mava_systems.experiment.run_one ...` (an ordinary run
that resumes like any other) writing its output to `<out>/logs/<run>.log`.
A run is finished once it has saved its final evaluation at the grid's step
budget; finished runs are skipped, unfinished ones resume (and, when the budget
was raised, finished ones continue). SIGINT or SIGTERM stops the running runs
(they save their checkpoints) before the command exits.
"""

import dataclasses
import os
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, TextIO

from mava_systems import registry
from mava_systems.runs.run_directory import read_status
from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import run_one, systems
from mava_systems.terminal.progress import CLEAR_LINE, CountRate, format_duration, read_snapshot

LOGS_DIR = "logs"
POLL_S = 0.5
STOP_WAIT_S = 180.0


class Interrupted(Exception):
    """The grid was asked to stop (SIGINT or SIGTERM)."""


@dataclasses.dataclass
class GridOutcome:
    """What one command did: runs found finished, runs it finished, runs that failed (with their logs)."""

    already_finished: int
    finished: int
    failed: List[str]


def log_path(out: str, run: grid_lib.Run) -> str:
    """The file a run's output goes to."""
    family, task = grid_lib.split_environment(run.environment)
    return os.path.join(out, LOGS_DIR, f"{family}__{task}__{run.entry.label}__seed_{run.seed}.log")


def is_finished(run: grid_lib.Run, max_steps: int) -> bool:
    """Whether the run has saved its final evaluation at `max_steps` executor steps or more
    (one saved before its grid's budget was raised to `max_steps` does not count)."""
    if run_one.read_final_evaluation(run.run_dir) is None:
        return False
    return read_status(run.run_dir).counts.get("executor_steps", 0) >= max_steps


def run_command(grid: grid_lib.Grid, run: grid_lib.Run, launch_type: str,
                extra_flags: Sequence[str] = ()) -> List[str]:
    """The command line of one run: its system, environment, directory, step limit, seed and overrides."""
    system_class = registry.system_class(run.entry.system)
    overrides = grid.overrides.get(run.entry.label, {})
    return [sys.executable, "-m", "mava_systems.experiment.run_one",
            f"--system={run.entry.system}", f"--env={run.environment}",
            f"--run_dir={run.run_dir}", f"--lp_launch_type={launch_type}",
            f"--{systems.step_limit_flag(system_class)}={grid.max_executor_steps}",
            f"--seed={run.seed}", "--progress_interval_s=0",
            *(f"--{field}={value}" for field, value in sorted(overrides.items())),
            *extra_flags]


class GridProgress:
    """The grid's progress line: runs done, the running runs' steps, elapsed time, time left."""

    def __init__(self, runs: Sequence[grid_lib.Run], max_steps: int, stream: TextIO,
                 interval_s: float, is_tty: bool):
        self._total = len(runs)
        self._max_steps = max_steps
        self._stream = stream
        self._interval_s = interval_s
        self._is_tty = is_tty
        self._start = time.monotonic()
        self._last_report = -float("inf")
        self._rate = CountRate(window_s=120.0)

    def line(self, done: int, running: Sequence[grid_lib.Run], failed: int = 0) -> str:
        """The current line, from the running runs' logs (`failed` runs count as ended)."""
        now = time.monotonic()
        current = []
        steps_done = (done + failed) * self._max_steps
        for run in running:
            snapshot = read_snapshot(run.run_dir)
            steps = min(snapshot.executor_steps if snapshot else 0, self._max_steps)
            steps_done += steps
            current.append(f"{run.name} {steps:,}/{self._max_steps:,}")
        rate = self._rate.observe(now, steps_done)
        left = self._total * self._max_steps - steps_done
        remaining = (format_duration(left / rate) if rate else "n/a") if left > 0 else "0:00:00"
        parts = [f"runs done {done}/{self._total}" + (f" ({failed} failed)" if failed else "")]
        if current:
            parts.append("running: " + ", ".join(current))
        parts += [f"elapsed {format_duration(now - self._start)}", f"remaining {remaining}"]
        return " | ".join(parts)

    def report(self, done: int, running: Sequence[grid_lib.Run], failed: int = 0,
               force: bool = False) -> None:
        """Writes the line if `interval_s` has passed since the last one (or `force`)."""
        now = time.monotonic()
        if self._interval_s <= 0 or (not force and now - self._last_report < self._interval_s):
            return
        self._last_report = now
        line = self.line(done, running, failed)
        self._stream.write(CLEAR_LINE + line if self._is_tty else f"Grid: {line}\n")
        self._stream.flush()

    def end_line(self) -> None:
        """Ends a live line on a terminal before other output."""
        if self._is_tty and self._interval_s > 0:
            self._stream.write("\n")


def _raise_interrupted(signum: int, frame: object) -> None:
    del frame
    raise Interrupted(signal.Signals(signum).name)


def _stop(processes: Dict[subprocess.Popen, grid_lib.Run]) -> None:
    """Asks every running run to stop (SIGTERM: it saves its checkpoints) and waits for it."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_grid(grid: grid_lib.Grid, out: str, parallel: int = 1, launch_type: str = "local_mt",
             progress_interval_s: Optional[float] = None, extra_flags: Sequence[str] = (),
             stream: Optional[TextIO] = None) -> GridOutcome:
    """Runs every unfinished run of `grid` under `out`, `parallel` at a time.

    Raises:
      Interrupted: after stopping the running runs, on SIGINT or SIGTERM.
    """
    stream = stream or sys.stdout
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    if progress_interval_s is None:
        progress_interval_s = 1.0 if is_tty else 30.0
    runs = grid.runs(out)
    pending = [run for run in runs if not is_finished(run, grid.max_executor_steps)]
    for run in pending:  # Finished under a smaller budget: they continue.
        kept = run_one.set_aside_final_evaluation(run.run_dir)
        if kept:
            print(f"{run.name} continues to {grid.max_executor_steps} executor steps (its final "
                  f"evaluation so far is kept in {kept})", file=stream, flush=True)
    outcome = GridOutcome(already_finished=len(runs) - len(pending), finished=0, failed=[])
    print(f"Experiment in {out}: {len(runs)} runs, {outcome.already_finished} already finished, "
          f"{len(pending)} to run ({parallel} at a time)", file=stream, flush=True)
    if not pending:
        return outcome
    os.makedirs(os.path.join(out, LOGS_DIR), exist_ok=True)
    progress = GridProgress(runs, grid.max_executor_steps, stream, progress_interval_s, is_tty)
    processes: Dict[subprocess.Popen, grid_lib.Run] = {}
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGINT,
                                                                       signal.SIGTERM)}
    try:
        while pending or processes:
            while pending and len(processes) < parallel:
                run = pending.pop(0)
                path = log_path(out, run)
                with open(path, "a") as log_file:
                    log_file.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} launching {run.name}\n")
                    log_file.flush()
                    processes[subprocess.Popen(run_command(grid, run, launch_type, extra_flags),
                                               stdout=log_file, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL)] = run
            for process in [process for process in processes if process.poll() is not None]:
                run = processes.pop(process)
                if process.returncode == 0 and is_finished(run, grid.max_executor_steps):
                    outcome.finished += 1
                else:
                    outcome.failed.append(f"{run.name} (exit code {process.returncode}; "
                                          f"see {log_path(out, run)})")
                    progress.end_line()
                    print(f"Run failed: {outcome.failed[-1]}", file=stream, flush=True)
            progress.report(outcome.already_finished + outcome.finished, list(processes.values()),
                            len(outcome.failed))
            time.sleep(POLL_S)
        progress.report(outcome.already_finished + outcome.finished, [], len(outcome.failed),
                        force=True)
        progress.end_line()
    except Interrupted:
        progress.end_line()
        print("Stopping the running runs (they save checkpoints and resume on the next "
              "command)...", file=stream, flush=True)
        _stop(processes)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return outcome
