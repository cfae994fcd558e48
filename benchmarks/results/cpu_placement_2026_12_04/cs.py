"""Context switches a second of every thread on the machine (voluntary, involuntary) over 15 s of a
running one-executor program, grouped by process and thread name, and per executor step.
Usage: PYTHONPATH=<tree> python cs.py local_mp|ray
"""
import os, sys, time, signal, collections
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "count_batches_2026_12_04"))
from program_start import start_training_program
from benchmarks import common
launch = sys.argv[1]; extra = sys.argv[2:]
proc, tree, run_dir, csv = start_training_program(launch)
time.sleep(8)
def snap():
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            pname = open(f"/proc/{p}/cmdline","rb").read().split(b"\0")[0].decode()[-30:]
            comm = open(f"/proc/{p}/comm").read().strip()
            for t in os.listdir(f"/proc/{p}/task"):
                st = open(f"/proc/{p}/task/{t}/status").read()
                name = [l for l in st.splitlines() if l.startswith("Name:")][0].split(":",1)[1].strip()
                v = int([l for l in st.splitlines() if l.startswith("voluntary_ctxt")][0].split()[1])
                nv = int([l for l in st.splitlines() if l.startswith("nonvoluntary_ctxt")][0].split()[1])
                out[(p, t)] = (f"{p}|{comm}|{name}", v, nv)
        except Exception: pass
    return out
steps = lambda: common.count(common.last_row(csv), "executor_steps")
a = snap(); s0 = steps(); t0 = time.time(); time.sleep(15); b = snap(); s1 = steps(); dt = time.time()-t0
agg = collections.Counter(); aggn = collections.Counter()
for k, (n, v, nv) in b.items():
    if k in a:
        agg[n] += v - a[k][1]; aggn[n] += nv - a[k][2]
tot = sum(agg.values()) + sum(aggn.values())
print(launch, "steps/s", round((s1-s0)/dt), "switches/s", round(tot/dt), "vol", round(sum(agg.values())/dt), "per step", round(tot/(s1-s0),2))
for n, c in agg.most_common(30):
    print(f"  {c/dt:8.0f} vol {aggn[n]/dt:6.0f} invol  {n}")
proc.send_signal(signal.SIGINT); proc.wait(90)
