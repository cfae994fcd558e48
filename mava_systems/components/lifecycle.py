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

import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Optional, TypeVar

from absl import logging
import launchpad as lp
from launchpad import context as lp_context
from launchpad.launch import worker_manager

STOP_GRACE_S = 3.0
# Names of the loops `run_watched` gave up in this process.
_ABANDONED: list = []
# Seconds a node's loop gets, once the program stops, to return by itself (see `run_watched`).
# A blocked replay call returns within 1 s while its server is up (3 s after the stop).
ABANDON_AFTER_S = 5.0
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


def _wait_watched(thread: threading.Thread, grace_s: float) -> bool:
    """Waits for `thread`; once the program stops, for `grace_s` more at most. True if it ended."""
    stop_event = program_stop_event()
    while thread.is_alive():
        if stop_event.is_set():
            thread.join(grace_s)
            return not thread.is_alive()
        thread.join(0.2)
    return True


def run_watched(loop: Callable[[], None], name: str, grace_s: float = ABANDON_AFTER_S) -> bool:
    """Runs a node's `loop` until it returns; gives it up `grace_s` after the program stops.

    Returns True if `loop` returned (its exception, if any, is raised here),
    False if it was given up: it is then blocked on a node that has gone, and
    is left in its daemon thread so that this node can still end.
    """
    thread, outcome = _in_daemon_thread(loop, name)
    if not _wait_watched(thread, grace_s):
        frame = sys._current_frames().get(thread.ident)  # pylint: disable=protected-access
        logging.warning("%s did not return %.0f s after the program stopped (blocked on a node "
                        "that has gone); ending without it. It waits in:\n%s", name, grace_s,
                        "".join(traceback.format_stack(frame)[-4:]) if frame else "?")
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
    if not _wait_watched(thread, grace_s=1.0):
        return default
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result", default)


def exit_if_loops_were_abandoned(exit_code: int = 0) -> None:
    """Ends the process now (with `exit_code`) if `run_watched` gave up a loop in it.

    A given-up loop stays blocked inside a Reverb or gRPC call; tearing the
    interpreter down around it can abort the process ("terminate called without
    an active exception") after a clean stop. Call it once the program is over.
    """
    if _ABANDONED:
        logging.warning("Ending the process without its normal teardown: %s stayed blocked",
                        ", ".join(_ABANDONED))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)  # pylint: disable=protected-access
