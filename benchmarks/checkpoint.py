"""Checkpoint benchmark: size and save/restore time of the default MADQN run's checkpoints.

    .venv/bin/python -m benchmarks.checkpoint [--repeats 3 --replay_items 100000]

The default MADQN configuration on mpe/simple_spread_v3: the trainer checkpoint
(online and target networks, Adam slots, step) after a few trainer steps, and
the replay checkpoint with --replay_items transitions (by default the default
replay capacity, 100,000). Replay is filled by writing recorded episodes of a
random policy through the executors' adder, over and over.
"""

import gc
import os
import shutil
import sys
import time
from typing import Any, Dict, List

if __package__ in (None, ""):  # Run as a file (python benchmarks/<name>.py): find the package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common  # noqa: E402


class RecordingAdder:
    """Keeps every `add_first` and `add` call, to write the same episodes again later."""

    def __init__(self):
        self.calls: List[tuple] = []

    def add_first(self, timestep: Any) -> None:
        self.calls.append(("add_first", (timestep,)))

    def add(self, action: Any, next_timestep: Any, extras: Any = ()) -> None:
        self.calls.append(("add", (action, next_timestep)))

    def reset(self) -> None:
        pass


def main() -> None:
    parser = common.make_parser("checkpoint", __doc__.split("\n\n")[0], seconds=0.0,
                                seconds_help="unused", warmup=None, in_process=True)
    parser.add_argument("--replay_items", type=int, default=100_000,
                        help="transitions in replay when it is saved (default 100000)")
    parser.add_argument("--seed", type=int, default=1)
    args = common.check_args(parser.parse_args())
    if args.replay_items < 1:
        raise SystemExit("--replay_items must be at least 1")
    common.prepare_in_process(args.tf_threads)

    import reverb

    from mava_systems.acting.environment_loop import EnvironmentLoop
    from mava_systems.runs.replay_checkpointing import (latest_replay_checkpoint,
                                                        save_replay,
                                                        start_restored_server)
    from mava_systems.madqn.builder import REPLAY_TABLE

    system, server, client = common.local_madqn("checkpoint", seed=args.seed,
                                                max_replay_size=max(args.replay_items, 1000))
    server.stop()  # The benchmark's own checkpointed server replaces it.
    builder, run_dir = system.builder, system.run_dir
    figures: Dict[str, List[float]] = {name: [] for name in (
        "trainer_save_s", "trainer_restore_s", "replay_save_s", "replay_restore_s")}
    try:
        server, _ = start_restored_server(system.replay, run_dir)
        client = reverb.Client(f"localhost:{server.port}")
        recorder = RecordingAdder()
        executor = common.acting_executor(system, 1.0, adder=recorder, seed=args.seed)
        loop = EnvironmentLoop(system.environment_factory(evaluation=False, seed=args.seed),
                               executor)
        for _ in range(100):
            loop.run_episode()
        adder = builder.make_adder(client)
        start = time.perf_counter()
        while client.server_info()[REPLAY_TABLE].current_size < args.replay_items:
            for method, call_args in recorder.calls:
                getattr(adder, method)(*call_args)
        del adder
        gc.collect()
        replay_items = client.server_info()[REPLAY_TABLE].current_size
        common.progress(f"replay filled with {replay_items:,} items in "
                        f"{time.perf_counter() - start:.0f} s")

        trainer = builder.make_trainer(builder.make_networks(),
                                       builder.make_dataset_iterator(client), replay_client=None)
        for _ in range(3):
            trainer.step()  # Creates the Adam slots.
        for repeat in range(args.repeats):
            start = time.perf_counter()
            trainer._checkpointing.save(force=True)  # pylint: disable=protected-access
            figures["trainer_save_s"].append(time.perf_counter() - start)
            start = time.perf_counter()
            restored = builder.make_trainer(builder.make_networks(), iter(()))
            figures["trainer_restore_s"].append(time.perf_counter() - start)
            assert restored.num_steps == trainer.num_steps
            start = time.perf_counter()
            save_replay(server, run_dir)
            figures["replay_save_s"].append(time.perf_counter() - start)
            common.progress(f"repeat {repeat + 1}/{args.repeats} saved")
        trainer_checkpoint = trainer._checkpointing._manager.latest_checkpoint  # pylint: disable=protected-access
        trainer_bytes = sum(os.path.getsize(os.path.join(os.path.dirname(trainer_checkpoint), name))
                            for name in os.listdir(os.path.dirname(trainer_checkpoint))
                            if name.startswith(os.path.basename(trainer_checkpoint) + "."))
        replay_checkpoint = latest_replay_checkpoint(run_dir)
        replay_bytes = sum(os.path.getsize(os.path.join(replay_checkpoint, name))
                           for name in os.listdir(replay_checkpoint))
        del trainer, restored
        gc.collect()
        server.stop()
        for repeat in range(args.repeats):
            start = time.perf_counter()
            server, record = start_restored_server(system.replay, run_dir)
            figures["replay_restore_s"].append(time.perf_counter() - start)
            assert record["items"][REPLAY_TABLE] == replay_items, record
            server.stop()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)

    medians = {name: common.median(values) for name, values in figures.items()}
    rows = [("trainer (networks, targets, Adam slots)", f"{trainer_bytes / 1e6:.2f}",
             common.fmt(medians["trainer_save_s"], 3), common.fmt(medians["trainer_restore_s"], 3)),
            (f"replay ({replay_items:,} transitions)", f"{replay_bytes / 1e6:.1f}",
             common.fmt(medians["replay_save_s"], 3), common.fmt(medians["replay_restore_s"], 3))]
    common.print_table(f"Checkpoints of the default MADQN run on {common.ENV_NAME} "
                       f"(median of {args.repeats})",
                       ["checkpoint", "MB", "save s", "restore s"], rows)
    common.emit(args, {"trainer_bytes": trainer_bytes, "replay_bytes": replay_bytes,
                       "replay_items": replay_items, **medians, "runs": figures},
                {"benchmark": "checkpoint", "env": common.ENV_NAME})


if __name__ == "__main__":
    main()
