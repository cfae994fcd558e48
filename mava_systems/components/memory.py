"""Handing memory the C heap has freed back to the operating system.

glibc's `malloc` keeps freed memory in its arenas for reuse and returns it to
the system only from the top of a heap. A long-running process whose native
allocations vary in size and come from many threads (TensorFlow, gRPC and
Reverb in a trainer) leaves free pages scattered between live blocks, and its
resident size creeps up although little is in use (see the soak results in
docs/benchmarks.md). `malloc_trim(0)` releases those free pages in every arena.
"""

import ctypes
import time
from typing import Callable, Optional

# How often a trainer's loop releases free heap memory: each call takes milliseconds.
RELEASE_INTERVAL_S = 60.0


def _load_malloc_trim() -> Optional[Callable[[int], int]]:
    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # Not glibc (macOS, musl): nothing to call.
        return None
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim.restype = ctypes.c_int
    return malloc_trim


_MALLOC_TRIM = _load_malloc_trim()


def release_free_memory() -> bool:
    """Returns the C heap's free pages to the system; True if any were released.

    False also where the C library has no `malloc_trim` (it is glibc's).
    """
    return bool(_MALLOC_TRIM is not None and _MALLOC_TRIM(0))


class PeriodicMemoryRelease:
    """Calls `release_free_memory` at most once per `interval_s` seconds, when `maybe_release`d."""

    def __init__(self, interval_s: float = RELEASE_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 release: Callable[[], bool] = release_free_memory):
        self._interval_s = interval_s
        self._clock = clock
        self._release = release
        self._last = clock()

    def maybe_release(self) -> bool:
        """Releases free memory if `interval_s` has passed since the last time; says whether it did."""
        now = self._clock()
        if now - self._last < self._interval_s:
            return False
        self._last = now
        self._release()
        return True
