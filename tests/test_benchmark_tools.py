"""The tools promoted from one-off probes: benchmarks.curve_table and benchmarks.threads."""

import argparse
import os
import threading
import time

import numpy as np
import pytest

from benchmarks import curve_table, threads


def write_evaluator_log(run_dir, rows):
    os.makedirs(run_dir / "logs" / "evaluator")
    with open(run_dir / "logs" / "evaluator" / "logs.csv", "w") as log:
        log.write("executor_steps,evaluation_return\n")
        log.writelines(f"{steps},{value}\n" for steps, value in rows)


def test_bins_hold_the_rounds_of_their_steps_and_the_last_one_its_upper_end():
    steps = np.array([0, 50, 99, 100, 150, 200, 230])
    returns = np.array([-9.0, -7.0, -5.0, 1.0, 3.0, 10.0, 4.0])
    table = curve_table.bins(steps, returns, bin_steps=100, max_steps=200)
    assert [(row.low, row.high, row.rounds) for row in table] == [(0, 100, 3), (100, 200, 3)]
    assert table[0].mean == pytest.approx(-7.0) and table[0].best == -5.0
    assert table[1].mean == pytest.approx(14.0 / 3) and table[1].best == 10.0  # 200 included.
    # By default the bins run to the last round; an empty bin is left out.
    table = curve_table.bins(np.array([10, 250]), np.array([1.0, 2.0]), bin_steps=100)
    assert [(row.low, row.rounds) for row in table] == [(0, 1), (200, 1)]
    with pytest.raises(ValueError, match="bin_steps"):
        curve_table.bins(steps, returns, bin_steps=0)


def test_references_are_label_equals_value_and_a_malformed_one_is_named():
    assert curve_table.parse_reference("TF-era Mava, 1M=40") == ("TF-era Mava, 1M", 40.0)
    assert curve_table.parse_reference("a=b=-1.5") == ("a=b", -1.5)
    for text in ("-99.5", "random=", "=3", "random=x"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
            curve_table.parse_reference(text)


def test_the_command_prints_per_walker_bins_and_draws_the_figure(tmp_path, capsys):
    run_dir = tmp_path / "run"
    write_evaluator_log(run_dir, [(0, -300), (60, -150), (120, 30), (180, 90), (200, 60)])
    figure = tmp_path / "curve.png"
    curve_table.main([str(run_dir), "--bin_steps=100", "--divide_by=3",
                      "--reference=random=-99.5", f"--plot={figure}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == ["0-100 | 2 | -75.0 | -50.0", "100-200 | 3 | 20.0 | 30.0"]
    assert figure.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit, match="no such run directory"):
        curve_table.main([str(tmp_path / "missing")])


def test_a_threads_stat_line_gives_its_name_and_cpu_even_with_parentheses_in_the_name():
    ticks = threads.CLOCK_TICKS
    fields = ["S"] + ["0"] * 10 + [str(3 * ticks), str(ticks)] + ["0"] * 30
    stat = threads.parse_stat("123 (ray::IDLE) (x)) " + " ".join(fields))
    assert stat == {"name": "ray::IDLE) (x)", "cpu_s": 4.0}


def test_a_busy_thread_shows_its_cpu_between_two_readings():
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(1000))

    worker = threading.Thread(target=spin)
    before = threads.thread_times(os.getpid())
    worker.start()
    tid = worker.native_id
    started = time.monotonic()
    time.sleep(0.6)
    after = threads.thread_times(os.getpid())
    seconds = time.monotonic() - started
    stop.set()
    worker.join()
    used = threads.usage(before, after, seconds)
    spinner = [thread for thread in used if thread.tid == tid]
    assert len(spinner) == 1  # Started within the window: counted from zero.
    # It holds the GIL most of the window, so it is the busiest thread (schedstat wait >= 0).
    assert used[0].tid == tid and used[0].cores > 0.2
    assert spinner[0].wait_cores >= 0 and spinner[0].slices_per_s > 0
    assert threads.thread_times(-1) == {}  # A process that has gone reads as no threads.
