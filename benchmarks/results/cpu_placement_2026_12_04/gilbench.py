"""A GIL-holding Python loop (NumPy and a GIL release every few microseconds, like an environment
loop) in a thread of a plain process against the same loop in a threaded Ray actor, alone and beside
N busy processes at nice 0: steps/s and CPU per step.
Usage: python gilbench.py x N  (N = 0 or 2; run with RAY_worker_niceness=0 to compare at equal nice)
"""
import os, sys, time, threading, multiprocessing, numpy as np
def work(seconds):
    a = np.random.rand(8, 18); w = np.random.rand(18, 5)
    n = 0; end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            x = a @ w; y = x.argmax(1); s = sum(float(v) for v in x[0])
            os.getpid(); time.sleep(0)  # releases the GIL like a C call that drops it
        n += 1
    return n
def ctx():
    st = open(f"/proc/self/status").read()
    return sum(int(l.split()[1]) for l in st.splitlines() if "ctxt_switches" in l)
def plain(seconds, q):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("n", work(seconds)))
    c0 = ctx(); t0=time.process_time(); t.start()
    while t.is_alive(): t.join(0.5)
    q.put((out["n"], time.process_time()-t0))
def spin(stop):
    x = 0
    while not stop.is_set():
        for _ in range(10000): x += 1
if __name__ == "__main__":
    import ray
    mode = sys.argv[1]; seconds = 10
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, log_to_driver=False)
    @ray.remote(max_concurrency=4)
    class A:
        def run(self, s):
            t0=time.process_time(); n = work(s); return n, time.process_time()-t0
    actor = A.remote(); ray.get(actor.run.remote(0.5))
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=spin, args=(stop,)) for _ in range(int(sys.argv[2]))]
    for h in hogs: h.start()
    for rep in range(3):
        for which in ("plain", "ray"):
            if which == "plain":
                q = multiprocessing.Queue(); p = multiprocessing.Process(target=plain, args=(seconds, q)); p.start(); n, cpu = q.get(); p.join()
            else:
                n, cpu = ray.get(actor.run.remote(seconds))
            print(which, "hogs", len(hogs), "steps/s", round(n/seconds), "cpu s", round(cpu,2), "us/step(cpu)", round(1e6*cpu/n,1), flush=True)
    stop.set()
    for h in hogs: h.join()
