"""How nodes stop together.

When a program stops, every node's loop ends at once. Nodes that serve others
(the counter, the trainer, caches) keep serving for `STOP_GRACE_S` so that the
last calls of their clients complete instead of waiting forever on a server
that has gone; blocking replay calls raise `ProgramStopping` (see replay.py).
"""

import threading
import time

import launchpad as lp

STOP_GRACE_S = 3.0


class ProgramStopping(Exception):
    """Raised out of a blocking call because the program is stopping."""


def program_stop_event() -> threading.Event:
    """The running program's stop event; outside a Launchpad node, an event never set."""
    try:
        return lp.stop_event()
    except RuntimeError:
        return threading.Event()


def keep_serving_after_stop() -> None:
    """Called by serving nodes at the end of `run()`: lets clients finish their last calls."""
    time.sleep(STOP_GRACE_S)
