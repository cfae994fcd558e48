"""ReplayIterator: a dataset that ends on a sampling timeout is remade, in Python and compiled use."""

import threading

import pytest
import tensorflow as tf

from mava_systems.components.lifecycle import ProgramStopping
from mava_systems.components.replay import ReplayIterator


class CountingFactory:
    """Makes datasets of 0, 1, 2 (each ends as a Reverb dataset does after a timeout)."""

    def __init__(self):
        self.made = 0
        self.timeouts = []

    def __call__(self, rate_limiter_timeout_ms: int) -> tf.data.Dataset:
        self.made += 1
        self.timeouts.append(rate_limiter_timeout_ms)
        return tf.data.Dataset.range(3)


def test_next_remakes_the_dataset_when_it_ends():
    factory = CountingFactory()
    iterator = ReplayIterator(factory, stop_event=threading.Event())
    assert [int(next(iterator)) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert factory.made == 3
    assert all(timeout > 0 for timeout in factory.timeouts)  # Sampling never blocks for ever.


def test_apply_runs_a_compiled_function_on_each_dataset_traced_once():
    factory = CountingFactory()
    iterator = ReplayIterator(factory, stop_event=threading.Event())

    @tf.function
    def doubled_next(tf_iterator):
        return next(tf_iterator) * 2

    assert [int(iterator.apply(doubled_next)) for _ in range(7)] == [0, 2, 4, 0, 2, 4, 0]
    assert factory.made == 3
    assert doubled_next.experimental_get_tracing_count() == 1  # A remade dataset: no retrace.

    # The concrete function traced on one dataset's iterator takes a remade one's.
    concrete = doubled_next.get_concrete_function(iter(factory(0)))
    assert [int(iterator.apply(concrete)) for _ in range(4)] == [2, 4, 0, 2]
    assert factory.made == 5


def test_a_dataset_ending_after_the_stop_raises_program_stopping():
    factory = CountingFactory()
    stop = threading.Event()
    iterator = ReplayIterator(factory, stop_event=stop)
    assert int(next(iterator)) == 0
    stop.set()
    assert [int(next(iterator)) for _ in range(2)] == [1, 2]  # What was sampled is still served.
    with pytest.raises(ProgramStopping):
        next(iterator)
    assert factory.made == 1  # No new dataset is built once the program stops.


def test_stop_sampling_ends_the_iteration_at_the_next_dataset_end():
    factory = CountingFactory()
    stop = threading.Event()
    iterator = ReplayIterator(factory, stop_event=stop)
    assert int(next(iterator)) == 0
    iterator.stop_sampling()
    assert [int(next(iterator)) for _ in range(2)] == [1, 2]  # What was sampled is still served.
    with pytest.raises(ProgramStopping):
        next(iterator)
    assert factory.made == 1 and not stop.is_set()  # The program itself goes on.
