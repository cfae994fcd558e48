"""The coordinator: stops the whole program once enough executor steps were taken."""

from typing import Any, Callable

from absl import logging
import launchpad as lp


class StepLimiter:
    """Polls the counter and stops the program when `steps_key` reaches `max_steps`."""

    def __init__(
        self,
        counter: Any,
        max_steps: int,
        steps_key: str = "executor_steps",
        poll_interval_s: float = 0.5,
        stop_program: Callable[[], None] = lp.stop,
    ):
        if max_steps <= 0:
            raise ValueError(f"max_steps must be positive, got {max_steps}")
        self._counter = counter
        self._max_steps = max_steps
        self._steps_key = steps_key
        self._poll_interval_s = poll_interval_s
        self._stop_program = stop_program

    def run(self) -> None:
        """Returns after stopping the program, or when the program stops anyway."""
        while not lp.wait_for_stop(self._poll_interval_s):
            steps = self._counter.get_counts().get(self._steps_key, 0)
            if steps >= self._max_steps:
                logging.info("Coordinator: %s=%d reached %d; stopping the program.",
                             self._steps_key, steps, self._max_steps)
                self._stop_program()
                return
