"""CPU per executor step of each node, its threads, libraries and top functions, from a
`perf_program.py` profile.

    python benchmarks/results/allocator_2026_12_03/perf_account.py <out_dir> [functions per node]

Runs `perf script` on <out_dir>/perf.data (once; kept as script.txt) and divides
the samples (499 Hz per CPU) by the executor steps made while sampling.
"""
import collections
import json
import os
import re
import subprocess
import sys

SAMPLE_HZ = 499
LINE = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$")


def main() -> None:
    out_dir = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    script = os.path.join(out_dir, "script.txt")
    if not os.path.exists(script):
        with open(script, "w") as output:
            subprocess.run(["perf", "script", "-i", os.path.join(out_dir, "perf.data"),
                            "-F", "pid,tid,comm,ip,sym,dso"], stdout=output,
                           stderr=subprocess.DEVNULL, check=True)
    with open(os.path.join(out_dir, "meta.json")) as meta_file:
        meta = json.load(meta_file)
    labels = {int(pid): label for pid, label in meta["labels"].items()}
    steps = int(meta["after"]["executor_steps"]) - int(meta["before"]["executor_steps"])
    by_node, by_library, by_function, by_thread = (collections.Counter() for _ in range(4))
    total = 0
    with open(script) as lines:
        for line in lines:
            match = LINE.match(line)
            if not match:
                continue
            comm, pid, _, _, function, library = match.groups()
            total += 1
            node = "idle" if int(pid) == 0 else labels.get(int(pid), "other:" + comm)
            library = library.split("/")[-1]
            function = re.sub(r"\(.*", "", function)[:110]
            by_node[node] += 1
            by_library[node, library] += 1
            by_function[node, library, function] += 1
            by_thread[node, comm] += 1

    def ms(samples: int) -> float:
        return samples / SAMPLE_HZ * 1000 / steps

    print(f"samples {total}, executor steps {steps}, "
          f"ms per executor step in all (idle included) {ms(total):.3f}")
    for node, samples in by_node.most_common():
        print(f"\n== {node}: {ms(samples):.3f} ms per executor step ({100 * samples / total:.1f} %)")
        for (owner, thread), count in by_thread.most_common():
            if owner == node and count / samples > 0.03:
                print(f"   thread {thread:20s} {ms(count):.3f}")
        for (owner, library), count in by_library.most_common():
            if owner == node and count / samples > 0.02:
                print(f"   library {library:40s} {ms(count):.3f}")
        functions = [(key, count) for key, count in by_function.most_common() if key[0] == node]
        for (_, library, function), count in functions[:top]:
            print(f"      {ms(count):.4f} {library[:25]:25s} {function}")


if __name__ == "__main__":
    main()
