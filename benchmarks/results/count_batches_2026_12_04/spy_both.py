"""py-spy of a one-executor MADQN program's executor node, local_mp or Ray."""
import glob, json, os, subprocess, sys, time
from benchmarks import common
from program_start import start_training_program

def main():
    launch, out, seconds = sys.argv[1], sys.argv[2], sys.argv[3]; extra = sys.argv[4:]
    process, tree, run_dir, csv = start_training_program(launch, os.environ.get("SYSTEM", "madqn"))
    time.sleep(8)
    if launch == "ray":
        record = json.load(open(glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True)[0]))
        pid = record["nodes"]["executor/0"][-1]["pid"]
    else:
        pid = next(p.pid for p in tree.processes() if tree.node_label(p) == "executor/0")
    rows0 = common.count(common.last_row(csv), "executor_steps")
    subprocess.run(["/tmp/pyspy/bin/py-spy", "record", "-p", str(pid), "-r", "100", "-d", seconds, "--format", "raw", "-o", out, "--nonblocking", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows1 = common.count(common.last_row(csv), "executor_steps")
    print(launch, "executor steps during the recording", rows1 - rows0)
    common.stop_example(process, tree)
main()
