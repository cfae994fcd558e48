"""Per run of a 1-executor Ray (or local_mp) MADQN program: the executor's steps/s, CPU per step,
context switches and faults per step, and how busy each core is (and by whom besides the executor)."""
import glob, json, os, signal, sys, time
sys.path.insert(0, "/work/main/benchmarks/results/count_batches_2026_12_04")
from program_start import start_training_program
from benchmarks import common

launch = sys.argv[1]; runs = int(sys.argv[2]); window = float(sys.argv[3]) if len(sys.argv) > 3 else 12
TICK = os.sysconf("SC_CLK_TCK")

def executor_pid(run_dir):
    if launch == "ray":
        for path in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
            nodes = json.load(open(path))["nodes"]
            return nodes["executor/0"][-1]["pid"]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"MAVA_SYSTEMS_NODE=executor/0" in open(f"/proc/{pid}/environ", "rb").read():
                    return int(pid)
            except OSError:
                pass

def threads(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{t}/stat").read()
            f = st[st.rindex(")") + 2:].split()
            status = open(f"/proc/{pid}/task/{t}/status").read().split("\n")
            cs = {l.split(":")[0]: int(l.split()[1]) for l in status if "ctxt_switches" in l}
            out[t] = dict(cpu=(int(f[11]) + int(f[12])) / TICK, minflt=int(f[7]), last_cpu=int(f[36]),
                          vol=cs.get("voluntary_ctxt_switches", 0), nonvol=cs.get("nonvoluntary_ctxt_switches", 0),
                          name=st[st.index("(") + 1:st.rindex(")")])
        except (OSError, ValueError, IndexError):
            pass
    return out

def cores():
    out = {}
    for line in open("/proc/stat"):
        if line.startswith("cpu") and line[3].isdigit():
            f = line.split(); out[f[0]] = (sum(map(int, f[1:4])) + sum(map(int, f[6:9]))) / TICK
    return out

for run in range(runs):
    proc, tree, run_dir, csv = start_training_program(launch)
    time.sleep(8)
    pid = None
    while pid is None:
        pid = executor_pid(run_dir); time.sleep(0.5)
    steps = lambda: common.count(common.last_row(csv), "executor_steps")
    a, ca, s0, t0 = threads(pid), cores(), steps(), time.time()
    time.sleep(window)
    b, cb, s1, dt = threads(pid), cores(), steps(), time.time() - t0
    n = s1 - s0
    tot = lambda key: sum(b[t][key] - a.get(t, {key: 0})[key] for t in b)
    busiest = sorted(b, key=lambda t: -(b[t]["cpu"] - a.get(t, {"cpu": 0})["cpu"]))[:4]
    print(f"run {run}: {n/dt:7.0f} steps/s  exec {1000*tot('cpu')/n:.3f} ms/step ({tot('cpu')/dt:.2f} cores)"
          f"  vol {tot('vol')/n:.2f} nonvol {tot('nonvol')/n:.3f} minflt {tot('minflt')/n:.2f} per step"
          f"  cores busy {[round((cb[c]-ca[c])/dt,2) for c in sorted(cb)]}", flush=True)
    for t in busiest:
        d = {k: b[t][k] - a.get(t, {k: 0})[k] for k in ("cpu", "vol", "nonvol", "minflt")}
        print(f"     {b[t]['name']:>16} cpu {d['cpu']/dt:.3f} vol/s {d['vol']/dt:.0f} nonvol/s {d['nonvol']/dt:.0f} minflt/s {d['minflt']/dt:.0f} last_cpu {b[t]['last_cpu']}", flush=True)
    proc.send_signal(signal.SIGINT); proc.wait(120)
    time.sleep(3)
