import sys, time, statistics
sys.path.insert(0, ".")  # Run from the repository root.
from benchmarks import common
common.prepare_in_process(1)
from mava_systems.components.environment_loop import EnvironmentLoop
from mava_systems.components.exploration import ConstantEpsilon
import reverb.trajectory_writer as tw
system, server, client = common.local_madqn("executor", seed=1)
b = system.builder
def loop_with(adder):
    ex = b.make_executor(b.make_networks(), ConstantEpsilon(0.4), adder=adder, seed=1)
    return EnvironmentLoop(system.environment_factory(evaluation=False, seed=1), ex)
class NullWriter:
    history = [None]
    def append(self, *a, **k): pass
    def create_item(self, *a, **k): pass
    def flush(self, *a, **k): pass
    def end_episode(self, *a, **k): pass
    def close(self): pass
null_adder = b.make_adder(client)
null_adder._writer = NullWriter()
null_adder._client = type("C", (), {"trajectory_writer": lambda self, **k: NullWriter()})()
loops = {"no_adder": loop_with(None), "adder_null_writer": loop_with(null_adder), "adder_reverb": loop_with(b.make_adder(client))}
for l in loops.values():
    for _ in range(40): l.run_episode()
res = {n: [] for n in loops}
for r in range(5):
    for n, l in loops.items():
        t = time.process_time()
        for _ in range(120): l.run_episode()
        res[n].append((time.process_time() - t) * 1000 / 3000)
print({n: round(statistics.median(v), 3) for n, v in res.items()}, {n: [round(x, 3) for x in v] for n, v in res.items()})
