"""The pieces of Launchpad's runtime a node expects, provided inside a Ray actor.

Nodes call `lp.wait_for_stop()`, `lp.stop_event()`, `lp.register_stop_handler()`
and `lp.stop()`. Launchpad finds the first two through a thread-local worker
manager, `lp.stop()` through a thread-local launch context, and keeps stop
handlers in a table it otherwise fills by installing signal handlers (which
only the main thread may do; a node here runs in a thread of the actor).
`NodeRuntime` stands in for the worker manager and supplies the context; every
thread that runs node code calls `enter()` first.
"""

import signal
import threading
from typing import Callable, Optional

from absl import logging
from launchpad import context as lp_context
from launchpad.launch import worker_manager


def _ensure_stop_handler_table() -> None:
    """Makes `lp.register_stop_handler` record handlers without installing signal handlers."""
    # pylint: disable=protected-access
    if worker_manager._SIGNAL_HANDLERS is None:
        worker_manager._SIGNAL_HANDLERS = {
            sig: set() for sig in (signal.SIGTERM, signal.SIGQUIT, signal.SIGINT,
                                   signal.SIGALRM, signal.SIGUSR1)}


class NodeRuntime:
    """A node's stop event, stop handlers and launch context (with a program stopper)."""

    def __init__(self, stop_program: Callable[[], None]):
        """`stop_program()` is what `lp.stop()` calls: it asks the launcher to stop every node."""
        self._stop_event = threading.Event()
        self._context = lp_context.LaunchContext()
        # Each node is a process of its own, as in local_mp (LaunchType has no value for Ray).
        self._context.initialize(lp_context.LaunchType.LOCAL_MULTI_PROCESSING, None,
                                 program_stopper=stop_program)
        _ensure_stop_handler_table()

    def enter(self) -> None:
        """Makes this runtime the one Launchpad's calls find in the current thread."""
        worker_manager._WORKER_MANAGERS.manager = self  # pylint: disable=protected-access
        lp_context.set_context(self._context)

    # The worker-manager interface `lp.wait_for_stop` and `lp.stop_event` use.
    def wait_for_stop(self, timeout_secs: Optional[float] = None) -> bool:
        """Blocks until the program stops or `timeout_secs` pass; True once it stops."""
        return self._stop_event.wait(timeout_secs)

    def stop_event(self) -> threading.Event:
        """The event set when the program stops."""
        return self._stop_event

    @property
    def stopping(self) -> bool:
        """Whether the program is stopping."""
        return self._stop_event.is_set()

    def stop(self) -> None:
        """Sets the stop event and calls the registered stop handlers (once each)."""
        if self._stop_event.is_set():
            return
        self._stop_event.set()
        # pylint: disable=protected-access
        handlers = list(worker_manager._SIGNAL_HANDLERS.get(signal.SIGUSR1, ()))
        worker_manager._SIGNAL_HANDLERS[signal.SIGUSR1].clear()
        for handler in handlers:
            try:
                handler()
            except Exception:  # pylint: disable=broad-except
                logging.exception("A stop handler failed")
