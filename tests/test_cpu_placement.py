"""CPU placement (`--cpu_placement`): which cores each node gets, that a second program on the
machine leaves the first one's cores alone, and that the launchers start nodes on their cores
(local_mp's node processes, a restarted one too; Ray's node actors and Ray's own processes)."""

import json
import os
import subprocess
import sys

import launchpad as lp
import pytest

from mava_systems import ray_launch
from mava_systems.launching import cpu_placement
from mava_systems.ray_launch import RayLaunchConfig
import ray_helpers
from fault_helpers import OutputLines, kill_in_tree, wait_for_node
from program_helpers import ROOT
from ray_helpers import read_record

CPUS = sorted(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(len(CPUS) < 2, reason="placement needs two cores or more")


@pytest.fixture(name="lock_dir", autouse=True)
def fixture_lock_dir(monkeypatch, tmp_path):
    """The cores' lock files in a directory of the test's own (no other test holds them)."""
    monkeypatch.setenv(cpu_placement.LOCK_DIR_ENV, str(tmp_path))
    return tmp_path


def test_each_executor_gets_a_core_of_its_own_the_others_share_the_rest():
    nodes = ["replay/0", "trainer/0", "executor/0", "executor/1", "evaluator/0", "cacher/0"]
    placement = cpu_placement.plan(nodes, cpus=range(8))
    assert placement.dedicated == {"executor/0": (7,), "executor/1": (6,)}
    assert placement.shared == (0, 1, 2, 3, 4, 5)
    assert placement.cpus_of("executor/1") == (6,)
    assert placement.cpus_of("evaluator/0") == placement.cpus_of("trainer/0") == placement.shared
    assert placement.describe() == ("executor/0 on core 7; executor/1 on core 6; the other "
                                    "nodes on cores 0,1,2,3,4,5")
    # Acme's single-agent systems' actors too; the cores this process may use, in any order.
    assert cpu_placement.plan(["actor/0", "learner/0"], cpus=[5, 3]).dedicated == {"actor/0": (5,)}


@pytest.mark.parametrize("nodes, cpus", [
    (["executor/0", "executor/1", "trainer/0"], [0, 1]),  # No core left to share.
    (["executor/0", "trainer/0"], [0]),
    (["trainer/0", "replay/0"], [0, 1, 2]),  # No executor.
])
def test_no_placement_without_more_cores_than_executors(nodes, cpus):
    assert cpu_placement.plan(nodes, cpus=cpus) is None


def test_crowding_executors_run_on_every_core_and_the_others_on_the_lowest_when_asked():
    nodes = ["trainer/0", "executor/0", "executor/1", "executor/2"]
    placement = cpu_placement.plan(nodes, cpus=[2, 0, 1], share_cores_when_crowded=True)
    assert placement.dedicated == {"executor/0": (0, 1, 2), "executor/1": (0, 1, 2),
                                   "executor/2": (0, 1, 2)}
    assert placement.shared == (0,) and placement.cpus_of("trainer/0") == (0,)
    two = cpu_placement.plan(nodes[:3], cpus=[0, 1], share_cores_when_crowded=True)
    assert two.dedicated == {"executor/0": (0, 1), "executor/1": (0, 1)} and two.shared == (0,)
    assert two.describe() == ("executor/0 on cores 0,1; executor/1 on cores 0,1; the other "
                              "nodes on core 0")
    # Fewer executors than cores: as without it; one core: nothing to place.
    assert cpu_placement.plan(nodes[:2], cpus=[0, 1], share_cores_when_crowded=True) == \
        cpu_placement.plan(nodes[:2], cpus=[0, 1])
    assert cpu_placement.plan(nodes, cpus=[0], share_cores_when_crowded=True) is None


def test_a_second_program_runs_without_placement_while_the_first_holds_its_cores():
    nodes = ["executor/0", "trainer/0"]
    with cpu_placement.reserved(cpu_placement.plan(nodes, cpus=[0, 1])) as first:
        assert first is not None
        with cpu_placement.reserved(cpu_placement.plan(nodes, cpus=[0, 1])) as second:
            assert second is None
        # A program whose executor's core is another one is placed.
        with cpu_placement.reserved(cpu_placement.plan(nodes, cpus=[0, 1, 2])) as other:
            assert other.dedicated == {"executor/0": (2,)}
    with cpu_placement.reserved(cpu_placement.plan(nodes, cpus=[0, 1])) as after:
        assert after == first  # Released when the first one ended.


def test_none_places_nothing_and_unknown_modes_are_named():
    with cpu_placement.placing(["executor/0", "trainer/0"], "none") as placement:
        assert placement is None
    with pytest.raises(ValueError, match="cpu_placement must be one of auto, none; got 'pin'"):
        with cpu_placement.placing(["executor/0"], "pin"):
            pass


SUPERVISED_SLEEPERS = """
import json, os, sys, time

from absl import flags

flags.FLAGS.mark_as_parsed()
from mava_systems.launching import cpu_placement, node_processes

placement = cpu_placement.CpuPlacement(dedicated={"executor/0": (%(own)d,)}, shared=(%(shared)d,))
supervisor = node_processes.NodeSupervisor(max_restarts=1, say=print, placement=placement)
for name in ("executor/0", "trainer/0"):
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    supervisor.start(node_processes.NodeCommand(name, sleeper, dict(os.environ)))
print("started", json.dumps(supervisor.node_pids()), flush=True)
supervisor.wait()
"""


@needs_two_cores
def test_local_mp_starts_each_node_on_its_cores_and_restarts_it_there():
    own, shared = CPUS[-1], CPUS[0]
    process = subprocess.Popen(
        [sys.executable, "-c", SUPERVISED_SLEEPERS % {"own": own, "shared": shared}], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = OutputLines(process.stdout)
    try:
        output.wait_for("started", 60, process)
        line = next(line for line in output.lines if line.startswith("started"))
        pids = json.loads(line.split(" ", 1)[1])
        assert os.sched_getaffinity(pids["executor/0"]) == {own}
        assert os.sched_getaffinity(pids["trainer/0"]) == {shared}
        kill_in_tree(process.pid, pids["executor/0"])
        restarted = wait_for_node(process.pid, "executor/0", 30, other_than=pids["executor/0"])
        assert os.sched_getaffinity(restarted) == {own}
    finally:
        process.kill()
        output.join()


@needs_two_cores
@pytest.mark.parametrize("executors", [1, len(CPUS)])
def test_a_local_ray_runs_its_executors_on_their_cores_and_itself_on_the_rest(
        tmp_path, executors):
    program = lp.Program("placed")
    with program.group("trainer"):
        program.add_node(lp.CourierNode(ray_helpers.CoresReporter, str(tmp_path / "trainer.json")))
    with program.group("executor"):
        for index in range(executors):
            program.add_node(lp.CourierNode(
                ray_helpers.CoresReporter, str(tmp_path / f"executor{index}.json"),
                stop=index == executors - 1,
                wait_for=[str(tmp_path / f"{node}.json")
                          for node in ["trainer"] + [f"executor{i}" for i in range(executors)]]))
    names = ["trainer/0"] + [f"executor/{index}" for index in range(executors)]
    # As many executors as cores run on every core, the other nodes on the lowest.
    placement = cpu_placement.plan(names, share_cores_when_crowded=True)
    assert len(placement.shared) == (len(CPUS) - 1 if executors == 1 else 1)
    ray_launch.launch(program, RayLaunchConfig(num_cpus=2), record_dir=str(tmp_path),
                      cpu_placement_mode="auto")

    def report(node):
        with open(tmp_path / f"{node}.json") as report_file:
            return json.load(report_file)
    trainer = report("trainer")
    record = read_record(str(tmp_path))
    for index in range(executors):
        executor, cores = report(f"executor{index}"), list(placement.cpus_of(f"executor/{index}"))
        # Made on every core; then every thread of its process (Ray's own threads in it too)
        # on its core only.
        assert executor["made_on"] == CPUS
        assert executor["threads"] == [cores]
        assert executor["parent"] == list(placement.shared)  # Ray's raylet: the cores left.
        assert record["nodes"][f"executor/{index}"][0]["cpus"] == cores
    assert trainer["threads"] == [list(placement.shared)]
    assert record["nodes"]["trainer/0"][0]["cpus"] == list(placement.shared)
    assert os.sched_getaffinity(0) == set(CPUS)  # The launcher's own cores are given back.
