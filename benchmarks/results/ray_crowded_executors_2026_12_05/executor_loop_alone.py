"""Windows alternated in one running 1-executor program: the executor's loop thread with its
process's other threads on its core (A) or those threads on core 0 (B)."""
import os, sys
from running_executor import alternate_windows, thread_ids


def set_mode(pid, loop, mode):
    for tid in thread_ids(pid):
        try:
            os.sched_setaffinity(tid, [1] if tid == loop or mode == "A" else [0])
        except OSError:
            pass


for launch in sys.argv[1].split(","):
    alternate_windows(launch, set_mode, rounds=3)
