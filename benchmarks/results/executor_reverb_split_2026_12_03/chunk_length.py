import sys, time, statistics
sys.path.insert(0, ".")  # Run from the repository root.
from benchmarks import common
common.prepare_in_process(1)
from mava_systems.components.environment_loop import EnvironmentLoop
from mava_systems.components.exploration import ConstantEpsilon
import reverb.trajectory_writer as tw
orig_append = tw.TrajectoryWriter.append
CHUNKS = [int(x) for x in sys.argv[1].split(",")]
state = {"chunk": 1}
def append(self, data, partial_step=False):
    c = state["chunk"]
    if c > 1 and getattr(self, "_configured", None) != c:
        self._configured = c
        orig_append(self, data, partial_step=partial_step)
        self.configure((), num_keep_alive_refs=c, max_chunk_length=c)
        return
    return orig_append(self, data, partial_step=partial_step)
tw.TrajectoryWriter.append = append
setups = {}
for c in CHUNKS:
    system, server, client = common.local_madqn("executor", seed=1)
    b = system.builder
    state["chunk"] = c
    ex = b.make_executor(b.make_networks(), ConstantEpsilon(0.4), adder=b.make_adder(client), seed=1)
    loop = EnvironmentLoop(system.environment_factory(evaluation=False, seed=1), ex)
    for _ in range(200): loop.run_episode()
    tr = b.make_trainer(b.make_networks(), b.make_dataset_iterator(client), checkpoint=False)
    for _ in range(5): tr.step()
    setups[c] = (loop, tr, system); print("setup", c, flush=True)
res = {c: ([], []) for c in CHUNKS}
for r in range(5):
    print("round", r, flush=True)
    for c, (loop, tr, system) in setups.items():
        state["chunk"] = c
        t = time.process_time()
        for _ in range(100): loop.run_episode()
        res[c][0].append((time.process_time() - t) * 1000 / 2500)
        t = time.process_time(); n0 = tr.num_steps
        for _ in range(40): tr.step()
        res[c][1].append((time.process_time() - t) * 1000 / (tr.num_steps - n0))
for c in CHUNKS:
    e, t = statistics.median(res[c][0]), statistics.median(res[c][1])
    print(f"chunk {c}: executor+insert {e:.3f} ms/step, trainer {t:.3f} ms/trainer step, total per exec step at 32 spi/256 batch {e + t/8:.3f}", [round(x,3) for x in res[c][0]], [round(x,3) for x in res[c][1]])
