"""Call overhead between nodes: a Ray actor call against a Courier call, same two-node program.

    .venv/bin/python -m benchmarks.ray_calls [--calls 500]

A `Timer` node calls a `Source` node `--calls` times per method, then stops
the program: `ping()` (no payload) and `get_variables()` (six 64x64 float32
arrays, ~98 KB, the size of a small MADQN's variables). The program runs
under `--lp_launch_type=ray` (a local Ray) and `local_mp` (Courier); printed:
milliseconds per call of each method in each.
"""

import argparse
import json
import os
import tempfile
import time
from typing import Any, Dict, Optional, Sequence

from absl import flags
import launchpad as lp
import numpy as np

from mava_systems import ray_launch

WARMUP_CALLS = 50


class Source:
    """Serves a fixed set of variables, and a call without payload."""

    def __init__(self):
        self._variables = [np.zeros((64, 64), np.float32) for _ in range(6)]

    def get_variables(self, names: Sequence[str]) -> Sequence[np.ndarray]:
        del names
        return self._variables

    def ping(self) -> int:
        return 1


class Timer:
    """Times calls to a `Source` node, writes the milliseconds per call, stops the program."""

    def __init__(self, source: Any, out_path: str, calls: int):
        self._source = source
        self._out_path = out_path
        self._calls = calls

    def run(self) -> None:
        for _ in range(WARMUP_CALLS):
            self._source.ping()
        milliseconds = {}
        for name, call in (("ping", self._source.ping),
                           ("get_variables", lambda: self._source.get_variables(["all"]))):
            start = time.perf_counter()
            for _ in range(self._calls):
                call()
            milliseconds[name] = (time.perf_counter() - start) / self._calls * 1000
        with open(self._out_path, "w") as out_file:
            json.dump(milliseconds, out_file)
        lp.stop()


def measure(launch_type: str, calls: int, ray_address: Optional[str] = None) -> Dict[str, float]:
    """Milliseconds per call of each method when the program runs under `launch_type` (on the
    Ray cluster at `ray_address`, default a local Ray)."""
    out_path = os.path.join(tempfile.mkdtemp(prefix="bench-calls-"), "calls.json")
    program = lp.Program("calls")
    with program.group("source"):
        source = program.add_node(lp.CourierNode(Source))
    with program.group("timer"):
        program.add_node(lp.CourierNode(Timer, source, out_path, calls))
    if launch_type == ray_launch.LAUNCH_TYPE:
        ray_launch.launch(program, ray_launch.RayLaunchConfig(address=ray_address,
                                                              termination_notice_s=10))
    else:
        lp.launch(program, launch_type=launch_type, terminal="current_terminal").wait()
    with open(out_path) as out_file:
        return json.load(out_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per method (default 500)")
    args = parser.parse_args()
    flags.FLAGS.mark_as_parsed()
    # local_mp first: after Ray has run in this process, Launchpad's signal-based stop hangs.
    results = {launch_type: measure(launch_type, args.calls)
               for launch_type in ("local_mp", ray_launch.LAUNCH_TYPE)}
    print(f"{'method':<15}{'ray ms/call':>14}{'local_mp ms/call':>18}{'ratio':>8}")
    for method in results["local_mp"]:
        ray_ms, courier_ms = results[ray_launch.LAUNCH_TYPE][method], results["local_mp"][method]
        print(f"{method:<15}{ray_ms:>14.3f}{courier_ms:>18.3f}{ray_ms / courier_ms:>8.1f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
