"""VariableCache semantics (fake source, fake clock, real refresh thread) and the CacherNode in Launchpad."""

import inspect
import threading
import time
from typing import Any, List, Optional, Sequence
from unittest import mock

from absl.testing import absltest
import launchpad as lp
import pytest

from mava_systems.nodes import cacher as cacher_lib
from mava_systems.nodes.cacher import CacherNode, VariableCache


class FakeClock:
    """A clock that only moves when told to (seconds, like time.monotonic).

    Time is kept in whole milliseconds so that sums of advances are exact.
    """

    def __init__(self):
        self.now_ms = 0

    def __call__(self) -> float:
        return self.now_ms / 1000.0

    def advance_ms(self, ms: int) -> None:
        self.now_ms += ms


class FakeSource:
    """A variable source whose reply can be changed, that counts calls and can be made to fail."""

    def __init__(self, value: Any = 0):
        self.value = value
        self.calls: List[Optional[tuple]] = []
        self.fail = False
        self._lock = threading.Lock()

    @property
    def num_calls(self) -> int:
        with self._lock:
            return len(self.calls)

    def get_variables(self, names: Optional[Sequence[str]] = None) -> Any:
        with self._lock:
            self.calls.append(None if names is None else tuple(names))
        if self.fail:
            raise RuntimeError("source unavailable")
        return {"value": self.value, "names": None if names is None else list(names)}


def make_cache(source, refresh_ms=100, stale_ms=400, clock=None) -> VariableCache:
    return VariableCache(source, refresh_interval_ms=refresh_ms, stale_after_ms=stale_ms,
                         clock=clock or FakeClock())


# --------------------------------------------------------------------------- fake clock


def test_first_call_fetches_from_the_source():
    source = FakeSource(value=1)
    cache = make_cache(source)
    assert source.num_calls == 0  # Nothing is fetched before it is asked for.
    reply = cache.get_variables(["q"])
    assert reply == {"value": 1, "names": ["q"]}
    assert source.calls == [("q",)]


def test_calls_within_stale_after_are_served_from_the_cache():
    source, clock = FakeSource(value=1), FakeClock()
    cache = make_cache(source, refresh_ms=100, stale_ms=400, clock=clock)
    cache.get_variables(["q"])
    source.value = 2  # The source moved on, but the copy is still fresh enough.
    for _ in range(3):
        clock.advance_ms(100)  # 100, 200, 300 ms old: still < 400.
        assert cache.get_variables(["q"])["value"] == 1
    clock.advance_ms(99)  # 399 ms old.
    assert cache.get_variables(["q"])["value"] == 1
    assert source.num_calls == 1


def test_names_given_as_list_or_tuple_share_one_entry():
    source = FakeSource()
    cache = make_cache(source)
    cache.get_variables(["a", "b"])
    cache.get_variables(("a", "b"))
    assert source.num_calls == 1


def test_different_names_are_different_entries():
    source = FakeSource()
    cache = make_cache(source)
    assert cache.get_variables(["a"])["names"] == ["a"]
    assert cache.get_variables(["b"])["names"] == ["b"]
    assert cache.get_variables(["a", "b"])["names"] == ["a", "b"]
    assert source.calls == [("a",), ("b",), ("a", "b")]
    # Each is then served from its own entry.
    assert cache.get_variables(["b"])["names"] == ["b"]
    assert source.num_calls == 3


def test_refresh_refetches_every_held_entry():
    source, clock = FakeSource(value=1), FakeClock()
    cache = make_cache(source, clock=clock)
    cache.get_variables(["a"])
    cache.get_variables(["b"])
    source.calls.clear()
    source.value = 2
    cache.refresh()
    assert sorted(source.calls) == [("a",), ("b",)]
    # Both entries now hold the new value, without another call.
    assert cache.get_variables(["a"]) == {"value": 2, "names": ["a"]}
    assert cache.get_variables(["b"]) == {"value": 2, "names": ["b"]}
    assert source.num_calls == 2


def test_refresh_with_no_entries_calls_nothing():
    source = FakeSource()
    make_cache(source).refresh()
    assert source.num_calls == 0


def test_refresh_restarts_the_staleness_clock():
    source, clock = FakeSource(value=1), FakeClock()
    cache = make_cache(source, refresh_ms=100, stale_ms=400, clock=clock)
    cache.get_variables(["q"])
    clock.advance_ms(300)
    source.value = 2
    cache.refresh()  # Fetched at t=300.
    clock.advance_ms(350)  # 650 ms after the first fetch, 350 after the refresh.
    assert cache.get_variables(["q"])["value"] == 2
    assert source.num_calls == 2


def test_stale_entry_is_refetched_synchronously():
    source, clock = FakeSource(value=1), FakeClock()
    cache = make_cache(source, refresh_ms=100, stale_ms=400, clock=clock)
    cache.get_variables(["q"])
    source.value = 2
    clock.advance_ms(400)  # Exactly stale_after old: no longer served.
    assert cache.get_variables(["q"])["value"] == 2
    assert source.num_calls == 2
    # The new copy is fresh again.
    clock.advance_ms(399)
    source.value = 3
    assert cache.get_variables(["q"])["value"] == 2
    assert source.num_calls == 2


def test_failing_refresh_keeps_the_old_copy_until_it_is_stale():
    source, clock = FakeSource(value=1), FakeClock()
    cache = make_cache(source, refresh_ms=100, stale_ms=400, clock=clock)
    cache.get_variables(["q"])
    source.fail = True
    source.value = 2
    clock.advance_ms(100)
    cache.refresh()  # Fails: logged, not raised.
    assert source.num_calls == 2
    clock.advance_ms(200)  # 300 ms old.
    assert cache.get_variables(["q"])["value"] == 1
    assert source.num_calls == 2  # Served from the cache, the source was not asked.
    # Once stale, a failing source is an error: never serve a copy older than stale_after.
    clock.advance_ms(100)
    with pytest.raises(RuntimeError, match="source unavailable"):
        cache.get_variables(["q"])
    # And when the source is back, the next call fetches the new value.
    source.fail = False
    assert cache.get_variables(["q"])["value"] == 2


def test_a_failing_first_fetch_propagates_and_caches_nothing():
    source = FakeSource(value=1)
    source.fail = True
    cache = make_cache(source)
    with pytest.raises(RuntimeError):
        cache.get_variables(["q"])
    source.fail = False
    cache.refresh()  # No entry was held, so nothing to refresh.
    assert source.num_calls == 1
    assert cache.get_variables(["q"])["value"] == 1


def test_refresh_failure_of_one_entry_does_not_stop_the_others():
    class PickySource(FakeSource):
        """Fails only for "a" while `fail` is set."""

        def get_variables(self, names=None):
            if self.fail and tuple(names) == ("a",):
                raise RuntimeError("a is unavailable")
            return {"value": self.value, "names": list(names)}

    source, clock = PickySource(value=1), FakeClock()
    cache = make_cache(source, clock=clock)
    cache.get_variables(["a"])
    cache.get_variables(["b"])
    source.fail, source.value = True, 2
    cache.refresh()
    assert cache.get_variables(["a"])["value"] == 1
    assert cache.get_variables(["b"])["value"] == 2


def test_a_slow_refresh_never_replaces_a_newer_copy():
    class BlockingSource(FakeSource):
        """Blocks the next call (after reading the value) until released."""

        def __init__(self, value):
            super().__init__(value)
            self.block_next = False
            self.entered, self.release = threading.Event(), threading.Event()

        def get_variables(self, names=None):
            value, block = self.value, self.block_next
            self.block_next = False
            if block:
                self.entered.set()
                self.release.wait(5.0)
            return {"value": value, "names": list(names)}

    source, clock = BlockingSource(value=1), FakeClock()
    cache = make_cache(source, refresh_ms=100, stale_ms=400, clock=clock)
    cache.get_variables(["q"])
    clock.advance_ms(300)
    source.block_next = True
    refresher = threading.Thread(target=cache.refresh, daemon=True)
    refresher.start()  # Reads value 1 at t=300, then blocks.
    assert source.entered.wait(5.0)
    source.value = 2
    clock.advance_ms(200)  # t=500: the t=0 copy is stale, so this fetches value 2 now.
    assert cache.get_variables(["q"])["value"] == 2
    source.release.set()
    refresher.join(5.0)  # The refresh stores its t=300 reply of value 1.
    assert cache.get_variables(["q"])["value"] == 2  # Served values must not go backwards.


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("refresh_ms, stale_ms", [(0, 100), (-1, 100), (-20, -10), (100, 99), (100, 0)])
def test_invalid_intervals_raise(refresh_ms, stale_ms):
    with pytest.raises(ValueError):
        VariableCache(FakeSource(), refresh_interval_ms=refresh_ms, stale_after_ms=stale_ms)


def test_cacher_node_rejects_invalid_intervals_before_launch():
    with pytest.raises(ValueError):
        CacherNode("source", refresh_interval_ms=0, stale_after_ms=100)


def test_stale_after_equal_to_refresh_is_allowed():
    VariableCache(FakeSource(), refresh_interval_ms=100, stale_after_ms=100)


def test_defaults_are_2000_and_4000_ms():
    assert cacher_lib.DEFAULT_REFRESH_INTERVAL_MS == 2000
    assert cacher_lib.DEFAULT_STALE_AFTER_MS == 4000
    for constructor in (VariableCache.__init__, CacherNode.__init__):
        parameters = inspect.signature(constructor).parameters
        assert parameters["refresh_interval_ms"].default == 2000
        assert parameters["stale_after_ms"].default == 4000
    node = CacherNode("source")
    assert node._kwargs == {"refresh_interval_ms": 2000, "stale_after_ms": 4000}
    # And the behaviour: with the defaults, a copy is served for 4 s, no longer.
    source, clock = FakeSource(value=1), FakeClock()
    cache = VariableCache(source, clock=clock)
    cache.get_variables(["q"])
    source.value = 2
    clock.advance_ms(3900)
    assert cache.get_variables(["q"])["value"] == 1
    clock.advance_ms(200)
    assert cache.get_variables(["q"])["value"] == 2


# --------------------------------------------------------------------------- real refresh thread


def _wait_for(predicate, timeout_s: float = 2.0, interval_s: float = 0.005) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def test_refresh_until_polls_the_source_and_follows_it():
    source = FakeSource(value=1)
    cache = VariableCache(source, refresh_interval_ms=20, stale_after_ms=40)
    stop = threading.Event()
    thread = threading.Thread(target=cache.refresh_until, args=(stop,), daemon=True)
    thread.start()
    try:
        assert cache.get_variables(["q"])["value"] == 1
        # The background thread polls the source repeatedly, without any get_variables call.
        assert _wait_for(lambda: source.num_calls >= 5), source.num_calls
        # Once the source changes, the value served follows within stale_after (40 ms): any copy
        # served 45 ms after the change was fetched after the change.
        source.value = 2
        time.sleep(0.045)
        assert cache.get_variables(["q"])["value"] == 2
        # The background refreshes alone (no stale fetch) bring later changes in too.
        source.value = 3
        assert _wait_for(lambda: cache._entries[("get_variables", (("q",),))][0]["value"] == 3)
    finally:
        stop.set()
        thread.join(timeout=2.0)
    assert not thread.is_alive(), "setting the event must stop refresh_until"
    calls = source.num_calls
    time.sleep(0.1)
    assert source.num_calls == calls  # No more polling after the stop.


def test_refresh_until_returns_promptly_when_already_stopped():
    source = FakeSource()
    cache = VariableCache(source, refresh_interval_ms=20, stale_after_ms=40)
    cache.get_variables(["q"])
    stop = threading.Event()
    stop.set()
    start = time.monotonic()
    cache.refresh_until(stop)
    assert time.monotonic() - start < 0.5
    assert source.num_calls == 1


# --------------------------------------------------------------------------- Launchpad


class SettableSource:
    """A variable source node whose value can be set over RPC."""

    def __init__(self, value: int):
        self._value = value
        self._calls = 0

    def set_value(self, value: int) -> None:
        self._value = value

    def num_calls(self) -> int:
        return self._calls

    def get_variables(self, names):
        self._calls += 1
        return [[self._value, list(names)]]


class CacherNodeLaunchTest(absltest.TestCase):
    """The canonical pattern: build, launch with test_mt and test_case=self, call the handle."""

    def _shorten_stop_grace(self):
        """Serving nodes linger a few seconds after the stop (lifecycle.STOP_GRACE_S); not here."""
        try:
            from mava_systems.nodes import lifecycle
        except ImportError:
            return
        if hasattr(lifecycle, "STOP_GRACE_S"):
            patcher = mock.patch.object(lifecycle, "STOP_GRACE_S", 0.0)
            patcher.start()
            self.addCleanup(patcher.stop)  # Runs after Launchpad's cleanup (cleanups are LIFO).

    def test_cacher_node_serves_the_source(self):
        program = lp.Program("cacher_test")
        with program.group("source"):
            source = program.add_node(lp.CourierNode(SettableSource, 7))
        with program.group("cacher"):
            cacher = program.add_node(
                CacherNode(source, refresh_interval_ms=50, stale_after_ms=100))
        self._shorten_stop_grace()
        lp.launch(program, launch_type="test_mt", test_case=self)

        cacher_client = cacher.dereference()
        source_client = source.dereference()
        self.assertEqual(cacher_client.get_variables(["q"]), [[7, ["q"]]])
        # A change at the source is served through the cache within stale_after_ms (100 ms):
        # a copy served 110 ms after the change was fetched after it.
        source_client.set_value(8)
        time.sleep(0.11)
        self.assertEqual(cacher_client.get_variables(["q"])[0][0], 8)
        # The cacher refreshes in the background: the source is polled without more requests.
        calls = source_client.num_calls()
        time.sleep(0.3)
        self.assertGreater(source_client.num_calls(), calls)


if __name__ == "__main__":
    absltest.main()
