"""The executor of a running one-executor MADQN program (`ray` or `local_mp`) and its threads, read
from /proc: what this directory's probes share."""
import glob, json, os, signal, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "count_batches_2026_12_04"))
from program_start import start_training_program
from benchmarks import common

TICK = os.sysconf("SC_CLK_TCK")


def executor_pid(launch, run_dir):
    if launch == "ray":
        for path in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
            return json.load(open(path))["nodes"]["executor/0"][-1]["pid"]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"MAVA_SYSTEMS_NODE=executor/0" in open(f"/proc/{pid}/environ", "rb").read():
                    return int(pid)
            except OSError:
                pass


def thread_ids(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def thread_cpu(pid, tid):
    """CPU seconds of thread `tid` of process `pid`."""
    fields = open(f"/proc/{pid}/task/{tid}/stat").read()
    fields = fields[fields.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_name(pid, tid):
    return open(f"/proc/{pid}/task/{tid}/comm").read().strip()


def switches(pid, tid):
    """(voluntary, involuntary) context switches of the thread so far."""
    lines = open(f"/proc/{pid}/task/{tid}/status").read().split("\n")
    counts = {l.split(":")[0]: int(l.split()[1]) for l in lines if "ctxt_switches" in l}
    return counts["voluntary_ctxt_switches"], counts["nonvoluntary_ctxt_switches"]


def start(launch):
    """(process, executor pid, steps(): the executor steps so far) of a new program, training."""
    process, _, run_dir, csv = start_training_program(launch)
    time.sleep(8)
    pid = None
    while pid is None:
        pid = executor_pid(launch, run_dir)
        time.sleep(0.5)
    return process, pid, lambda: common.count(common.last_row(csv), "executor_steps")


def loop_thread(pid, seconds=3):
    """The executor's busiest thread over `seconds`: its environment loop."""
    before = {t: thread_cpu(pid, t) for t in thread_ids(pid)}
    time.sleep(seconds)
    return max(before, key=lambda t: thread_cpu(pid, t) - before[t])


def alternate_windows(launch, set_mode, rounds, window_s=8):
    """Windows alternated in one running program: `set_mode(pid, loop, mode)` for mode "A", then
    "B", `rounds` times; prints steps/s, the loop thread's CPU and involuntary switches a step."""
    process, pid, steps = start(launch)
    loop = loop_thread(pid)
    for _ in range(rounds):
        for mode in ("A", "B"):
            set_mode(pid, loop, mode)
            time.sleep(2)
            s0, c0, v0, t0 = steps(), thread_cpu(pid, loop), switches(pid, loop)[1], time.time()
            time.sleep(window_s)
            n, dt = steps() - s0, time.time() - t0
            print(f"{launch} {mode}: {n / dt:6.0f} steps/s  loop {1000 * (thread_cpu(pid, loop) - c0) / n:.3f}"
                  f" ms/step nonvol/step {(switches(pid, loop)[1] - v0) / n:.3f}", flush=True)
    stop(process)


def stop(process):
    process.send_signal(signal.SIGINT)
    process.wait(90)
