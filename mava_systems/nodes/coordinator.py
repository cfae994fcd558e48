"""The coordinator: stops the whole program once enough executor steps were taken."""

from typing import Any, Callable, Optional

from absl import logging
import launchpad as lp

from mava_systems.nodes.lifecycle import run_watched


class StepLimiter:
    """Polls the counter and stops the program when `steps_key` reaches `max_steps`.

    At the limit, with a `trainer` (a handle with `stop_training()`), it first
    has the trainer take no further step, and with an `evaluator` (a handle
    with `final_evaluation()`) then has the evaluator play a final round with
    the trainer's variables: the run's last evaluation describes the policy
    its final checkpoint holds. (Executors start no episode once the limit is
    counted, see `EnvironmentLoop`; data already in replay could still feed
    the trainer.)
    """

    def __init__(
        self,
        counter: Any,
        max_steps: int,
        steps_key: str = "executor_steps",
        poll_interval_s: float = 0.5,
        stop_program: Callable[[], None] = lp.stop,
        evaluator: Optional[Any] = None,
        trainer: Optional[Any] = None,
    ):
        if max_steps <= 0:
            raise ValueError(f"max_steps must be positive, got {max_steps}")
        self._counter = counter
        self._max_steps = max_steps
        self._steps_key = steps_key
        self._poll_interval_s = poll_interval_s
        self._stop_program = stop_program
        self._evaluator = evaluator
        self._trainer = trainer

    def run(self) -> None:
        """Returns after stopping the program, or when the program stops anyway."""
        run_watched(self._run, "coordinator loop")

    def _run(self) -> None:
        while not lp.wait_for_stop(self._poll_interval_s):
            steps = self._counter.get_counts().get(self._steps_key, 0)
            if steps >= self._max_steps:
                logging.info("Coordinator: %s=%d reached %d; stopping the program.",
                             self._steps_key, steps, self._max_steps)
                if self._trainer is not None:
                    self._call_until_stopped(self._trainer, "stop_training")
                if self._evaluator is not None:
                    self._call_until_stopped(self._evaluator, "final_evaluation")
                self._stop_program()
                return

    @staticmethod
    def _call_until_stopped(node: Any, method: str) -> None:
        """Calls `node.method()` and waits for it to return, unless the program stops first
        (a failure is logged: the program is stopped all the same)."""
        future = getattr(node.futures, method)()
        while not future.done():
            if lp.wait_for_stop(0.1):
                return
        try:
            future.result()
        except Exception as error:  # pylint: disable=broad-except
            logging.warning("Coordinator: %s failed: %s", method, error)
