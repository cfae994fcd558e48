"""`python -m mava_systems.plot`: learning curves from fabricated evaluator logs.

The same command on a real run's logs is checked in test_run_outputs.py.
"""

import csv
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from mava_systems import plot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def png_size(path):
    """(width, height) from a PNG's IHDR chunk; fails on anything that is not a PNG."""
    with open(path, "rb") as png:
        header = png.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def write_evaluator_csv(run_dir, rows, columns=("evaluation_return", "evaluation_return_std",
                                                "executor_steps", "trainer_steps")):
    directory = os.path.join(run_dir, "logs", "evaluator")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "logs.csv"), "w", newline="") as csv_file:
        writer = csv.writer(csv_file)
        writer.writerow(columns)
        writer.writerows(rows)


def rising_returns(count, step, offset=0.0):
    return [(-5.0 + 4.0 * index / count + offset, 0.5, index * step, index) for index in range(count)]


def test_reads_a_curve_in_step_order_and_skips_repeated_headers(tmp_path):
    run_dir = str(tmp_path / "run")
    header = ("evaluation_return", "evaluation_return_std", "executor_steps", "trainer_steps")
    rows = [(-3.0, 0.3, 0, 0), (-2.0, 0.2, 100, 1), header, (-1.0, 0.1, 200, 2)]
    write_evaluator_csv(run_dir, rows)
    curve = plot.read_learning_curve(run_dir)
    assert curve.label == "run"
    np.testing.assert_array_equal(curve.steps, [0, 100, 200])
    np.testing.assert_array_equal(curve.returns, [-3.0, -2.0, -1.0])
    np.testing.assert_array_equal(curve.return_stds, [0.3, 0.2, 0.1])


def test_rows_of_an_abandoned_launch_are_superseded_by_the_launch_that_resumed(tmp_path):
    run_dir = str(tmp_path / "run")
    # Killed at 400 after a checkpoint at 150; the next launch resumed from it and logged
    # from 160 on. The killed launch's rows beyond 160 described weights that were lost.
    rows = [(-9.0, 0.9, 0, 0), (-8.0, 0.8, 100, 1), (-7.0, 0.7, 200, 2), (-6.0, 0.6, 400, 4),
            (-5.0, 0.5, 160, 2), (-4.0, 0.4, 300, 3)]
    write_evaluator_csv(run_dir, rows)
    curve = plot.read_learning_curve(run_dir)
    np.testing.assert_array_equal(curve.steps, [0, 100, 160, 300])
    np.testing.assert_array_equal(curve.returns, [-9.0, -8.0, -5.0, -4.0])
    # A launch that saved no checkpoint is superseded entirely by the fresh start after it.
    write_evaluator_csv(run_dir, rows[:4] + [(-3.0, 0.3, 0, 0), (-2.0, 0.2, 50, 1)])
    curve = plot.read_learning_curve(run_dir)
    np.testing.assert_array_equal(curve.steps, [0, 50])
    np.testing.assert_array_equal(curve.returns, [-3.0, -2.0])


def test_smoothing_is_a_centred_moving_average_that_keeps_the_length():
    values = np.array([0.0, 3.0, 6.0, 9.0, 12.0])
    np.testing.assert_allclose(plot.smooth(values, 3), [1.5, 3.0, 6.0, 9.0, 10.5])
    np.testing.assert_array_equal(plot.smooth(values, 1), values)
    assert plot.default_window(5) == 1 and plot.default_window(40) == 5


def test_command_draws_several_runs_as_a_png_of_the_requested_size(tmp_path):
    run_dirs = []
    for index, (count, step) in enumerate([(30, 100), (12, 250)]):
        run_dir = str(tmp_path / f"run_{index}")
        write_evaluator_csv(run_dir, rising_returns(count, step, offset=0.3 * index))
        run_dirs.append(run_dir)
    out = str(tmp_path / "figures" / "curves.png")
    result = subprocess.run(
        [sys.executable, "-m", "mava_systems.plot", *run_dirs, "--out", out,
         "--width", "640", "--height", "480"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert png_size(out) == (640, 480)
    assert os.path.getsize(out) > 10_000  # Lines, bands, labels: not a blank canvas.
    assert "run_0: 30 evaluations up to 2900 executor steps" in result.stdout
    assert "run_1: 12 evaluations up to 2750 executor steps" in result.stdout


def test_each_run_gets_its_own_coloured_band_and_lines(tmp_path):
    """Pixels of the first two default colours appear: both runs were drawn."""
    from PIL import Image  # pylint: disable=import-outside-toplevel
    curves = [plot.LearningCurve(f"r{index}", np.arange(20.0) * 100,
                                 np.linspace(-5, -1, 20) + index, np.full(20, 0.5))
              for index in range(2)]
    out = plot.plot_learning_curves(curves, str(tmp_path / "c.png"), width_px=500, height_px=300)
    pixels = np.asarray(Image.open(out).convert("RGB")).reshape(-1, 3).astype(int)
    for rgb in [(0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)]:  # matplotlib's C0 and C1.
        close = np.abs(pixels - rgb).sum(axis=1) < 30
        assert close.sum() > 200, rgb


def test_a_directory_without_logs_is_a_clear_error(tmp_path):
    write_evaluator_csv(str(tmp_path / "good"), rising_returns(5, 10))
    (tmp_path / "empty").mkdir()
    assert plot.main([str(tmp_path / "good"), str(tmp_path / "empty"),
                      "--out", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(FileNotFoundError, match="has no evaluator log"):
        plot.read_learning_curve(str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        plot.read_learning_curve(str(tmp_path / "missing"))
    write_evaluator_csv(str(tmp_path / "header_only"), [])
    with pytest.raises(ValueError, match="no evaluation yet"):
        plot.read_learning_curve(str(tmp_path / "header_only"))
    write_evaluator_csv(str(tmp_path / "other"), [(1, 2)], columns=("loss", "trainer_steps"))
    with pytest.raises(ValueError, match="no column executor_steps, evaluation_return"):
        plot.read_learning_curve(str(tmp_path / "other"))


def test_labels_name_the_curves_in_order_and_must_match_the_runs(tmp_path, capsys):
    run_dirs = []
    for index in range(2):
        run_dir = str(tmp_path / f"seed_{index}" / "seed_0")  # Two runs of one name.
        write_evaluator_csv(run_dir, rising_returns(10, 100))
        run_dirs.append(run_dir)
    out = str(tmp_path / "curves.png")
    assert plot.main([*run_dirs, "--out", out, "--labels", "QMIX, VDN"]) == 0
    printed = capsys.readouterr().out
    assert "QMIX: 10 evaluations" in printed and "VDN: 10 evaluations" in printed
    with pytest.raises(SystemExit):
        plot.main([*run_dirs, "--out", out, "--labels", "QMIX"])
    assert "--labels must give 2 non-empty labels" in capsys.readouterr().err
