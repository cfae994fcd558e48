"""py-spy of a one-executor MADQN program's executor node, local_mp or Ray."""
import glob, json, os, subprocess, sys, tempfile, time
from benchmarks import common

def main():
    launch, out, seconds = sys.argv[1], sys.argv[2], sys.argv[3]; extra = sys.argv[4:]
    run_dir = tempfile.mkdtemp(prefix=f"spy-{launch}-")
    command = common.example_command(os.path.join(run_dir, "run"), launch, 100_000_000, ["--num_executors=1"], system_name=os.environ.get("SYSTEM", "madqn"))
    process = common.start_example(command, os.path.join(run_dir, "output.log"), common.ROOT)
    tree = common.ProcessTree(process.pid)
    csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    t0 = time.monotonic()
    while not (os.path.exists(csv) and os.path.getsize(csv) > 0):
        if time.monotonic() - t0 > 300: raise SystemExit("no trainer step")
        time.sleep(0.5)
    time.sleep(8)
    if launch == "ray":
        record = json.load(open(glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True)[0]))
        pid = record["nodes"]["executor/0"][-1]["pid"]
    else:
        pid = next(p.pid for p in tree.processes() if tree.node_label(p) == "executor/0")
    rows0 = common.count(common.last_row(common.node_csv(os.path.join(run_dir, "run"), "trainer")), "executor_steps")
    subprocess.run(["/tmp/pyspy/bin/py-spy", "record", "-p", str(pid), "-r", "100", "-d", seconds, "--format", "raw", "-o", out, "--nonblocking", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows1 = common.count(common.last_row(common.node_csv(os.path.join(run_dir, "run"), "trainer")), "executor_steps")
    print(launch, "executor steps during the recording", rows1 - rows0)
    common.stop_example(process, tree)
main()
