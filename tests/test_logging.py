"""Node loggers: program-wide rates added to every row, and the terminal line clearing."""

import math

from mava_systems.runs import logging as node_logging


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


def test_tensorboard_rows_are_scalars_tagged_by_label_and_stepped_by_the_steps_key(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=import-outside-toplevel
    from tensorboard.util import tensor_util  # pylint: disable=import-outside-toplevel

    logger = node_logging.TensorBoardLogger(str(tmp_path), "executor_0", "executor_steps")
    for row in range(3):
        logger.write({"episode_return": -1.5 * row, "final": row == 2, "rate": math.nan,
                      "executor_steps": 25 * row})
    logger.close()
    events = event_accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    assert set(events.Tags()["tensors"]) == {"executor_0/episode_return", "executor_0/final",
                                             "executor_0/rate"}
    returns = events.Tensors("executor_0/episode_return")
    assert [event.step for event in returns] == [0, 25, 50]
    assert [float(tensor_util.make_ndarray(event.tensor_proto)) for event in returns] == [
        0.0, -1.5, -3.0]
    assert [float(tensor_util.make_ndarray(event.tensor_proto))
            for event in events.Tensors("executor_0/final")] == [0.0, 0.0, 1.0]
    assert math.isnan(float(tensor_util.make_ndarray(events.Tensors("executor_0/rate")[0].tensor_proto)))


def test_event_records_carry_the_checksums_tensorflow_checks(tmp_path):
    import os  # pylint: disable=import-outside-toplevel
    import random  # pylint: disable=import-outside-toplevel

    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow  # pylint: disable=import-outside-toplevel

    from mava_systems.runs import event_records  # pylint: disable=import-outside-toplevel

    assert event_records.native_crc32c() is not None  # The stack's TensorFlow exports it.
    generator = random.Random(0)
    records = [b"", b"a", *(bytes(generator.getrandbits(8) for _ in range(length))
                            for length in (7, 64, 1104, 5000))]
    for record in records:
        assert event_records.crc32c(record) == pywrap_tensorflow.crc32c(record)
        assert event_records.masked_crc32c(record) == pywrap_tensorflow.masked_crc32c(record)
    path = os.path.join(str(tmp_path), "records")
    with open(path, "wb") as file:
        writer = event_records.RecordWriter(file)
        for record in records:
            writer.write(record)
    # TensorFlow's reader checks every length and data checksum.
    assert list(tf.compat.v1.io.tf_record_iterator(path)) == records
    with open(path, "r+b") as file:  # A flipped byte in the last record's data.
        file.seek(-10, os.SEEK_END)
        byte = file.read(1)
        file.seek(-10, os.SEEK_END)
        file.write(bytes([byte[0] ^ 0xFF]))
    try:
        list(tf.compat.v1.io.tf_record_iterator(path))
    except tf.errors.DataLossError:
        pass
    else:
        raise AssertionError("a corrupted record passed TensorFlow's checksum")
