"""Node loggers: program-wide rates added to every row, and the terminal line clearing."""

import math

from mava_systems.components import logging as node_logging


class RecordingLogger:
    def __init__(self):
        self.rows = []

    def write(self, values):
        self.rows.append(dict(values))

    def close(self):
        pass


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_rows_carry_windowed_rates_of_the_program_wide_counts():
    recording, clock = RecordingLogger(), FakeClock()
    logger = node_logging.CountRateLogger(recording, window_s=10.0, clock=clock)
    for second in range(0, 31, 5):
        clock.now = float(second)
        # Executors speed up from 10 to 30 steps/s at t=15; the trainer keeps 4 steps/s.
        executor_steps = 10 * min(second, 15) + 30 * max(second - 15, 0)
        logger.write({"loss": 1.0, "executor_steps": executor_steps, "trainer_steps": 4 * second})
    first = recording.rows[0]
    assert math.isnan(first["executor_steps_per_second"])
    assert math.isnan(first["trainer_steps_per_second"])
    assert recording.rows[1]["executor_steps_per_second"] == 10.0
    assert all(row["trainer_steps_per_second"] == 4.0 for row in recording.rows[1:])
    assert recording.rows[-1]["executor_steps_per_second"] == 30.0  # Only the last 10 s.
    assert recording.rows[-1]["loss"] == 1.0


def test_rows_without_the_counts_get_no_rates():
    recording = RecordingLogger()
    node_logging.CountRateLogger(recording).write({"loss": 2.0})
    assert recording.rows == [{"loss": 2.0}]
