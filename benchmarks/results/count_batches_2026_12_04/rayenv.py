import os, time, sys, resource
def bench():
    import wrappers, numpy as np
    env = wrappers.make_environment_factory("mpe/simple_spread_v3")(seed=0)
    ts = env.reset(); n = 0
    acts = {a: 0 for a in ts.observation}
    t0 = time.process_time(); w0 = time.monotonic()
    while time.monotonic() - w0 < 8:
        ts = env.step(acts); n += 1
        if ts.last(): ts = env.reset()
    return n / (time.process_time() - t0), os.nice(0), os.environ.get("LD_PRELOAD"), os.sched_getaffinity(0)
if sys.argv[1] == "plain":
    print("plain", bench())
else:
    import ray
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2,
             runtime_env={"env_vars": {"LD_PRELOAD": os.environ.get("LD_PRELOAD", "")}} if os.environ.get("LD_PRELOAD") else None)
    @ray.remote
    class A:
        def run(self): return bench()
    a = A.remote(); print("ray actor", ray.get(a.run.remote()))
    @ray.remote(max_concurrency=4)
    class B:
        def run(self): return bench()
    b = B.remote(); print("ray threaded actor", ray.get(b.run.remote()))
