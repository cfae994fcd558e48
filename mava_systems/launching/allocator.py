"""Which memory allocator a program's node processes use: jemalloc when there is one, or glibc's.

A trainer node spends much of its CPU in glibc's `malloc` and `free`: every
sampled item arrives from Reverb as protocol buffers of its own (a chunk's
tensors, its sample info), decompressed, sliced, batched and freed, about 32
items per executor step at MADQN's defaults. jemalloc serves these from
per-thread caches: with it a trainer node's CPU per step falls by about a fifth
in a program (docs/program_cpu.md, "The allocator").

Processes pick their allocator when they start (`LD_PRELOAD`), so the launcher
sets it for the processes it starts: `local_mp` nodes, and Ray nodes on this
machine. The launcher itself and a `local_mt` program keep the allocator their
process started with (run the command under `LD_PRELOAD=<library>` to change it).

The library: `$MAVA_JEMALLOC` if set, else the one Ray's wheel ships (Ray is
part of the stack: `ray/core/libjemalloc.so`), else a system one (Debian's
`libjemalloc2`).
"""

import contextlib
import glob
import importlib.util
import os
from typing import Iterator, Optional

from absl import logging

from mava_systems.launching.node_processes import environment_variable

ALLOCATORS = ("auto", "jemalloc", "system")
DEFAULT_ALLOCATOR = "auto"
JEMALLOC_ENV = "MAVA_JEMALLOC"  # A jemalloc shared library to use instead of the ones found.
PRELOAD_ENV = "LD_PRELOAD"
SYSTEM_JEMALLOC_PATTERNS = ("/usr/lib/*-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2",
                            "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so*")


def jemalloc_library() -> Optional[str]:
    """The path of a jemalloc shared library to preload, or None if there is none.

    Raises:
      ValueError: `$MAVA_JEMALLOC` names a file that does not exist.
    """
    override = os.environ.get(JEMALLOC_ENV)
    if override:
        if not os.path.isfile(override):
            raise ValueError(f"${JEMALLOC_ENV} is {override!r}, which is not a file")
        return os.path.abspath(override)
    ray_spec = importlib.util.find_spec("ray")  # Found without importing Ray (slow).
    for location in (ray_spec.submodule_search_locations or []) if ray_spec else []:
        candidate = os.path.join(location, "core", "libjemalloc.so")
        if os.path.isfile(candidate):
            return candidate
    for pattern in SYSTEM_JEMALLOC_PATTERNS:
        for candidate in sorted(glob.glob(pattern)):
            if os.path.isfile(candidate):
                return candidate
    return None


def allocator_library(allocator: str) -> Optional[str]:
    """The library node processes preload for `allocator` ("auto", "jemalloc" or "system"):
    None means glibc's own allocator.

    Raises:
      ValueError: an unknown allocator, or "jemalloc" where no jemalloc library is found.
    """
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {', '.join(ALLOCATORS)}; got {allocator!r}")
    if allocator == "system":
        return None
    library = jemalloc_library()
    if library is None and allocator == "jemalloc":
        raise ValueError(
            "allocator jemalloc: no jemalloc library found (Ray's wheel ships one in "
            "ray/core/libjemalloc.so: `pip install ray==2.48.0`, or install the system's "
            f"libjemalloc2, or set ${JEMALLOC_ENV} to a libjemalloc.so); or use --allocator=system")
    if library is None:
        logging.info("No jemalloc library found: node processes use glibc's allocator")
    return library


def with_preload(library: Optional[str], preload: Optional[str]) -> Optional[str]:
    """`LD_PRELOAD`'s value `preload` with `library` first (once); unchanged for None."""
    entries = [entry for entry in (preload or "").replace(":", " ").split() if entry]
    if library is None:
        return preload
    return " ".join([library] + [entry for entry in entries if entry != library])


@contextlib.contextmanager
def preloading(library: Optional[str]) -> Iterator[None]:
    """Processes started meanwhile (from this process's environment) preload `library`
    (nothing changes for None); `LD_PRELOAD` is restored at exit."""
    if library is None:
        yield
        return
    with environment_variable(PRELOAD_ENV, with_preload(library, os.environ.get(PRELOAD_ENV))):
        yield


def runs_jemalloc(pid: Optional[int] = None) -> bool:
    """Whether process `pid` (default: this one) has a jemalloc library loaded (Linux)."""
    try:
        with open(f"/proc/{pid or 'self'}/maps") as maps:
            return any("jemalloc" in os.path.basename(line.split()[-1])
                       for line in maps if len(line.split()) >= 6)
    except OSError:
        return False
