"""Windows alternated in one running 1-executor program: the executor's loop thread with its
process's other threads on its core (A) or those threads on core 0 (B)."""
import glob, json, os, signal, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "count_batches_2026_12_04"))
from program_start import start_training_program
from benchmarks import common
TICK = os.sysconf("SC_CLK_TCK")

def executor_pid(launch, run_dir):
    if launch == "ray":
        for path in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
            return json.load(open(path))["nodes"]["executor/0"][-1]["pid"]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"MAVA_SYSTEMS_NODE=executor/0" in open(f"/proc/{pid}/environ", "rb").read():
                    return int(pid)
            except OSError: pass

def cpu(pid, tid):
    f = open(f"/proc/{pid}/task/{tid}/stat").read(); f = f[f.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / TICK

def tids(pid): return [int(t) for t in os.listdir(f"/proc/{pid}/task")]

def place(pid, loop, others_core):
    for t in tids(pid):
        try: os.sched_setaffinity(t, [1] if t == loop else [others_core])
        except OSError: pass

for launch in sys.argv[1].split(","):
    proc, tree, run_dir, csv = start_training_program(launch)
    time.sleep(8)
    pid = None
    while pid is None: pid = executor_pid(launch, run_dir); time.sleep(0.5)
    steps = lambda: common.count(common.last_row(csv), "executor_steps")
    a = {t: cpu(pid, t) for t in tids(pid)}; time.sleep(3)
    loop = max(a, key=lambda t: cpu(pid, t) - a[t])
    print(launch, "affinity before:", os.sched_getaffinity(pid), flush=True)
    for rnd in range(3):
        for mode, others in (("A", 1), ("B", 0)):
            place(pid, loop, others); time.sleep(2)
            s0, c0, t0 = steps(), cpu(pid, loop), time.time(); time.sleep(8)
            n = steps() - s0; dt = time.time() - t0
            print(f"{launch} {mode}: {n/dt:6.0f} steps/s  loop {1000*(cpu(pid, loop)-c0)/n:.3f} ms/step", flush=True)
    proc.send_signal(signal.SIGINT); proc.wait(90)
