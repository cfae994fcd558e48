"""Every thread of the machine busy over 10 s of a running 1-executor program: its cores (share
of one), process, name, affinity, and whether it is in the executor's process."""
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


def all_threads():
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                try:
                    f = open(f"/proc/{p}/task/{t}/stat").read(); nm = f[f.index("(")+1:f.rindex(")")]
                    f = f[f.rindex(")") + 2:].split()
                    out[(int(p), int(t))] = ((int(f[11]) + int(f[12])) / TICK, nm)
                except OSError: pass
        except OSError: pass
    return out

for launch in sys.argv[1].split(","):
    proc, tree, run_dir, csv = start_training_program(launch)
    time.sleep(8)
    pid = None
    while pid is None: pid = executor_pid(launch, run_dir); time.sleep(0.5)
    a = all_threads(); ct0 = open("/proc/stat").read(); time.sleep(10); b = all_threads()
    rows = []
    for k, (c, nm) in b.items():
        if k in a and c - a[k][0] > 0.02:
            try: aff = sorted(os.sched_getaffinity(k[1]))
            except OSError: aff = None
            pname = open(f"/proc/{k[0]}/comm").read().strip() if os.path.exists(f"/proc/{k[0]}/comm") else "?"
            rows.append((round((c - a[k][0]) / 10, 3), pname, nm, aff, k[0] == pid))
    for r in sorted(rows, reverse=True): print(launch, r, flush=True)
    proc.send_signal(signal.SIGINT); proc.wait(90)
