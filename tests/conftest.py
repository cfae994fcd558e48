"""Shared test setup: quiet TensorFlow, headless pygame, absl flags parsed, temporary run dirs."""

import os

# Before TensorFlow / pygame are imported by any test module.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame is imported by every PettingZoo env
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pathlib  # noqa: E402

from absl import flags  # noqa: E402
import pytest  # noqa: E402

# Test files whose tests start Ray clusters: one worker runs them all, one at a time.
RAY_TEST_FILES = ("test_ray_cluster.py", "test_ray_launch.py")


@pytest.hookimpl(tryfirst=True)  # Before pytest-xdist reads the groups.
def pytest_collection_modifyitems(items) -> None:
    """Under `pytest -n N --dist loadgroup` (`make test`), keeps each test file's tests on one
    worker, in order: a module's shared fixtures (e.g. a run several tests check) are then
    made once."""
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("ray" if name in RAY_TEST_FILES else name))


# absl-based helpers (Launchpad, absltest) read FLAGS; pytest never parses them.
if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()


@pytest.fixture
def tmp_run_dir(tmp_path: pathlib.Path) -> str:
    """A fresh run directory (not yet created) for a system's logs and checkpoints."""
    return str(tmp_path / "run")


@pytest.fixture(scope="session")
def line_world_factory():
    """The tiny, fast debug environment's factory."""
    import wrappers

    return wrappers.make_environment_factory("debug/line_world_v0")


@pytest.fixture(scope="session")
def cartpole():
    """Gymnasium's CartPole-v1 as a one-agent environment factory."""
    import wrappers

    return wrappers.make_environment_factory("gymnasium/CartPole-v1")
