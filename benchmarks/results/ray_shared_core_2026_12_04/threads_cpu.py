"""CPU of every thread on the machine over a window of a running one-executor program, by process
and thread name, per executor step (ms) and as cores. Usage: PYTHONPATH=<tree> python threads_cpu.py local_mp|ray"""
import os, sys, time, signal, collections
sys.path.insert(0, "/work/main/benchmarks/results/count_batches_2026_12_04")
from program_start import start_training_program
from benchmarks import common
launch = sys.argv[1]
window = float(sys.argv[2]) if len(sys.argv) > 2 else 20
proc, tree, run_dir, csv = start_training_program(launch)
time.sleep(8)
TICK = os.sysconf("SC_CLK_TCK")
RAY_NODES = {}
def load_ray_nodes():
    import json, glob
    for path in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
        record = json.load(open(path))
        nodes = record.get("nodes", record)
        for name, incarnations in nodes.items():
            if isinstance(incarnations, list):
                for info in incarnations:
                    if isinstance(info, dict) and "pid" in info:
                        RAY_NODES[str(info["pid"])] = name
def label(pid):
    if pid in RAY_NODES:
        return "ray:" + RAY_NODES[pid]
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        for item in env:
            if item.startswith(b"MAVA_SYSTEMS_NODE="):
                return item.split(b"=", 1)[1].decode()
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        text = " ".join(c.decode(errors="replace") for c in cmd)
        comm = open(f"/proc/{pid}/comm").read().strip()
        return f"{comm}:{text[-40:]}"
    except OSError:
        return "?"
def snap():
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                st = open(f"/proc/{p}/task/{t}/stat").read()
                name = st[st.index("(") + 1:st.rindex(")")]
                fields = st[st.rindex(")") + 2:].split()
                out[(p, t)] = (p, name, (int(fields[11]) + int(fields[12])) / TICK)
        except OSError:
            pass
    return out
steps = lambda: common.count(common.last_row(csv), "executor_steps")
load_ray_nodes()
print('ray nodes', RAY_NODES)
a = snap(); s0 = steps(); t0 = time.time(); time.sleep(window); b = snap(); s1 = steps(); dt = time.time() - t0
labels = {}
by_thread = collections.Counter(); by_process = collections.Counter()
for key, (p, name, cpu) in b.items():
    used = cpu - a.get(key, (p, name, 0.0))[2]
    if used <= 0: continue
    if p not in labels: labels[p] = label(p)
    by_thread[(labels[p], name)] += used; by_process[labels[p]] += used
n = s1 - s0
print(f"{launch}: {n/dt:.0f} executor steps/s, {sum(by_process.values())/dt:.2f} cores")
for lab, used in by_process.most_common(20):
    print(f"  {used/dt:6.3f} cores {1000*used/n:7.4f} ms/step  {lab}")
print("threads:")
for (lab, name), used in by_thread.most_common(40):
    print(f"  {used/dt:6.3f} cores {1000*used/n:7.4f} ms/step  {lab} / {name}")
proc.send_signal(signal.SIGINT); proc.wait(120)
