"""Same environment loop: a plain spawned process on core 1 against a Ray actor on core 1."""
import json, multiprocessing as mp, os, sys, time
import numpy as np

def env_loop(seconds=2.0, core=1):
    for t in os.listdir("/proc/self/task"):
        try: os.sched_setaffinity(int(t), [core])
        except ProcessLookupError: pass
    from wrappers.registry import make_environment_factory
    env = make_environment_factory("mpe/simple_spread_v3")(seed=0)
    spec = env.action_spec()
    rng = np.random.default_rng(0)
    agents = list(spec)
    ts = env.reset()
    def run(seconds):
        steps = 0; ts = env.reset()
        c0 = time.thread_time(); p0 = time.process_time(); w0 = time.perf_counter()
        while time.perf_counter() - w0 < seconds:
            actions = {a: np.int32(rng.integers(spec[a].num_values)) for a in agents}
            ts = env.step(actions)
            if ts.last(): ts = env.reset()
            steps += 1
        w = time.perf_counter() - w0
        return dict(steps_per_s=steps / w, thread_ms=(time.thread_time() - c0) / steps * 1e3,
                    process_ms=(time.process_time() - p0) / steps * 1e3)
    run(1.0)
    return [round(run(2.0)['thread_ms'], 3) for _ in range(3)]

def _child(q):
    q.put(env_loop())

def plain():
    ctx = mp.get_context("spawn"); q = ctx.Queue(); p = ctx.Process(target=_child, args=(q,))
    p.start(); r = q.get(); p.join(); return r

if __name__ == "__main__":
    os.sched_setaffinity(0, [0])
    import ray
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2,
             runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    Actor = ray.remote(num_cpus=1)(type("A", (), {"loop": lambda self: env_loop()}))
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    out = []
    for i in range(rounds):
        a = Actor.remote(); r_ray = ray.get(a.loop.remote()); ray.kill(a)
        r_plain = plain()
        out.append(dict(ray=r_ray, plain=r_plain))
        print(json.dumps(out[-1]), flush=True)
    ray.shutdown()
