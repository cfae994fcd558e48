"""ReplayIterator: a dataset that ends on a sampling timeout is remade, in Python and compiled use."""

import threading

import pytest
import tensorflow as tf

from mava_systems.nodes.lifecycle import ProgramStopping
from mava_systems.nodes.replay import ReplayIterator


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


@pytest.mark.parametrize("stopped_by", ["the program's stop", "stop_sampling"])
def test_a_dataset_ending_after_a_stop_raises_program_stopping(stopped_by):
    factory = CountingFactory()
    stop = threading.Event()
    iterator = ReplayIterator(factory, stop_event=stop)
    assert int(next(iterator)) == 0
    if stopped_by == "stop_sampling":
        iterator.stop_sampling()
    else:
        stop.set()
    assert [int(next(iterator)) for _ in range(2)] == [1, 2]  # What was sampled is still served.
    with pytest.raises(ProgramStopping):
        next(iterator)
    assert factory.made == 1  # No new dataset is built once stopped.
    # `stop_sampling` ends this iteration only: the program itself goes on.
    assert stop.is_set() == (stopped_by != "stop_sampling")
