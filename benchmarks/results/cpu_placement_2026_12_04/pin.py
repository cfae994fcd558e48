"""Executor steps/s of one running program in alternating 12 s windows: `free` (every process on
both cores), `pinned` (the busiest process, the executor, alone on core 0; every other process of
the machine on core 1) and `exeonly` (the executor on core 0, the rest anywhere).

A probe for a 2-core machine: it moves every process of the machine (taskset), and puts them
all back on both cores at the end, also when interrupted.
Usage: PYTHONPATH=<tree> python pin.py local_mp|ray [system] [modes, e.g. free,pinned,exeonly]
"""
import os, sys, time, signal, subprocess
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "count_batches_2026_12_04"))
from program_start import start_training_program
from benchmarks import common

launch = sys.argv[1]
system = sys.argv[2] if len(sys.argv) > 2 else "madqn"
modes = (sys.argv[3] if len(sys.argv) > 3 else "free,pinned").split(",")


def ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
        fields = text[text.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError):
        return 0


def pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) > 100]


def pin(mode, executor):
    for pid in pids():
        mask = "3" if mode == "free" else "1" if pid == executor else "2" if mode == "pinned" else "3"
        subprocess.run(["taskset", "-a", "-p", mask, str(pid)], capture_output=True)


process, _, _, csv = start_training_program(launch, system=system)
executor = None
try:
    time.sleep(8)
    before = {pid: ticks(pid) for pid in pids()}
    time.sleep(3)
    executor = max(before, key=lambda pid: ticks(pid) - before[pid])
    results = {mode: [] for mode in modes}
    for mode in modes * 2:
        pin(mode, executor)
        time.sleep(2)
        cpu0, steps0, time0 = ticks(executor), common.count(common.last_row(csv), "executor_steps"), time.time()
        time.sleep(12)
        cpu1, steps1, time1 = ticks(executor), common.count(common.last_row(csv), "executor_steps"), time.time()
        results[mode].append((steps1 - steps0) / (time1 - time0))
        print(system, launch, mode, round(results[mode][-1]), "executor cpu%",
              round((cpu1 - cpu0) / (time1 - time0)), "ms/step",
              round(10 * (cpu1 - cpu0) / max(steps1 - steps0, 1), 3), flush=True)
    print(system, launch, {mode: sorted(round(rate) for rate in rates) for mode, rates in results.items()})
finally:
    if executor is not None:
        pin("free", executor)
    process.send_signal(signal.SIGINT)
    process.wait(90)
