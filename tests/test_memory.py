"""Releasing the C heap's free pages (`mava_systems.components.memory`)."""

import ctypes
import os

import pytest

from mava_systems.components import memory

BLOCK_BYTES = 16 * 1024  # Well under glibc's mmap threshold: these come from the heap.
BLOCKS = 4096  # 64 MB.
KEEP_EVERY = 16  # A live block every 256 KB keeps the freed pages from the heap's top.


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(memory._MALLOC_TRIM is None, reason="malloc_trim is glibc's")  # pylint: disable=protected-access
def test_free_pages_between_live_blocks_go_back_to_the_system():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK_BYTES) for _ in range(BLOCKS)]
    kept = []
    try:
        for block in blocks:
            ctypes.memset(block, 1, BLOCK_BYTES)  # Resident.
        for index, block in enumerate(blocks):
            if index % KEEP_EVERY:
                libc.free(block)
            else:
                kept.append(block)
        freed_mb = (BLOCKS - len(kept)) * BLOCK_BYTES / 2**20
        before = resident_mb()
        assert memory.release_free_memory()
        released_mb = before - resident_mb()
        # free() kept the pages (they are not at the heap's top); the release returned them.
        assert released_mb > 0.5 * freed_mb, (released_mb, freed_mb)
    finally:
        for block in kept:
            libc.free(block)


def test_periodic_release_runs_once_per_interval():
    now = [100.0]
    calls = []
    periodic = memory.PeriodicMemoryRelease(60.0, clock=lambda: now[0],
                                            release=lambda: calls.append(now[0]) or True)
    results = []
    for time_s in (100.0, 159.0, 160.0, 161.0, 219.9, 220.0, 400.0):
        now[0] = time_s
        results.append(periodic.maybe_release())
    assert results == [False, False, True, False, False, True, True]
    assert calls == [160.0, 220.0, 400.0]
