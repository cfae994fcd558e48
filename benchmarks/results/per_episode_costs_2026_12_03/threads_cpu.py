"""Per-thread CPU of a running program's executor and trainer processes (local_mp)."""
import os, sys, time, tempfile
from benchmarks import common

def thread_times(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            comm = stat[stat.index("(")+1:stat.rindex(")")]
            fields = stat[stat.rindex(")")+2:].split()
            sched = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
            out[tid] = (comm, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(sched[1]) / 1e9, int(sched[2]))
        except FileNotFoundError:
            pass
    return out

def main():
    executors = int(sys.argv[1]); seconds = float(sys.argv[2]); flags = sys.argv[3:]
    run_dir = tempfile.mkdtemp(prefix="threads-")
    log = os.path.join(run_dir, "output.log")
    command = common.example_command(os.path.join(run_dir, "run"), "local_mp", 100_000_000,
                                     [f"--num_executors={executors}", *flags], system_name=os.environ.get("SYSTEM", "madqn"))
    process = common.start_example(command, log, os.getcwd())
    tree = common.ProcessTree(process.pid)
    csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    start = time.monotonic()
    while not (os.path.exists(csv) and os.path.getsize(csv) > 0):
        if time.monotonic() - start > 300: raise SystemExit("no trainer step")
        time.sleep(0.5)
    time.sleep(10)
    labels = {p.pid: tree.node_label(p) for p in tree.processes()}
    before = {pid: thread_times(pid) for pid in labels}
    time.sleep(seconds)
    after = {pid: thread_times(pid) for pid in labels}
    common.stop_example(process, tree)
    for pid, label in labels.items():
        rows = []
        for tid, (comm, t1, w1, n1) in after[pid].items():
            _, t0, w0, n0 = before[pid].get(tid, (comm, 0.0, 0.0, 0))
            if t1 - t0 > 0.01 * seconds:
                rows.append((t1 - t0, comm, w1 - w0, n1 - n0))
        total = sum(r[0] for r in rows)
        print(f"{label}: {total/seconds:.2f} cores  " + ", ".join(f"{comm}={t/seconds:.2f} (runq wait {w/seconds:.2f}, {n/seconds:.0f} slices/s)" for t, comm, w, n in sorted(rows, reverse=True)[:5]))
main()
