"""Every thread of the machine busy over 10 s of a running 1-executor program: its cores (share
of one), process, name, affinity, and whether it is in the executor's process."""
import os, sys, time
from running_executor import TICK, start, stop


def all_threads():
    """{(pid, tid): (CPU seconds, thread name)} of every thread on the machine."""
    out = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                try:
                    stat = open(f"/proc/{p}/task/{t}/stat").read()
                    fields = stat[stat.rindex(")") + 2:].split()
                    out[(int(p), int(t))] = ((int(fields[11]) + int(fields[12])) / TICK,
                                             stat[stat.index("(") + 1:stat.rindex(")")])
                except OSError:
                    pass
        except OSError:
            pass
    return out


for launch in sys.argv[1].split(","):
    process, pid, _ = start(launch)
    before = all_threads()
    time.sleep(10)
    rows = []
    for (p, t), (cpu, name) in all_threads().items():
        if (p, t) in before and cpu - before[(p, t)][0] > 0.02:
            try:
                affinity = sorted(os.sched_getaffinity(t))
            except OSError:
                affinity = None
            process_name = open(f"/proc/{p}/comm").read().strip() if os.path.exists(f"/proc/{p}/comm") else "?"
            rows.append((round((cpu - before[(p, t)][0]) / 10, 3), process_name, name, affinity, p == pid))
    for row in sorted(rows, reverse=True):
        print(launch, row, flush=True)
    stop(process)
