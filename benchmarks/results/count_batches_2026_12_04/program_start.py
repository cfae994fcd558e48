"""Starts a one-executor program on simple_spread_v3 and waits until its trainer has stepped."""
import os, tempfile, time
from benchmarks import common


def start_training_program(launch, system="madqn", flags=(), timeout_s=300):
    """(process, process tree, run dir, trainer CSV) of a running program past its first trainer step."""
    run_dir = tempfile.mkdtemp(prefix=f"{launch}-")
    command = common.example_command(os.path.join(run_dir, "run"), launch, 100_000_000,
                                     ["--num_executors=1", *flags], system_name=system)
    process = common.start_example(command, os.path.join(run_dir, "output.log"), common.ROOT)
    tree = common.ProcessTree(process.pid)
    csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    started = time.monotonic()
    while not (os.path.exists(csv) and os.path.getsize(csv) > 0):
        if time.monotonic() - started > timeout_s:
            raise SystemExit("no trainer step")
        time.sleep(0.5)
    return process, tree, run_dir, csv
