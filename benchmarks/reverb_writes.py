"""Reverb writes alone: B environments' packed transitions per batched step, three ways.

    .venv/bin/python -m benchmarks.reverb_writes [--num_envs 128 --bytes 320 --clock cpu]

Each batched step writes one packed transition (`--bytes` uint8) per
environment to an in-process Reverb server:

  writer_per_env   one trajectory writer per environment: append, an item of it, a bounded
                   flush (main's path for vectorised value-based executors before issue 45)
  shared_writer    one writer for all: B appends and items, one bounded flush
                   (`SharedWriterClient`)
  one_block_item   one writer, one append of the [B, bytes] block and one item of it (fewest
                   calls, but an item of B environments' transitions is sampled together)

Reported as transitions per second and as ratios of writer_per_env.
"""

import os
import sys
from typing import Callable, Dict

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402

MAX_IN_FLIGHT_ITEMS = 64  # NStepTransitionAdder's default.


def main() -> None:
    parser = common.make_parser("reverb_writes", __doc__.split("\n\n")[0], seconds=2.0,
                                warmup=0.5, in_process=True)
    parser.add_argument("--num_envs", type=int, default=128, help="environments per step")
    parser.add_argument("--bytes", type=int, default=320, help="bytes per packed transition")
    args = common.check_args(parser.parse_args())
    common.prepare_in_process(args.tf_threads)

    import numpy as np  # pylint: disable=import-outside-toplevel
    import reverb  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    count, size = args.num_envs, args.bytes

    def table(name: str, shape: list) -> reverb.Table:
        return reverb.Table(name, reverb.selectors.Uniform(), reverb.selectors.Fifo(), 100_000,
                            reverb.rate_limiters.MinSize(1),
                            signature=tf.TensorSpec(shape, tf.uint8))

    server = reverb.Server([table("one", [size]), table("block", [count, size])])
    client = reverb.Client(f"localhost:{server.port}")
    rows = np.random.default_rng(0).integers(0, 255, (count, size), dtype=np.uint8)
    writers = []

    def writer_per_env() -> Callable[[], int]:
        own = [client.trajectory_writer(num_keep_alive_refs=1) for _ in range(count)]
        writers.extend(own)

        def step() -> int:
            for row, writer in zip(rows, own):
                writer.append(row)
                writer.create_item("one", 1.0, writer.history[-1])
                writer.flush(MAX_IN_FLIGHT_ITEMS)
            return count
        return step

    def shared_writer() -> Callable[[], int]:
        writer = client.trajectory_writer(num_keep_alive_refs=1)
        writers.append(writer)

        def step() -> int:
            for row in rows:
                writer.append(row)
                writer.create_item("one", 1.0, writer.history[-1])
            writer.flush(MAX_IN_FLIGHT_ITEMS * count)
            return count
        return step

    def one_block_item() -> Callable[[], int]:
        writer = client.trajectory_writer(num_keep_alive_refs=1)
        writers.append(writer)

        def step() -> int:
            writer.append(rows)
            writer.create_item("block", 1.0, writer.history[-1])
            writer.flush(2)
            return count
        return step

    variants: Dict[str, Callable[[], int]] = {
        "writer_per_env": writer_per_env(), "shared_writer": shared_writer(),
        "one_block_item": one_block_item()}
    try:
        rates = common.measure_interleaved(variants, args.repeats, args.seconds, args.warmup,
                                           args.clock)
    finally:
        for writer in writers:
            writer.close()
        server.stop()
    medians = {name: common.median(values) for name, values in rates.items()}
    base = medians["writer_per_env"]
    common.print_table(
        f"Reverb writes: {count} packed transitions of {size} bytes per step (median of "
        f"{args.repeats} x {args.seconds:g} s, {args.clock} clock)",
        ["variant", "transitions/s", "ratio to writer_per_env"],
        [(name, common.fmt(medians[name]), common.fmt(common.ratio(medians[name], base), 2))
         for name in rates])
    common.emit(args, {**{f"{name}_tps": medians[name] for name in rates},
                       "runs": rates},
                {"benchmark": "reverb_writes", "num_envs": count, "bytes": size,
                 "unit": "transitions/s"})


if __name__ == "__main__":
    main()
