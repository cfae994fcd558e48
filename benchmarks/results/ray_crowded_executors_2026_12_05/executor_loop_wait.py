"""The executor's loop thread in a running 1-executor program (`ray` or `local_mp`, comma-separated
launches as argv[1]): its share of time on CPU, waiting to run and asleep, its switches per step,
and the process's other busiest threads."""
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


def sched(pid, tid):
    run, wait, slices = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
    st = open(f"/proc/{pid}/task/{tid}/status").read().split("\n")
    cs = {l.split(":")[0]: int(l.split()[1]) for l in st if "ctxt_switches" in l}
    return run / 1e9, wait / 1e9, cs["voluntary_ctxt_switches"], cs["nonvoluntary_ctxt_switches"]

def name(pid, t): return open(f"/proc/{pid}/task/{t}/comm").read().strip()

for launch in sys.argv[1].split(","):
    proc, tree, run_dir, csv = start_training_program(launch)
    time.sleep(8)
    pid = None
    while pid is None: pid = executor_pid(launch, run_dir); time.sleep(0.5)
    steps = lambda: common.count(common.last_row(csv), "executor_steps")
    a = {t: cpu(pid, t) for t in tids(pid)}; time.sleep(3)
    loop = max(a, key=lambda t: cpu(pid, t) - a[t])
    for rnd in range(2):
        all0 = {t: sched(pid, t) for t in tids(pid)}
        s0, t0 = steps(), time.time(); time.sleep(10)
        n = steps() - s0; dt = time.time() - t0
        all1 = {t: sched(pid, t) for t in tids(pid)}
        d = [x - y for x, y in zip(all1[loop], all0[loop])]
        print(f"{launch}: {n/dt:6.0f} steps/s loop on-cpu {d[0]/dt:.3f} runq {d[1]/dt:.3f} asleep {1-(d[0]+d[1])/dt:.3f}"
              f" vol/step {d[2]/n:.3f} nonvol/step {d[3]/n:.3f}", flush=True)
        others = sorted(((all1[t][0] - all0[t][0]) / dt, t) for t in all1 if t in all0 and t != loop)[-5:]
        print("   others (cores):", [(name(pid, t), round(c, 3)) for c, t in reversed(others)], flush=True)
    proc.send_signal(signal.SIGINT); proc.wait(90)
