"""py-spy (idle samples too) of a running one-executor MADQN program's executor on Ray."""
import glob, json, os, subprocess, sys, tempfile, time
from benchmarks import common

def main():
    out = sys.argv[1]; seconds = sys.argv[2]; extra = sys.argv[3:]
    run_dir = tempfile.mkdtemp(prefix="spy-ray-")
    command = common.example_command(os.path.join(run_dir, "run"), "ray", 100_000_000, ["--num_executors=1"], system_name="madqn")
    process = common.start_example(command, os.path.join(run_dir, "output.log"), common.ROOT)
    tree = common.ProcessTree(process.pid)
    csv = common.node_csv(os.path.join(run_dir, "run"), "trainer")
    t0 = time.monotonic()
    while not (os.path.exists(csv) and os.path.getsize(csv) > 0):
        if time.monotonic() - t0 > 300: raise SystemExit("no trainer step")
        time.sleep(0.5)
    time.sleep(8)
    record = json.load(open(glob.glob(os.path.join(run_dir, "run", "**", "ray_nodes.json"), recursive=True)[0]))
    pid = record["nodes"]["executor/0"][-1]["pid"]
    subprocess.run(["/tmp/pyspy/bin/py-spy", "record", "-p", str(pid), "-r", "200", "-d", seconds, "--format", "raw", "-o", out, "--nonblocking", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    common.stop_example(process, tree)
main()
