"""Executor steps/s of one running program with the trainer (and replay) at nice 0 and at nice N, alternated."""
import os, sys, time, tempfile
from benchmarks import common

def steps(run_dir):
    row = common.last_row(common.node_csv(run_dir, "trainer"))
    return common.count(row, "executor_steps"), common.count(row, "trainer_steps")

def main():
    executors = int(sys.argv[1]); nice = int(sys.argv[2]); groups = sys.argv[3].split(","); rounds = int(sys.argv[4]); flags = sys.argv[5:]
    run_dir = tempfile.mkdtemp(prefix="renice-")
    command = common.example_command(os.path.join(run_dir, "run"), "local_mp", 100_000_000,
                                     [f"--num_executors={executors}", *flags], system_name=os.environ.get("SYSTEM", "madqn"))
    process = common.start_example(command, os.path.join(run_dir, "out.log"), os.getcwd())
    tree = common.ProcessTree(process.pid)
    csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    while not (os.path.exists(csv) and os.path.getsize(csv) > 0):
        time.sleep(0.5)
    time.sleep(8)
    procs = [p for p in tree.processes() if (tree.node_label(p) or "").split("/")[0] in groups]
    print("reniced:", [tree.node_label(p) for p in procs])
    results = {0: [], nice: []}
    for r in range(rounds):
        for level in (0, nice) if r % 2 == 0 else (nice, 0):
            for p in procs:
                for t in os.listdir(f"/proc/{p.pid}/task"):
                    try: os.setpriority(os.PRIO_PROCESS, int(t), level)
                    except OSError: pass
            time.sleep(2)
            e0, t0 = steps(os.path.join(run_dir, "run")); s0 = time.monotonic()
            time.sleep(12)
            e1, t1 = steps(os.path.join(run_dir, "run")); s1 = time.monotonic()
            results[level].append(((e1 - e0) / (s1 - s0), (t1 - t0) / (s1 - s0)))
            print(f"nice {level}: executor {results[level][-1][0]:.0f}/s trainer {results[level][-1][1]:.1f}/s", flush=True)
    common.stop_example(process, tree)
    for level, rows in results.items():
        print(level, "mean executor", sum(r[0] for r in rows) / len(rows), "trainer", sum(r[1] for r in rows) / len(rows))
main()
