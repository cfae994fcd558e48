"""A whole-machine `perf` profile of a running MADQN program (local_mp), for `perf_account.py`.

    PYTHONPATH=. .venv/bin/python benchmarks/results/allocator_2026_12_03/perf_program.py \
        <out_dir> [executors (2)] [seconds (20)] [example flags...]

Starts examples/mpe/run_madqn.py on simple_spread_v3 (no step limit), waits for
its first trainer step and 10 s more, names each node's process, samples every
CPU for `seconds` (`perf record -a -e cpu-clock`, 499 Hz: the VM has no hardware
counters), then stops the program. Writes <out_dir>/perf.data and meta.json (the
node of each process id, and the trainer's log rows at the start and end of the
sampling: the executor steps the samples are divided by).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks import common


def main() -> None:
    out_dir = sys.argv[1]
    executors = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    flags = sys.argv[4:]
    os.makedirs(out_dir, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="perf-program-")
    output_log = os.path.join(run_dir, "output.log")
    command = common.example_command(os.path.join(run_dir, "run"), "local_mp", 100_000_000,
                                     [f"--num_executors={executors}", *flags])
    process = common.start_example(command, output_log, common.ROOT)
    tree = common.ProcessTree(process.pid)
    trainer_csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    start = time.monotonic()
    while not (os.path.exists(trainer_csv) and os.path.getsize(trainer_csv) > 0):
        if time.monotonic() - start > 300 or process.poll() is not None:
            print(common.tail_of(output_log))
            raise SystemExit("no trainer step")
        time.sleep(0.5)
    time.sleep(10)  # Past the first steps' tracing.
    labels = {proc.pid: tree.node_label(proc) or
              ("launcher" if proc.pid == process.pid else proc.name())
              for proc in tree.processes()}
    before = common.last_row(trainer_csv)
    subprocess.run(["perf", "record", "-a", "-F", "499", "-e", "cpu-clock", "-o",
                    os.path.join(out_dir, "perf.data"), "--", "sleep", str(seconds)], check=True)
    after = common.last_row(trainer_csv)
    common.stop_example(process, tree)
    with open(os.path.join(out_dir, "meta.json"), "w") as meta:
        json.dump({"labels": labels, "before": before, "after": after, "command": command},
                  meta, indent=1)


if __name__ == "__main__":
    main()
