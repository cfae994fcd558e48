"""Trainer memory: RSS and malloc's memory in use per trainer step, sampling from a remote replay.

    .venv/bin/python -m benchmarks.trainer_memory [--minutes 8 --steps_per_call 4]

A second process runs the Reverb server (MADQN's table on
mpe/simple_spread_v3, capped at `--max_replay_size`, rate-limited as the
program's) with a random executor inserting; this process builds the trainer
as the trainer node does (`builder.make_trainer`, `builder.make_dataset_iterator`)
and steps it in a thread, so batches come over gRPC as under `local_mp`.
Every `--sample_s` it records RSS and glibc's heap in use (`mallinfo2`), then
reports both trends (least squares from minute `--trend_from_minute`) per
minute and per trainer step: the soak's trainer growth without the rest of
the program, to compare trainer settings (`--steps_per_call`) side by side.
"""

import ctypes
import multiprocessing
import os
import shutil
import statistics
import sys
import threading
import time
from typing import Any, Dict, List

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402
import psutil  # noqa: E402  pylint: disable=wrong-import-order


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap_in_use_mb() -> float:
    """glibc's heap memory in use by this process (allocated chunks and mmapped blocks), MB."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


def serve_replay(config_kwargs: Dict[str, Any], port: Any, stop: Any) -> None:
    """Runs the replay server (its port put in `port`) with a random executor inserting until
    `stop` is set."""
    from benchmarks.trainer import fill_replay  # pylint: disable=import-outside-toplevel

    common.prepare_in_process(1)
    system, server, client = common.local_madqn("trainer-memory", **config_kwargs)
    port.value = server.port
    seed = 1
    while not stop.is_set():
        fill_replay(system, client, 2_000, seed)
        seed += 1
    server.stop()
    shutil.rmtree(system.run_dir, ignore_errors=True)


def slope(points: List[List[float]]) -> float:
    """Least-squares slope of (x, y) points (0 for fewer than two)."""
    if len(points) < 2:
        return 0.0
    return statistics.linear_regression(*zip(*points)).slope


def main() -> None:
    parser = common.make_parser("trainer_memory", __doc__.split("\n\n")[0], seconds=0.0,
                                repeats=1, warmup=None, in_process=True)
    parser.add_argument("--minutes", type=float, default=8.0, help="how long to train (default 8)")
    parser.add_argument("--trend_from_minute", type=float, default=3.0,
                        help="trends are fitted from this minute on (default 3)")
    parser.add_argument("--sample_s", type=float, default=30.0,
                        help="seconds between samples (default 30)")
    parser.add_argument("--steps_per_call", type=int, default=1,
                        help="trainer steps per compiled call (trainer_steps_per_call; default 1)")
    parser.add_argument("--max_replay_size", type=int, default=20_000)
    parser.add_argument("--samples_per_insert", type=float, default=32.0,
                        help="replay's rate limit (default 32, the program's; 0: none)")
    args = common.check_args(parser.parse_args())
    if args.minutes <= args.trend_from_minute or args.sample_s <= 0:
        raise SystemExit("--minutes must exceed --trend_from_minute, and --sample_s be positive")
    config_kwargs = dict(max_replay_size=args.max_replay_size,
                         samples_per_insert=args.samples_per_insert or None,
                         trainer_steps_per_call=args.steps_per_call)

    context = multiprocessing.get_context("spawn")
    port, stop_serving = context.Value("i", 0), context.Event()
    server_process = context.Process(target=serve_replay,
                                     args=(config_kwargs, port, stop_serving), daemon=True)
    server_process.start()
    common.prepare_in_process(args.tf_threads)
    import reverb  # pylint: disable=import-outside-toplevel

    system, local_server, _ = common.local_madqn("trainer-memory", **config_kwargs)
    local_server.stop()  # Only the system's builder is used here: replay is the other process's.
    while not port.value:
        time.sleep(0.1)
    client = reverb.Client(f"127.0.0.1:{port.value}")
    builder = system.builder
    trainer = builder.make_trainer(builder.make_networks(), builder.make_dataset_iterator(client),
                                   replay_client=client, checkpoint=False)
    stop_training = threading.Event()

    def train() -> None:
        while not stop_training.is_set():
            trainer.step()

    thread = threading.Thread(target=train, daemon=True)
    start = time.monotonic()
    thread.start()
    samples: List[Dict[str, float]] = []
    try:
        while time.monotonic() - start < args.minutes * 60:
            time.sleep(args.sample_s)
            samples.append({"minute": (time.monotonic() - start) / 60,
                            "rss_mb": psutil.Process().memory_info().rss / 2**20,
                            "heap_in_use_mb": heap_in_use_mb(),
                            "trainer_steps": trainer.num_steps})
            latest = samples[-1]
            common.progress(f"minute {latest['minute']:.1f}: {latest['trainer_steps']} trainer "
                            f"steps, RSS {latest['rss_mb']:.1f} MB, heap in use "
                            f"{latest['heap_in_use_mb']:.1f} MB")
    finally:
        stop_training.set()
        stop_serving.set()
        server_process.join(timeout=60)
        if server_process.is_alive():
            server_process.terminate()
        shutil.rmtree(system.run_dir, ignore_errors=True)

    later = [entry for entry in samples if entry["minute"] >= args.trend_from_minute]
    steps_per_minute = slope([[entry["minute"], entry["trainer_steps"]] for entry in later])
    figures: Dict[str, Any] = {"trainer_steps_per_minute": steps_per_minute}
    rows = []
    for measure in ("rss_mb", "heap_in_use_mb"):
        per_minute = slope([[entry["minute"], entry[measure]] for entry in later])
        per_step_kb = 1024 * per_minute / steps_per_minute if steps_per_minute else None
        figures[f"{measure}_per_minute"] = per_minute
        figures[f"{measure}_kb_per_trainer_step"] = per_step_kb
        rows.append((measure, common.fmt(per_minute, 3), common.fmt(per_step_kb, 3)))
    common.print_table(
        f"Trainer memory, {args.steps_per_call} trainer step(s) per call, from minute "
        f"{args.trend_from_minute:g} ({common.fmt(steps_per_minute, 0)} trainer steps/min)",
        ["measure", "MB/min (fit)", "KB per trainer step"], rows)
    figures["samples"] = samples
    common.emit(args, figures, {"benchmark": "trainer_memory", "env": common.ENV_NAME,
                                "steps_per_call": args.steps_per_call,
                                "max_replay_size": args.max_replay_size,
                                "samples_per_insert": args.samples_per_insert})


if __name__ == "__main__":
    main()
