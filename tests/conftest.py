"""Shared test setup: quiet TensorFlow, headless pygame, absl flags parsed, temporary run dirs."""

import os

# Before TensorFlow / pygame are imported by any test module.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame is imported by every PettingZoo env
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pathlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import sysconfig  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402

from absl import flags  # noqa: E402
import portpicker  # noqa: E402
import pytest  # noqa: E402

# Test files whose tests start Ray clusters: one worker runs them all, one at a time.
RAY_TEST_FILES = ("test_ray_cluster.py", "test_ray_launch.py")


# The groups that take longest, longest first (test-seconds of a full run under `make test`,
# 2 cores, from its JUnit report; all groups of about 50 s or more): started first, so that the
# last group to finish is a short one (longest-first keeps the two workers' ends close).
LONGEST_GROUPS = ("test_madqn_program.py", "test_tutorials.py", "test_stopping.py", "ray",
                  "test_node_faults.py", "test_experiment.py", "test_dmpo_program.py",
                  "test_multi_environment_program.py", "test_lbf_rware_program.py",
                  "test_recurrent_program.py", "test_r2d2_program.py",
                  "test_value_decomposition_program.py", "test_jit_compile.py",
                  "test_impala_program.py", "test_maddpg_program.py", "test_mamujoco.py",
                  "test_happo_program.py", "test_mappo_program.py", "test_mappo.py",
                  "test_masac.py", "test_trainer.py", "test_dqn_program.py", "test_disk_full.py",
                  "test_recurrent_mappo.py", "test_vectorised_envs.py", "test_recurrent.py",
                  "test_step_evaluation.py")


def _group(item) -> str:
    return "ray" if item.path.name in RAY_TEST_FILES else item.path.name


@pytest.hookimpl(tryfirst=True)  # Before pytest-xdist reads the groups.
def pytest_collection_modifyitems(items) -> None:
    """Under `pytest -n N --dist loadgroup` (`make test`), keeps each test file's tests on one
    worker, in order: a module's shared fixtures (e.g. a run several tests check) are then
    made once. The longest groups come first (with `--no-loadscope-reorder`, workers take the
    groups in this order), the others in collection order."""
    rank = {group: index for index, group in enumerate(LONGEST_GROUPS)}
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(_group(item), len(rank)), order[id(item)]))
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))


# Ports a test run's servers (Courier, Reverb) get: outside the kernel's ephemeral range
# (32768-60999 here), from which outgoing connections take their local ports, outside Ray's
# default worker ports (10002-19999), and outside the range portpicker draws from in a process
# without the port server (15000-24999). gRPC servers bind with SO_REUSEPORT: a port two servers
# bind is shared silently, and a client reaches either one.
PORT_POOL = "25000-32000"
# Runs portpicker's port server, which ends when the process that started it does.
_PORT_SERVER_COMMAND = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


def pytest_configure(config) -> None:
    """Starts one port server for the whole test run (pytest-xdist's workers and every process
    they start inherit its address, `PORTSERVER_ADDRESS`).

    Without it, each process's portpicker asks the kernel for a free port and
    lets it go before the server binds it; meanwhile another process, a
    parallel test's server or any outgoing connection, can take it ("Address
    already in use"). The port server hands each port to one process at a time,
    from a pool no outgoing connection uses.
    """
    if os.environ.get("PORTSERVER_ADDRESS") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    script = os.path.join(sysconfig.get_path("scripts"), "portserver.py")
    if not os.path.isfile(script):
        return
    address = f"@mava-systems-tests-{os.getpid()}"
    server = subprocess.Popen(
        [sys.executable, "-c", _PORT_SERVER_COMMAND, script, f"--portserver_address={address}",
         f"--portserver_static_pool={PORT_POOL}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while server.poll() is None and time.monotonic() < deadline:
        if portpicker.get_port_from_port_server(address):
            os.environ["PORTSERVER_ADDRESS"] = address
            config.stash[_PORT_SERVER] = server
            return
        time.sleep(0.1)
    server.kill()  # It did not answer: each process picks its own ports, as without it.


_PORT_SERVER = pytest.StashKey[subprocess.Popen]()


def _forget_returned_port(port: int) -> None:
    """Stands in for `portpicker.return_port` in test processes: the port is not handed out again.

    Reverb's `Server` returns its port when it is garbage-collected, and portpicker gives a
    returned port to the next server of the same process without checking that it is free;
    a CI run's in-process MADDPG replay once shared its port with a recurrent system's replay
    still serving in the same test process (gRPC binds with SO_REUSEPORT, so nothing fails
    until a client reads the other server's table). Without the reuse, every port comes from
    the port server, which hands a port out once per process and only while nothing holds it.
    """
    if not portpicker.is_port_free(port):
        warnings.warn(f"port {port} was returned to portpicker while a socket still holds it:\n"
                      + "".join(traceback.format_stack(limit=12)), RuntimeWarning)


portpicker.return_port = _forget_returned_port


def pytest_unconfigure(config) -> None:
    """Stops the port server `pytest_configure` started."""
    server = config.stash.get(_PORT_SERVER, None)
    if server is not None:
        server.terminate()
        server.wait(10)


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
