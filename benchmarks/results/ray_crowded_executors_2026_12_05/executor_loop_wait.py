"""The executor's loop thread in a running 1-executor program (`ray` or `local_mp`, comma-separated
launches as argv[1]): its share of time on CPU, waiting to run and asleep, its switches per step,
and the process's other busiest threads."""
import sys, time
from running_executor import loop_thread, start, stop, switches, thread_ids, thread_name


def sched(pid, tid):
    """(seconds on CPU, seconds runnable but waiting, voluntary, involuntary switches)."""
    run, wait, _ = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
    return (run / 1e9, wait / 1e9, *switches(pid, tid))


for launch in sys.argv[1].split(","):
    process, pid, steps = start(launch)
    loop = loop_thread(pid)
    for _ in range(2):
        before = {t: sched(pid, t) for t in thread_ids(pid)}
        s0, t0 = steps(), time.time()
        time.sleep(10)
        n, dt = steps() - s0, time.time() - t0
        after = {t: sched(pid, t) for t in thread_ids(pid)}
        d = [x - y for x, y in zip(after[loop], before[loop])]
        print(f"{launch}: {n / dt:6.0f} steps/s loop on-cpu {d[0] / dt:.3f} runq {d[1] / dt:.3f} "
              f"asleep {1 - (d[0] + d[1]) / dt:.3f} vol/step {d[2] / n:.3f} nonvol/step {d[3] / n:.3f}",
              flush=True)
        others = sorted(((after[t][0] - before[t][0]) / dt, t)
                        for t in after if t in before and t != loop)[-5:]
        print("   others (cores):", [(thread_name(pid, t), round(c, 3)) for c, t in reversed(others)],
              flush=True)
    stop(process)
