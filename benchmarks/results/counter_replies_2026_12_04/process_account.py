"""Per-process CPU of a running one-executor MADQN program on Ray (or local_mp)."""
import glob, json, os, sys, tempfile, time
import psutil
from benchmarks import common

def main():
    launch = sys.argv[1]; seconds = float(sys.argv[2]); flags = sys.argv[3:]
    run_dir = tempfile.mkdtemp(prefix="ray-account-")
    output_log = os.path.join(run_dir, "output.log")
    command = common.example_command(os.path.join(run_dir, "run"), launch, 100_000_000, ["--num_executors=1", *flags],
                                     system_name=os.environ.get("SYSTEM", "madqn"))
    started = time.time()
    process = common.start_example(command, output_log, common.ROOT)
    tree = common.ProcessTree(process.pid)
    trainer_csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    ex_csv = trainer_csv
    t0 = time.monotonic()
    while not (os.path.exists(trainer_csv) and os.path.getsize(trainer_csv) > 0):
        if time.monotonic() - t0 > 300 or process.poll() is not None:
            print(common.tail_of(output_log)); raise SystemExit("no trainer step")
        time.sleep(0.5)
    time.sleep(8)
    def procs():
        out = {}
        for p in psutil.process_iter():
            try:
                if p.create_time() >= started - 1 and p.uids().real == os.getuid():
                    out[p.pid] = p
            except psutil.Error: pass
        return out
    def cpu(ps):
        r = {}
        for pid, p in ps.items():
            try:
                t = p.cpu_times(); r[pid] = (t.user + t.system, " ".join(p.cmdline())[:110] or p.name())
            except psutil.Error: pass
        return r
    ps = procs()
    def thread_times(pid):
        out = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                stat = open(f"/proc/{pid}/task/{tid}/stat").read()
                comm = stat[stat.index("(")+1:stat.rindex(")")]
                fields = stat[stat.rindex(")")+2:].split()
                sched = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
                out[tid] = (comm, int(sched[0]) / 1e9, int(sched[1]) / 1e9)
            except (FileNotFoundError, ProcessLookupError): pass
        return out
    def label_pids():
        labels = {}
        for f in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
            for name, incs in json.load(open(f)).get("nodes", {}).items():
                for inc in incs: labels[inc.get("pid")] = name
        for pid, p in ps.items():
            l = tree.node_label(p)
            if l: labels[pid] = l
        return labels
    labels0 = label_pids()
    ex_pid = [pid for pid, l in labels0.items() if l == os.environ.get("NODE", "executor/0")]
    th_a = thread_times(ex_pid[0]) if ex_pid else {}
    a = cpu(ps); rowa = common.last_row(ex_csv); ta = time.monotonic()
    time.sleep(seconds)
    th_b = thread_times(ex_pid[0]) if ex_pid else {}
    b = cpu(ps); rowb = common.last_row(ex_csv); tb = time.monotonic()
    steps = common.count(rowb, "executor_steps") - common.count(rowa, "executor_steps")
    dt = tb - ta
    labels = label_pids()
    rows = []
    for pid in b:
        if pid in a:
            d = b[pid][0] - a[pid][0]
            rows.append((d, pid, labels.get(pid, ""), b[pid][1]))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"{launch}: {steps/dt:.0f} executor steps/s, {total/dt:.3f} cores, {1000*total/steps:.3f} ms CPU/step")
    for d, pid, l, c in rows:
        if d/dt > 0.003: print(f"{d/dt:6.3f} cores {1000*d/steps:6.3f} ms/step {pid:7d} {l:14s} {c}")
    print("executor threads (cores, runq wait):", ", ".join(f"{c}={(t-th_a.get(tid,(c,0,0))[1])/dt:.3f} ({(w-th_a.get(tid,(c,0,0))[2])/dt:.3f})" for tid,(c,t,w) in sorted(th_b.items(), key=lambda kv: -(kv[1][1]-th_a.get(kv[0],("",0,0))[1])) if t-th_a.get(tid,(c,0,0))[1] > 0.002*dt))
    common.stop_example(process, tree)
main()
