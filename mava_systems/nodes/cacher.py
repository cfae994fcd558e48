"""A variable cache node: Launchpad 0.5.0 has no `CacherNode`, so we provide one.

The cache sits in front of a variable source (usually the trainer). It answers
`get_variables` from a local copy, refreshes every copy it holds in the
background every `refresh_interval_ms`, and never serves a copy older than
`stale_after_ms`: a stale entry is fetched again before it is served.
"""

import threading
import time
from typing import Any, Callable, Dict, Sequence, Tuple

from absl import logging
import launchpad as lp

from mava_systems.nodes.lifecycle import keep_serving_after_stop

DEFAULT_REFRESH_INTERVAL_MS = 2000
DEFAULT_STALE_AFTER_MS = 4000

_CacheKey = Tuple[str, Tuple[Any, ...]]


def _check_intervals(refresh_interval_ms: int, stale_after_ms: int) -> None:
    if refresh_interval_ms <= 0:
        raise ValueError(f"refresh_interval_ms must be positive, got {refresh_interval_ms}")
    if stale_after_ms < refresh_interval_ms:
        raise ValueError(
            f"stale_after_ms ({stale_after_ms}) must be at least refresh_interval_ms "
            f"({refresh_interval_ms})")


class VariableCache:
    """Serves a variable source's replies from a cache refreshed in the background."""

    def __init__(
        self,
        source: Any,
        refresh_interval_ms: int = DEFAULT_REFRESH_INTERVAL_MS,
        stale_after_ms: int = DEFAULT_STALE_AFTER_MS,
        clock: Callable[[], float] = time.monotonic,
    ):
        _check_intervals(refresh_interval_ms, stale_after_ms)
        self._source = source
        self._refresh_interval_s = refresh_interval_ms / 1000.0
        self._stale_after_s = stale_after_ms / 1000.0
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (reply, time it was fetched)
        self._entries: Dict[_CacheKey, Tuple[Any, float]] = {}

    def get_variables(self, names: Sequence[str]) -> Any:
        """Returns the source's `get_variables(names)` reply, at most `stale_after_ms` old."""
        return self._cached_call("get_variables", (tuple(names),))

    def refresh(self) -> None:
        """Fetches a fresh copy of every entry held; a failed fetch keeps the old copy."""
        with self._lock:
            keys = list(self._entries)
        for key in keys:
            try:
                self._fetch(key)
            except Exception as error:  # pylint: disable=broad-except
                logging.warning("VariableCache: refreshing %s failed: %s", key[0], error)

    def refresh_until(self, stop: threading.Event) -> None:
        """Refreshes every `refresh_interval_ms` until `stop` is set."""
        while not stop.wait(self._refresh_interval_s):
            self.refresh()

    def run(self) -> None:
        """The node's main loop: background refreshes until the program stops."""
        self.refresh_until(lp.stop_event())
        keep_serving_after_stop(time.monotonic())

    def _cached_call(self, method: str, args: Tuple[Any, ...]) -> Any:
        key = (method, args)
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and self._clock() - entry[1] < self._stale_after_s:
            return entry[0]
        return self._fetch(key)

    def _fetch(self, key: _CacheKey) -> Any:
        method, args = key
        fetched_at = self._clock()
        reply = getattr(self._source, method)(*args)
        with self._lock:
            held = self._entries.get(key)
            # A slower fetch that started earlier must not replace a newer copy.
            if held is None or held[1] <= fetched_at:
                self._entries[key] = (reply, fetched_at)
        return reply


class CacherNode(lp.CourierNode):
    """A Courier node serving a `VariableCache` in front of `source` (a node handle)."""

    def __init__(
        self,
        source: Any,
        refresh_interval_ms: int = DEFAULT_REFRESH_INTERVAL_MS,
        stale_after_ms: int = DEFAULT_STALE_AFTER_MS,
    ):
        _check_intervals(refresh_interval_ms, stale_after_ms)  # Fail at build(), not in the node.
        super().__init__(
            VariableCache,
            source,
            refresh_interval_ms=refresh_interval_ms,
            stale_after_ms=stale_after_ms,
        )
