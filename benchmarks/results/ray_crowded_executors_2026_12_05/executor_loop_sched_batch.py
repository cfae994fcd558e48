"""Windows alternated in one running 1-executor program: every thread of the executor's process
but the loop thread at SCHED_OTHER (A) or SCHED_BATCH (B, a woken thread no longer preempts the
loop thread); steps/s, the loop thread's CPU and involuntary switches per step."""
import os, sys
from running_executor import alternate_windows, thread_ids


def set_mode(pid, loop, mode):
    policy = os.SCHED_OTHER if mode == "A" else os.SCHED_BATCH
    for tid in thread_ids(pid):
        if tid != loop:
            try:
                os.sched_setscheduler(tid, policy, os.sched_param(0))
            except OSError as error:
                print("sched", tid, error)


for launch in sys.argv[1].split(","):
    alternate_windows(launch, set_mode, rounds=5)
