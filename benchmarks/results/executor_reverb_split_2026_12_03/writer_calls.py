import sys, time
sys.path.insert(0, ".")  # Run from the repository root.
from benchmarks import common
common.prepare_in_process(1)
from mava_systems.components.environment_loop import EnvironmentLoop
from mava_systems.components.exploration import ConstantEpsilon
system, server, client = common.local_madqn("executor", seed=1)
builder = system.builder
import reverb.trajectory_writer as tw
stats = {"ci_cpu": 0.0, "ci_wall": 0.0, "n": 0, "ap_cpu": 0.0, "fl_cpu": 0.0}
orig_ci = tw.TrajectoryWriter.create_item
orig_ap = tw.TrajectoryWriter.append
orig_fl = tw.TrajectoryWriter.flush
def ci(self, *a, **k):
    t, w = time.thread_time(), time.perf_counter()
    r = orig_ci(self, *a, **k)
    stats["ci_cpu"] += time.thread_time() - t; stats["ci_wall"] += time.perf_counter() - w; stats["n"] += 1
    return r
def ap(self, *a, **k):
    t = time.thread_time(); r = orig_ap(self, *a, **k); stats["ap_cpu"] += time.thread_time() - t; return r
def fl(self, *a, **k):
    t = time.thread_time(); r = orig_fl(self, *a, **k); stats["fl_cpu"] += time.thread_time() - t; return r
tw.TrajectoryWriter.create_item = ci; tw.TrajectoryWriter.append = ap; tw.TrajectoryWriter.flush = fl
executor = builder.make_executor(builder.make_networks(), ConstantEpsilon(0.4),
                                 adder=builder.make_adder(client), seed=1)
env = system.environment_factory(evaluation=False, seed=1)
loop = EnvironmentLoop(env, executor)
for _ in range(20): loop.run_episode()
for k in stats: stats[k] = 0
t = time.thread_time()
for _ in range(400): loop.run_episode()
total = time.thread_time() - t
n = stats["n"]
print("thread cpu us/step", total*1e6/(400*25), {k: round(v*1e6/n, 1) for k, v in stats.items() if k != "n"})
