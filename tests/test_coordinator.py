"""The coordinator: at the step limit it stops the trainer's steps, has the evaluator play its
final round, then stops the program, in that order."""

import concurrent.futures
import types

import pytest

from mava_systems.nodes import coordinator


class RecordingHandle:
    """A Courier handle whose `futures.<method>()` records the call and returns a done future
    (failing with `error`, when given)."""

    def __init__(self, calls, methods, error=None):
        self.futures = types.SimpleNamespace(
            **{method: (lambda method=method: self._call(calls, method, error))
               for method in methods})

    @staticmethod
    def _call(calls, method, error):
        calls.append(method)
        future = concurrent.futures.Future()
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
        return future


class RisingCounter:
    """A counter whose executor steps rise by `per_poll` at each poll."""

    def __init__(self, per_poll):
        self.steps = 0
        self.per_poll = per_poll

    def get_counts(self):
        self.steps += self.per_poll
        return {"executor_steps": self.steps}


@pytest.fixture(autouse=True)
def program_never_stops_by_itself(monkeypatch):
    monkeypatch.setattr(coordinator.lp, "wait_for_stop", lambda timeout=None: False)


@pytest.mark.parametrize("trainer_error", [None, RuntimeError("trainer gone")])
def test_at_the_limit_training_stops_then_the_final_round_then_the_program(trainer_error):
    calls = []
    counter = RisingCounter(per_poll=40)
    limiter = coordinator.StepLimiter(
        counter, max_steps=100, stop_program=lambda: calls.append("stop_program"),
        evaluator=RecordingHandle(calls, ["final_evaluation"]),
        trainer=RecordingHandle(calls, ["stop_training"], error=trainer_error))
    limiter._run()  # pylint: disable=protected-access
    assert counter.steps == 120  # Polled until the limit, not beyond.
    # A trainer that could not be stopped still gets the final round and the stop.
    assert calls == ["stop_training", "final_evaluation", "stop_program"]


def test_without_trainer_or_evaluator_handles_the_limit_only_stops_the_program():
    calls = []
    limiter = coordinator.StepLimiter(RisingCounter(per_poll=100), max_steps=100,
                                      stop_program=lambda: calls.append("stop_program"))
    limiter._run()  # pylint: disable=protected-access
    assert calls == ["stop_program"]
