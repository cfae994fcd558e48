"""The node processes' allocator: which library `--allocator` picks, and that processes started
under `preloading` run with it (and only those)."""

import os
import subprocess
import sys
import time

import pytest

from mava_systems.launching import allocator



def child_runs_jemalloc() -> bool:
    """Whether a process started now from this process's environment runs with jemalloc."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE, env=dict(os.environ))
    try:
        time.sleep(0.3)  # Its libraries are mapped before Python starts.
        return allocator.runs_jemalloc(child.pid)
    finally:
        child.communicate(b"")


@pytest.fixture(name="no_override")
def fixture_no_override(monkeypatch):
    monkeypatch.delenv(allocator.JEMALLOC_ENV, raising=False)


def test_auto_and_jemalloc_find_the_library_rays_wheel_ships(no_override):
    import ray  # pylint: disable=import-outside-toplevel
    library = allocator.allocator_library("auto")
    assert library == os.path.join(os.path.dirname(ray.__file__), "core", "libjemalloc.so")
    assert allocator.allocator_library("jemalloc") == library
    assert allocator.allocator_library("system") is None


def test_bad_choices_and_a_missing_library_are_named(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="allocator must be one of auto, jemalloc, system; "
                                         "got 'tcmalloc'"):
        allocator.allocator_library("tcmalloc")
    missing = str(tmp_path / "libjemalloc.so")
    monkeypatch.setenv(allocator.JEMALLOC_ENV, missing)
    with pytest.raises(ValueError, match=f"MAVA_JEMALLOC is '{missing}', which is not a file"):
        allocator.allocator_library("auto")


def test_jemalloc_where_there_is_none_says_what_to_install(monkeypatch, no_override):
    monkeypatch.setattr(allocator, "jemalloc_library", lambda: None)
    assert allocator.allocator_library("auto") is None
    with pytest.raises(ValueError, match=r"no jemalloc library found .*pip install ray==2.48.0"
                                         r".*--allocator=system"):
        allocator.allocator_library("jemalloc")


def test_the_override_names_the_library(monkeypatch, tmp_path):
    library = tmp_path / "libmyjemalloc.so"
    library.write_bytes(b"")
    monkeypatch.setenv(allocator.JEMALLOC_ENV, str(library))
    assert allocator.allocator_library("jemalloc") == str(library)


def test_the_library_comes_first_in_ld_preload_once():
    assert allocator.with_preload("/lib/a.so", None) == "/lib/a.so"
    assert allocator.with_preload("/lib/a.so", "/lib/b.so:/lib/a.so /lib/c.so") == \
        "/lib/a.so /lib/b.so /lib/c.so"
    assert allocator.with_preload(None, "/lib/b.so") == "/lib/b.so"


def test_processes_started_while_preloading_run_with_jemalloc_and_only_those(
        monkeypatch, no_override):
    monkeypatch.delenv(allocator.PRELOAD_ENV, raising=False)
    library = allocator.allocator_library("jemalloc")
    with allocator.preloading(library):
        assert child_runs_jemalloc()
    assert allocator.PRELOAD_ENV not in os.environ
    assert not child_runs_jemalloc()
    with allocator.preloading(None):
        assert allocator.PRELOAD_ENV not in os.environ
    monkeypatch.setenv(allocator.PRELOAD_ENV, "/nonexistent/libother.so")
    with allocator.preloading(library):
        assert os.environ[allocator.PRELOAD_ENV] == f"{library} /nonexistent/libother.so"
    assert os.environ[allocator.PRELOAD_ENV] == "/nonexistent/libother.so"
