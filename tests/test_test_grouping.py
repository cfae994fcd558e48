"""`make test`'s workers keep each test file's tests together (conftest.py), as the tests need.

Two Ray tests running at once on two workers see each other's Ray processes as leaks, and a
module's shared fixture would be made once per worker. pytest-xdist's `--dist loadgroup` has
stopped grouping silently before (with pytest 9.2); this fails when it does.
"""

import os

import pytest


def test_this_files_tests_are_grouped_under_loadgroup(request):
    # pytest-xdist sets `loadgroup` in its workers under `--dist loadgroup`.
    if os.environ.get("PYTEST_XDIST_WORKER") is None or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only `pytest -n N --dist loadgroup` (make test) groups tests")
    assert request.node.nodeid.endswith("@test_test_grouping.py"), (
        f"{request.node.nodeid!r} carries no xdist group: --dist loadgroup is not grouping; "
        "see the pytest pin in constraints.txt")
