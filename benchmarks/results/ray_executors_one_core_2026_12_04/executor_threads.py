"""Per run of a 1-executor Ray (or local_mp) MADQN program: the executor's steps/s, CPU per step,
context switches and faults per step, and how busy each core is (and by whom besides the executor)."""
import os, sys, time
# The program start and the executor's lookup shared with the next session's probes.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "ray_crowded_executors_2026_12_05"))
from running_executor import TICK, start, stop

launch = sys.argv[1]; runs = int(sys.argv[2]); window = float(sys.argv[3]) if len(sys.argv) > 3 else 12

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
    proc, pid, steps = start(launch)
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
    stop(proc)
    time.sleep(3)
