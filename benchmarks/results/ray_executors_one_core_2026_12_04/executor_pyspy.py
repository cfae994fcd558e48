"""py-spy of the executor of a running one-executor program (15 s), with its steps in the window."""
import glob, json, os, signal, subprocess, sys, time
sys.path.insert(0, "/work/main/benchmarks/results/count_batches_2026_12_04")
from program_start import start_training_program
from benchmarks import common
launch, out = sys.argv[1], sys.argv[2]
proc, tree, run_dir, csv = start_training_program(launch)
time.sleep(8)
pid = None
while pid is None:
    if launch == "ray":
        for path in glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True):
            pid = json.load(open(path))["nodes"]["executor/0"][-1]["pid"]
    else:
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    if b"MAVA_SYSTEMS_NODE=executor/0" in open(f"/proc/{p}/environ", "rb").read():
                        pid = int(p)
                except OSError:
                    pass
    time.sleep(0.5)
steps = lambda: common.count(common.last_row(csv), "executor_steps")
s0, t0 = steps(), time.time()
subprocess.run(["/tmp/pyspy/bin/py-spy", "record", "--pid", str(pid), "--duration", "15", "--rate", "200",
                "--format", "raw", "--threads", "-o", out], check=False,
               stdout=subprocess.DEVNULL)
s1, dt = steps(), time.time() - t0
print(f"{launch}: {(s1 - s0) / dt:.0f} steps/s over {dt:.1f} s, {s1 - s0} steps", flush=True)
open(out + ".steps", "w").write(str(s1 - s0))
proc.send_signal(signal.SIGINT); proc.wait(120)
