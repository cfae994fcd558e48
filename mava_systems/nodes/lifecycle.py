"""How nodes stop together.

When a program stops, every node's loop ends at once. Nodes that serve others
(the counter, the trainer, caches) keep serving for `STOP_GRACE_S` so that the
last calls of their clients complete instead of waiting forever on a server
that has gone; blocking replay calls raise `ProgramStopping` (see replay.py).

A stop can come at any moment of start-up, while other nodes are still being
built: a call to a node that has already finished (a courier call, a replay
sample) then never returns, and a node blocked in one would never end. So node
loops and their start-up calls run watched (`run_watched`, `call_unless_stopped`):
once the program stops, they are given up after a grace instead of waited for.
"""

import contextlib
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Optional, Tuple, TypeVar

from absl import logging
import launchpad as lp
from launchpad import context as lp_context
from launchpad.launch import worker_manager

STOP_GRACE_S = 3.0
# Names of the loops `run_watched` gave up in this process.
_ABANDONED: list = []
# Set while the process has work to do after its program (see `work_after_the_program`).
_WORK_AFTER_THE_PROGRAM: list = []
# Seconds a node's loop gets, once the program stops, to return by itself while it does not
# move (see `run_watched`). A blocked replay call returns within 1 s while its server is up
# (3 s after the stop).
ABANDON_AFTER_S = 5.0
# Seconds a loop still working after the stop (a last step or checkpoint on a busy machine)
# gets at most: well within the launcher's termination notice (60 s).
ABANDON_AT_MOST_S = 30.0
# A loop whose process used this share of a core since the last look is working.
_WORKING_CPU_SHARE = 0.05
_LOOK_INTERVAL_S = 0.2
T = TypeVar("T")
# Whether the launcher that started this process restarts a node that fails (see
# `failed_nodes_are_restarted`), so that a failure must not stop the program.
_FAILED_NODES_RESTART = False
# The environment variable naming the file where nodes that stop the program because they
# failed say so, one line each (set by the launching process: see `launch.launch`).
NODE_FAILURES_FILE_ENV = "MAVA_SYSTEMS_NODE_FAILURES_FILE"
# The environment variable giving node processes the launcher's termination notice, in
# seconds (set by the launching process: see `launch.launch` and `take_the_launchers_notice`).
NODE_NOTICE_ENV = "MAVA_SYSTEMS_NODE_NOTICE_S"


class ProgramStopping(Exception):
    """Raised out of a blocking call because the program is stopping."""


def program_stop_event() -> threading.Event:
    """The running program's stop event; outside a Launchpad node, an event never set."""
    try:
        return lp.stop_event()
    except RuntimeError:
        return threading.Event()


def keep_serving_after_stop(stopped_at: float) -> None:
    """Called by serving nodes at the end of `run()`: lets clients finish their last calls.

    Serves until `STOP_GRACE_S` after `stopped_at` (a `time.monotonic()` taken
    when the node saw the stop), so that saving at the stop eats into the grace.
    """
    time.sleep(max(0.0, STOP_GRACE_S - (time.monotonic() - stopped_at)))


def _in_daemon_thread(function: Callable[[], Any], name: str) -> Any:
    """Starts `function` in a daemon thread that sees this node's Launchpad worker manager."""
    # Launchpad keeps the worker manager (`lp.stop_event()`) and the launch context (`lp.stop()`)
    # per thread: the new thread gets this one's, as Launchpad's own thread workers do.
    manager = getattr(worker_manager._WORKER_MANAGERS, "manager", None)  # pylint: disable=protected-access
    launch_context = getattr(lp_context._LAUNCH_CONTEXT, "lp_context", None)  # pylint: disable=protected-access
    outcome: dict = {}

    def target() -> None:
        if manager is not None:
            worker_manager._WORKER_MANAGERS.manager = manager  # pylint: disable=protected-access
        if launch_context is not None:
            lp_context.set_context(launch_context)
        try:
            outcome["result"] = function()
        except BaseException as error:  # pylint: disable=broad-except
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True, name=name)
    thread.start()
    return thread, outcome


def _stack_of(thread: threading.Thread) -> Tuple[Tuple[Any, int], ...]:
    """Where `thread` is now: (code, line) of each of its frames, innermost first."""
    frame = sys._current_frames().get(thread.ident)  # pylint: disable=protected-access
    stack = []
    while frame is not None:
        stack.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return tuple(stack)


def _wait_watched(thread: threading.Thread, grace_s: float,
                  at_most_s: float = ABANDON_AT_MOST_S) -> bool:
    """Waits for `thread`; once the program stops, until it has not moved for `grace_s` (or
    for `at_most_s` in all). True if it ended.

    It moves while its Python stack changes or its process computes (uses CPU: a compiled
    step or a checkpoint write runs in other threads); a call waiting on a node that has
    gone does neither.
    """
    stop_event = program_stop_event()
    while thread.is_alive() and not stop_event.is_set():
        thread.join(_LOOK_INTERVAL_S)
    started = last_moved = time.monotonic()
    stack, cpu_s = _stack_of(thread), time.process_time()
    while thread.is_alive():
        now = time.monotonic()
        if now - last_moved >= grace_s or now - started >= at_most_s:
            return False
        thread.join(min(_LOOK_INTERVAL_S, grace_s))
        new_stack, new_cpu_s = _stack_of(thread), time.process_time()
        if new_stack != stack or \
                new_cpu_s - cpu_s > _WORKING_CPU_SHARE * (time.monotonic() - now):
            last_moved = time.monotonic()
        stack, cpu_s = new_stack, new_cpu_s
    return True


def where_it_waits(thread: threading.Thread, frames: int = 4) -> str:
    """`thread`'s innermost `frames` frames on one line: "file.py:12 in f < file.py:30 in g"."""
    frame = sys._current_frames().get(thread.ident)  # pylint: disable=protected-access
    if frame is None:
        return "?"
    summary = traceback.extract_stack(frame)[-frames:]
    return " < ".join(f"{os.path.basename(entry.filename)}:{entry.lineno} in {entry.name}"
                      for entry in reversed(summary))


def run_watched(loop: Callable[[], None], name: str, grace_s: float = ABANDON_AFTER_S) -> bool:
    """Runs a node's `loop` until it returns; gives it up once the program has stopped and the
    loop has not moved for `grace_s` (see `_wait_watched`).

    Returns True if `loop` returned (its exception, if any, is raised here),
    False if it was given up: it is then blocked on a node that has gone, and
    is left in its daemon thread so that this node can still end. A one-line
    warning says where it waits.
    """
    thread, outcome = _in_daemon_thread(loop, name)
    if not _wait_watched(thread, grace_s):
        logging.warning("%s did not return after the program stopped and has not moved for "
                        "%.0f s (blocked on a node that has gone); ending without it. It waits "
                        "in %s", name, grace_s, where_it_waits(thread))
        _ABANDONED.append(name)
        return False
    if "error" in outcome:
        stop_program_after_failure(name, outcome["error"])
        raise outcome["error"]
    return True


def failed_nodes_are_restarted() -> None:
    """Says that this process's launcher restarts its node when it fails (the Ray launcher
    does): a failure then ends the node only, and `stop_program_after_failure` does nothing."""
    global _FAILED_NODES_RESTART
    _FAILED_NODES_RESTART = True


def stop_program_after_failure(name: str, error: BaseException) -> None:
    """Stops the whole program because `name` failed with `error`; nothing if `error` is the
    stop itself (`ProgramStopping`), if the program is stopping already, or if the launcher
    restarts failed nodes (see `failed_nodes_are_restarted`).

    Under `local_mp` Launchpad does not notice a node's process ending with an
    error (it cannot read its exit status): the other nodes would wait on the
    failed one forever (e.g. a trainer on an empty replay, the evaluator
    evaluating the same policy) instead of the run ending with the error.
    """
    if isinstance(error, ProgramStopping) or program_stop_event().is_set():
        return
    if _FAILED_NODES_RESTART:
        logging.error("%s failed (%s: %s); the launcher restarts its node", name,
                      type(error).__name__, error)
        return
    logging.error("%s failed (%s: %s); stopping the program", name, type(error).__name__, error)
    record_node_failure(f"{name} failed: {type(error).__name__}: {error}")
    try:
        lp.stop()
    except Exception as stop_error:  # pylint: disable=broad-except
        logging.warning("could not stop the program after %s failed: %s", name, stop_error)


def record_node_failure(text: str) -> None:
    """Adds `text` to the launching process's node failures file (if it asked for one)."""
    path = os.environ.get(NODE_FAILURES_FILE_ENV)
    if not path:
        return
    try:
        with open(path, "a") as failures_file:
            failures_file.write(" ".join(text.split()) + "\n")
    except OSError as write_error:
        logging.warning("could not record the failure in %s: %s", path, write_error)


def take_the_launchers_notice() -> None:
    """Gives this node process the termination notice its launcher has (`NODE_NOTICE_ENV`).

    Launchpad 0.5.0 starts each `local_mp` node process with its own default
    notice (10 s), whatever `--lp_termination_notice_secs` the launcher was
    given: the process then kills itself 10 s after its stop signal, cutting
    short e.g. the trainer's final checkpoint while its first step is still
    being traced. (The flag cannot be passed as a process argument: Launchpad's
    `flags_utils` fails on absl flags among them.) Nothing if the variable is
    not set or this process has no main worker manager.
    """
    value = os.environ.get(NODE_NOTICE_ENV)
    manager = getattr(worker_manager._WORKER_MANAGERS, "manager", None)  # pylint: disable=protected-access
    if not value or manager is None:
        return
    # Only a process's main manager (the node process's own) has a notice; others have -1.
    if manager._termination_notice_secs > 0:  # pylint: disable=protected-access
        manager._termination_notice_secs = int(float(value))  # pylint: disable=protected-access


class StopsProgramIfBuildFails:
    """A node's constructor, run in its own process (`local_mp`), that first takes the
    launcher's termination notice (`take_the_launchers_notice`), and stops the whole program
    if it raises (while the program is not stopping), then raises: the node's process would
    otherwise end unseen, and the nodes waiting on it would wait forever."""

    def __init__(self, constructor: Callable[..., Any], name: str):
        self.constructor = constructor
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        take_the_launchers_notice()
        try:
            return self.constructor(*args, **kwargs)
        except Exception as error:  # pylint: disable=broad-except
            stop_program_after_failure(f"{self.name} (while being built)", error)
            raise


def call_unless_stopped(function: Callable[[], T], name: str,
                        default: Optional[T] = None) -> Optional[T]:
    """`function()`, or `default` if the program stops first (e.g. a start-up call to a node
    that may already have finished)."""
    thread, outcome = _in_daemon_thread(function, name)
    if not _wait_watched(thread, grace_s=1.0, at_most_s=1.0):
        return default
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result", default)


def exit_if_loops_were_abandoned(exit_code: int = 0, final: bool = False) -> None:
    """Ends the process now (with `exit_code`) if `run_watched` gave up a loop in it.

    A given-up loop stays blocked inside a Reverb or gRPC call; tearing the
    interpreter down around it can abort the process ("terminate called without
    an active exception") after a clean stop. Call it once the program is over.
    Inside `work_after_the_program` only a `final` call ends the process.
    """
    if _ABANDONED and (final or not _WORK_AFTER_THE_PROGRAM):
        logging.warning("Ending the process without its normal teardown: %s stayed blocked",
                        ", ".join(_ABANDONED))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)  # pylint: disable=protected-access


@contextlib.contextmanager
def work_after_the_program() -> Iterator[None]:
    """A block launching a program after which the process has more to do (e.g. evaluate it).

    The launch does not end the process because a node loop was given up
    (`exit_if_loops_were_abandoned`): the caller does its work, then calls
    `exit_if_loops_were_abandoned(code, final=True)`. A `SystemExit` out of
    the block still ends the process at once, with its code.
    """
    _WORK_AFTER_THE_PROGRAM.append(True)
    try:
        yield
    except SystemExit as exit_request:
        code = exit_request.code
        exit_if_loops_were_abandoned(code if isinstance(code, int) else 1, final=True)
        raise
    finally:
        _WORK_AFTER_THE_PROGRAM.pop()
