"""Context switches per second, machine-wide and per node, in a one-executor MADQN program."""
import glob, json, os, sys, time
from benchmarks import common
from program_start import start_training_program
import psutil

def ctxt():
    for line in open("/proc/stat"):
        if line.startswith("ctxt"): return int(line.split()[1])

def main():
    launch = sys.argv[1]; extra = sys.argv[2:]
    process, tree, run_dir, csv = start_training_program(launch, flags=extra)
    time.sleep(6)
    procs = tree.processes()
    if launch == "ray":
        # every process on the machine that is Ray's or ours
        procs = [p for p in psutil.process_iter() if p.pid != os.getpid()]
    names = {}
    if launch == "ray":
        record = json.load(open(glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True)[0]))
        for name, entries in record["nodes"].items():
            names[entries[-1]["pid"]] = name
    else:
        for p in procs:
            names[p.pid] = tree.node_label(p) or ""
    def threads(pid):
        out = {}
        for task in glob.glob(f"/proc/{pid}/task/*"):
            try:
                vol = invol = 0; name = open(task + "/comm").read().strip()
                for line in open(task + "/status"):
                    if line.startswith("voluntary_ctxt_switches"): vol = int(line.split()[1])
                    if line.startswith("nonvoluntary_ctxt_switches"): invol = int(line.split()[1])
                out[task] = (vol, invol, name)
            except Exception: pass
        return out
    def snap():
        out = {}
        for p in procs:
            try:
                out[p.pid] = (threads(p.pid), names.get(p.pid) or " ".join(p.cmdline())[:60])
            except Exception: pass
        return out
    a, c0, s0 = snap(), ctxt(), common.count(common.last_row(csv), "executor_steps")
    time.sleep(15)
    b, c1, s1 = snap(), ctxt(), common.count(common.last_row(csv), "executor_steps")
    print(launch, "machine ctxt/s", (c1 - c0) / 15, "executor steps/s", (s1 - s0) / 15)
    rows = []
    for pid in b:
        if pid not in a: continue
        ta, tb = a[pid][0], b[pid][0]
        per = []
        for task, (v, i, n) in tb.items():
            if task in ta:
                per.append(((v - ta[task][0] + i - ta[task][1]) / 15, n))
        total = sum(x for x, _ in per)
        per.sort(reverse=True)
        rows.append((total, len(tb), b[pid][1], per[:4]))
    rows.sort(key=lambda r: -r[0])
    for r in rows[:12]: print(f"{r[0]:8.1f}/s threads {r[1]:4d} {r[2][:40]:40s}", [(round(x), n) for x, n in r[3]])
    common.stop_example(process, tree)
main()
