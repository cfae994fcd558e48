"""py-spy of the executor of a running one-executor program (15 s), with its steps in the window."""
import os, subprocess, sys, time
# The program start and the executor's lookup shared with the next session's probes.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "ray_crowded_executors_2026_12_05"))
from running_executor import start, stop
launch, out = sys.argv[1], sys.argv[2]
proc, pid, steps = start(launch)
s0, t0 = steps(), time.time()
subprocess.run(["/tmp/pyspy/bin/py-spy", "record", "--pid", str(pid), "--duration", "15", "--rate", "200",
                "--format", "raw", "--threads", "-o", out], check=False,
               stdout=subprocess.DEVNULL)
s1, dt = steps(), time.time() - t0
print(f"{launch}: {(s1 - s0) / dt:.0f} steps/s over {dt:.1f} s, {s1 - s0} steps", flush=True)
open(out + ".steps", "w").write(str(s1 - s0))
stop(proc)
