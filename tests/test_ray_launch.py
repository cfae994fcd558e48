"""The Ray launcher: its configuration, the runtime it gives nodes, and MADQN run on a local Ray.

The program runs are subprocesses of the MADQN example with `--lp_launch_type=ray`
on `debug/line_world_v0`; each starts Ray on 127.0.0.1 and must leave no Ray
process behind.
"""

import glob
import json
import os
import re
import signal
import threading

import launchpad as lp
import pytest

from mava_systems import madqn, ray_launch
from mava_systems.runs.run_directory import read_status
from mava_systems.ray_launch import RayLaunchConfig, parse_group_resources
from mava_systems.ray_launch.config import parse_runtime_env
from mava_systems.ray_launch.launcher import (RayLaunchError, node_specs, spread_strategy,
                                              stop_signals_raise)
from mava_systems.ray_launch.proxies import CourierRef, ReverbRef
from mava_systems.ray_launch.runtime import NodeRuntime
import program_helpers
import ray_helpers
from program_helpers import read_csv
from ray_helpers import (assert_no_new_ray_processes, is_running, node_pids, ray_processes,
                         read_record)
from test_madqn_program import SMALL_CONFIG

LOOPBACK = "127.0.0.1"


def test_group_resources_parse_and_become_actor_options():
    parsed = parse_group_resources(["trainer:GPU=1", "executor:CPU=0.5,host_b=1",
                                    "trainer:memory=1000"])
    assert parsed == {"trainer": {"GPU": 1.0, "memory": 1000.0},
                      "executor": {"CPU": 0.5, "host_b": 1.0}}
    config = RayLaunchConfig(group_resources=parsed)
    assert config.actor_options("trainer") == {"num_cpus": 0, "num_gpus": 1.0, "memory": 1000.0}
    assert config.actor_options("executor") == {"num_cpus": 0.5, "resources": {"host_b": 1.0}}
    assert config.actor_options("replay") == {"num_cpus": 0}
    with pytest.raises(ValueError, match="groups the program does not have: \\['trainr'\\]"):
        RayLaunchConfig(group_resources={"trainr": {"GPU": 1}}).check_groups(["trainer"])


@pytest.mark.parametrize("spec, message", [
    ("trainer", "is not GROUP:RESOURCE=AMOUNT"),
    ("trainer:GPU", "'GPU' is not RESOURCE=AMOUNT"),
    ("trainer:GPU=one", "'GPU=one' is not RESOURCE=AMOUNT"),
    (":GPU=1", "is not GROUP:RESOURCE=AMOUNT"),
])
def test_malformed_group_resources_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_group_resources([spec])


def test_a_groups_nodes_are_dealt_over_the_cluster_nodes_able_to_host_them():
    cluster_nodes = [
        {"NodeID": "c", "Alive": True, "Resources": {"CPU": 1.0, "host_c": 10.0}},
        {"NodeID": "a", "Alive": True, "Resources": {"CPU": 1.0, "GPU": 1.0, "host_a": 10.0}},
        {"NodeID": "d", "Alive": False, "Resources": {"CPU": 1.0}},
        {"NodeID": "b", "Alive": True, "Resources": {"CPU": 1.0}},
    ]
    config = RayLaunchConfig(group_resources={"trainer": {"GPU": 1}, "cacher": {"host_c": 1},
                                              "evaluator": {"host_e": 1}})
    # Alive nodes in turn, in ID order; every placement is soft.
    placed = [spread_strategy(cluster_nodes, config.actor_options("executor"), index)
              for index in range(5)]
    assert [strategy.node_id for strategy in placed] == ["a", "b", "c", "a", "b"]
    assert all(strategy.soft for strategy in placed)
    # Only the nodes having every resource asked for (built-in or custom).
    assert spread_strategy(cluster_nodes, config.actor_options("trainer"), 1).node_id == "a"
    assert spread_strategy(cluster_nodes, config.actor_options("cacher"), 1).node_id == "c"
    # None can: left to Ray, which reports the node as unplaced.
    assert spread_strategy(cluster_nodes, config.actor_options("evaluator"), 0) is None


def test_bad_launch_settings_are_refused():
    with pytest.raises(ValueError, match="max_restarts must be an integer >= 0"):
        RayLaunchConfig(max_restarts=-1)
    with pytest.raises(ValueError, match="negative amount of GPU"):
        RayLaunchConfig(group_resources={"trainer": {"GPU": -1}})
    with pytest.raises(ValueError, match="not JSON"):
        parse_runtime_env("{working_dir: .}")
    assert parse_runtime_env('{"working_dir": "."}') == {"working_dir": "."}


def test_node_specs_replace_handles_with_actor_references(line_world_factory, tmp_run_dir):
    system = madqn.MADQN(line_world_factory, num_executors=2, num_caches=1,
                         max_executor_steps=100, run_dir=tmp_run_dir)
    specs = {spec.name: spec for spec in node_specs(system.build(), "space")}
    assert sorted(specs) == ["cacher/0", "coordinator/0", "counter/0", "evaluator/0",
                             "executor/0", "executor/1", "replay/0", "trainer/0"]
    assert specs["replay/0"].reverb_node is not None
    executor = specs["executor/1"]
    executor_id, replay, source, counter = executor.args
    assert executor_id == 1
    assert isinstance(replay, ReverbRef) and replay.name == "replay/0"
    assert isinstance(source, CourierRef) and source.name == "cacher/0"
    assert isinstance(counter, CourierRef) and counter.name == "counter/0"
    assert replay.namespace == "space"
    assert executor.uses == ["cacher/0", "counter/0", "replay/0"]
    assert executor.uses_reverb == ["replay/0"] == specs["trainer/0"].uses_reverb
    assert specs["evaluator/0"].uses_reverb == []


def test_unsupported_nodes_are_refused_before_ray_starts():
    program = lp.Program("plain")
    program.add_node(lp.PyNode(print), label="main")
    with pytest.raises(ValueError, match="node main/0 is a PyNode"):
        node_specs(program, "space")


@pytest.mark.parametrize("signum, name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM"),
                                           (signal.SIGQUIT, "SIGQUIT")])
def test_stop_signals_interrupt_the_launcher_even_when_inherited_ignored(signum, name):
    """The launcher's watch loop is interrupted by Ctrl-C, SIGTERM and SIGQUIT, also in a process
    that inherited SIGINT ignored (a background job); the previous handlers come back after."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            with stop_signals_raise() as received:
                os.kill(os.getpid(), signum)
                for _ in range(100):  # The handler runs between bytecodes of the main thread.
                    threading.Event().wait(0.01)
        assert received == [name]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_node_runtime_gives_nodes_launchpads_stop_event_handlers_and_stopper():
    stopped_by_node = []
    runtime = NodeRuntime(stop_program=lambda: stopped_by_node.append(True))
    seen = {}

    def node():
        runtime.enter()
        lp.register_stop_handler(lambda: seen.setdefault("handler", True))
        seen["before"] = lp.wait_for_stop(0.01)
        lp.stop()  # What a coordinator does: asks the launcher to stop the program.
        seen["stopped"] = lp.stop_event().wait(10)

    thread = threading.Thread(target=node)
    thread.start()
    while not stopped_by_node:
        thread.join(0.01)
    runtime.stop()
    thread.join(10)
    assert seen == {"before": False, "stopped": True, "handler": True}
    assert stopped_by_node == [True]


def run_example(run_dir, *flags, timeout=600):
    """The MADQN example on the small configuration under `--lp_launch_type=ray`: its output."""
    return program_helpers.run_example(os.path.join("mpe", "run_madqn.py"), run_dir,
                                       *SMALL_CONFIG, *flags, launch_type="ray", timeout=timeout)


def test_madqn_runs_on_a_local_ray_on_loopback_and_leaves_no_process(tmp_path):
    run_dir = str(tmp_path / "run")
    before = ray_processes()
    output = run_example(run_dir, "--max_executor_steps=400", "--num_executors=2")

    assert "Started a local Ray instance" in output
    assert "Ray launcher: coordinator/0 stopped the program" in output
    assert "(launch type ray)" in output and "Finished." in output
    record = read_record(run_dir)
    # Ray's node, every node actor and the replay address handed to executors are on loopback.
    assert [node["ip"] for node in record["cluster_nodes"]] == [LOOPBACK]
    assert sorted(record["nodes"]) == ["coordinator/0", "counter/0", "evaluator/0",
                                       "executor/0", "executor/1", "replay/0", "trainer/0"]
    assert all(incarnation["ip"] == LOOPBACK for incarnations in record["nodes"].values()
               for incarnation in incarnations)
    assert record["nodes"]["replay/0"][0]["address"].startswith(LOOPBACK + ":")
    assert record["restarts"] == {name: 0 for name in record["nodes"]}
    assert len(set(node_pids(record))) == 7  # One process per node.
    # Each runs with jemalloc (`--allocator` auto: LD_PRELOAD reaches Ray's workers).
    assert all(incarnation["jemalloc"] for incarnations in record["nodes"].values()
               for incarnation in incarnations)
    # What the nodes served one another: variables from the trainer, counts from the counter.
    served = record["served_calls"]
    assert served["trainer/0"].get("get_variables", 0) >= 2  # Each executor's first fetch.
    assert served["counter/0"].get("increment", 0) > 0
    assert "replay/0" not in served  # Reverb is reached directly, not through calls.

    assert read_status(run_dir).counts["executor_steps"] >= 400  # The counter's last save.
    trainer_rows = read_csv(run_dir, "trainer")
    assert int(trainer_rows[-1]["trainer_steps"]) > 0
    assert int(trainer_rows[-1]["replay_size"]) >= 100
    for executor_id in (0, 1):
        assert int(read_csv(run_dir, f"executor_{executor_id}")[-1]["episode_length"]) == 10
    for node in ("trainer", "counter"):
        assert glob.glob(os.path.join(run_dir, "checkpoints", node, "ckpt-*.index")), node
    assert glob.glob(os.path.join(run_dir, "checkpoints", "replay", "*", "DONE"))

    assert_no_new_ray_processes(before)
    assert not any(is_running(pid) for pid in node_pids(record))


def test_proxies_reach_nodes_and_a_node_failing_too_often_stops_the_run(tmp_path):
    out_path = str(tmp_path / "replies.json")
    program = lp.Program("small")
    with program.group("doubler"):
        doubler = program.add_node(lp.CourierNode(ray_helpers.Doubler))
    with program.group("caller"):
        program.add_node(lp.CourierNode(ray_helpers.Caller, doubler, out_path))
    with program.group("broken"):
        program.add_node(lp.CourierNode(ray_helpers.Broken, out_path))
    before = ray_processes()
    # Ray restarts a failed actor at once, so a loaded machine may see several failures
    # before the launcher's next poll.
    with pytest.raises(RayLaunchError, match=(
            r"node broken/0 died or failed [1-9]\d* time\(s\), more than "
            r"--ray_max_restarts=0 allows; its last failure: ValueError: broken on purpose")):
        ray_launch.launch(program, RayLaunchConfig(max_restarts=0, num_cpus=2),
                          record_dir=str(tmp_path))
    with open(out_path) as replies_file:
        assert json.load(replies_file) == {"call": 42, "future": 8}
    record = read_record(str(tmp_path))
    # The broken node was restarted at least once (and killed for good once it had failed
    # too often); the caller never restarted.
    assert len(record["nodes"]["broken/0"]) >= 2 and len(record["nodes"]["caller/0"]) == 1
    assert record["restarts"]["broken/0"] >= 1 and record["restarts"]["caller/0"] == 0
    assert_no_new_ray_processes(before)
    assert not any(is_running(pid) for pid in node_pids(record))


def test_a_node_whose_loop_fails_is_restarted_not_the_program_stopped(tmp_path):
    """Under local_mp a failing loop stops the program (nothing would notice it otherwise);
    Ray restarts the node instead, until it has failed more than `max_restarts` allows."""
    program = lp.Program("small")
    with program.group("doubler"):
        program.add_node(lp.CourierNode(ray_helpers.Doubler))
    with program.group("broken"):
        program.add_node(lp.CourierNode(ray_helpers.BrokenLoop))
    with pytest.raises(RayLaunchError, match=(
            r"node broken/0 died or failed (?:[2-9]|[1-9]\d+) time\(s\), more than "
            r"--ray_max_restarts=1 allows; its last failure: ValueError: loop broken on purpose")):
        ray_launch.launch(program, RayLaunchConfig(max_restarts=1, num_cpus=2),
                          record_dir=str(tmp_path))
    record = read_record(str(tmp_path))
    assert record["restarts"]["broken/0"] >= 1
