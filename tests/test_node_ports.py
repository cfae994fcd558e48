"""A node whose port another process took before the node could bind it (Launchpad picks the
ports when the program is launched, the node binds its own seconds later): under local_mp an
executor is started again on a new port; a node that others call stops the program with one
line naming it and the port, and the launch is launched again once on new ports.

The race is made deterministic: the launcher under test listens on the node's port on
127.0.0.1 just before it starts the node (as another process on a busy machine would).
"""

import os
import re
import subprocess
import sys

import pytest

from program_helpers import ROOT

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")

# A tiny program (no learning): two executors each add one to a counter; the trainer stops
# the program once the counter reaches 2. argv: the node whose port is taken before it starts,
# "always" to take it at every launch (else at the first start only), "stops_itself" for a
# counter that stops the program itself as it fails (as the replay does).
PROGRAM = """
import socket, sys, time

from absl import flags
import launchpad as lp

from mava_systems.launching import launch, node_processes

from mava_systems.nodes import lifecycle

flags.FLAGS(["program", "--lp_termination_notice_secs=5"])
target, how = sys.argv[1], sys.argv[2:]
always = "always" in how


# A node that stops the program itself when it fails, before its process ends (as the
# replay does).
class StopsProgramIfItFails(lp.CourierNode):
    def run(self):
        try:
            super().run()
        except Exception as error:
            lifecycle.stop_program_after_failure("counter (while starting)", error)
            raise


class Counter:
    def __init__(self):
        self.count = 0

    def add(self):
        self.count += 1
        return self.count

    def get(self):
        return self.count


class Executor:
    def __init__(self, counter):
        self._counter = counter

    def run(self):
        print("counted", self._counter.add(), flush=True)
        lp.wait_for_stop()


class Trainer:
    def __init__(self, counter):
        self._counter = counter

    def run(self):
        while self._counter.get() < 2:
            time.sleep(0.2)
        print("all counted", flush=True)
        lp.stop()


def build():
    program = lp.Program("ports")
    with program.group("counter"):
        node_class = StopsProgramIfItFails if "stops_itself" in how else lp.CourierNode
        counter = program.add_node(node_class(Counter))
    with program.group("executor"):
        for _ in range(2):
            program.add_node(lp.CourierNode(Executor, counter))
    with program.group("trainer"):
        program.add_node(lp.CourierNode(Trainer, counter))
    return program


taken = []
start = node_processes.NodeSupervisor.start


def start_after_taking_its_port(supervisor, node):
    if node.name == target and (always or not taken):
        # Another process takes the port between the pick and the node's bind.
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        holder.bind(("127.0.0.1", node.ports[0]))
        holder.listen()
        taken.append(holder)
        print("took port", node.ports[0], flush=True)
    return start(supervisor, node)


node_processes.NodeSupervisor.start = start_after_taking_its_port
try:
    launch.launch(build, "local_mp")
except launch.NodeFailure as failure:
    print("NodeFailure:", failure, flush=True)
    sys.exit(1)
print("launch returned", flush=True)
"""


def run_program(target, *how):
    result = subprocess.run([sys.executable, "-c", PROGRAM, target, *how], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=240)
    return result.returncode, result.stdout


def taken_ports(output):
    return [int(port) for port in re.findall(r"^took port (\d+)$", output, re.MULTILINE)]


def test_an_executor_whose_port_was_taken_starts_again_on_a_new_port():
    returncode, output = run_program("executor/0")
    [taken] = taken_ports(output)
    moved = re.search(r"warning: executor/0 could not listen on port (\d+) at [\d:]+: another "
                      r"process took it after it was picked; started executor/0 again on port "
                      r"(\d+)", output)
    assert moved, output
    assert int(moved.group(1)) == taken and int(moved.group(2)) != taken
    assert returncode == 0, output
    # Both executors counted once (the moved one after its move), and the run ended normally.
    assert sorted(re.findall(r"\[executor/(\d)\] counted (\d)", output)) in (
        [("0", "1"), ("1", "2")], [("0", "2"), ("1", "1")]), output
    assert "[trainer/0] all counted" in output
    assert "launch returned" in output and "Launching again" not in output


@pytest.mark.parametrize("how", [[], ["stops_itself"]])
def test_a_called_node_whose_port_was_taken_stops_the_run_and_it_is_launched_again_once(how):
    returncode, output = run_program("counter/0", *how)
    [taken] = taken_ports(output)
    assert (f"error: counter/0 could not listen on port {taken} at ") in output, output
    assert ("another process took it after it was picked; stopping the run (the other nodes "
            "save their checkpoints): launch again to resume on new ports") in output
    assert output.count("Launching again on new ports (once)") == 1
    second_launch = output.split("Launching again on new ports (once)")[1]
    assert "[trainer/0] all counted" in second_launch, output
    assert returncode == 0 and "launch returned" in output, output


def test_a_port_taken_at_both_launches_ends_the_launch_with_the_error():
    returncode, output = run_program("counter/0", "always")
    first, second = taken_ports(output)
    assert first != second
    assert output.count("Launching again on new ports (once)") == 1
    assert returncode == 1, output
    assert (f"NodeFailure: counter/0 could not listen on port {second}: another process took "
            "it after it was picked") in output, output
    assert "all counted" not in output


def test_a_test_runs_ports_come_from_its_port_server_outside_the_ephemeral_range():
    """conftest.py's port server: every process of a test run gets ports from one pool, none of
    them a port an outgoing connection could hold."""
    import portpicker  # pylint: disable=import-outside-toplevel

    from conftest import PORT_POOL  # pylint: disable=import-outside-toplevel

    if not os.environ.get("PORTSERVER_ADDRESS"):
        pytest.skip("no port server in this run (portpicker's portserver.py is not installed)")
    low, high = map(int, PORT_POOL.split("-"))
    here = portpicker.pick_unused_port()
    child = int(subprocess.run(
        [sys.executable, "-c", "import portpicker; print(portpicker.pick_unused_port())"],
        capture_output=True, text=True, check=True).stdout)
    assert low <= here <= high and low <= child <= high and here != child
