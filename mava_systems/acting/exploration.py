"""Exploration rates for a set of executors."""

from typing import Callable, List, Optional

import numpy as np


def executor_epsilons(num_executors: int) -> List[float]:
    """One epsilon per executor, spread log-uniformly as in Acme's distributed DQN.

    Executor 0 explores least (0.4**8 ~ 0.00066) and the last explores most
    (0.4); a single executor gets 0.4.
    """
    if num_executors <= 0:
        raise ValueError(f"num_executors must be positive, got {num_executors}")
    return [float(e) for e in np.flip(np.logspace(1, 8, num_executors, base=0.4))]


def log_spread(num_executors: int, smallest: float, largest: float) -> List[float]:
    """One value per executor, spread log-uniformly from `smallest` (executor 0) to `largest`
    (the last), as `executor_epsilons` spreads epsilons; a single executor gets `largest`.
    A `largest` of 0 gives every executor 0."""
    if num_executors <= 0:
        raise ValueError(f"num_executors must be positive, got {num_executors}")
    if largest == 0.0:
        return [0.0] * num_executors
    if num_executors == 1:
        return [float(largest)]
    return [float(value) for value in np.geomspace(smallest, largest, num_executors)]


class ConstantEpsilon:
    """The same epsilon at every step."""

    def __init__(self, epsilon: float):
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = float(epsilon)

    def __call__(self, step: int) -> float:
        return self.epsilon

    def __repr__(self) -> str:
        return f"ConstantEpsilon({self.epsilon:.5g})"


class LinearEpsilon:
    """Epsilon falling linearly from `start` to `end` over `decay_steps` executor steps."""

    def __init__(self, start: float, end: float, decay_steps: int):
        for name, value in (("start", start), ("end", end)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if decay_steps <= 0:
            raise ValueError(f"decay_steps must be positive, got {decay_steps}")
        self.start, self.end, self.decay_steps = float(start), float(end), int(decay_steps)

    def __call__(self, step: int) -> float:
        fraction = min(step / self.decay_steps, 1.0)
        return self.start + fraction * (self.end - self.start)

    def __repr__(self) -> str:
        return f"LinearEpsilon({self.start}, {self.end}, {self.decay_steps})"


def default_schedules(num_executors: int) -> List[ConstantEpsilon]:
    """One constant schedule per executor, from `executor_epsilons`."""
    return [ConstantEpsilon(epsilon) for epsilon in executor_epsilons(num_executors)]


SCHEDULE_FORMATS = "'constant:EPSILON' or 'linear:START,END,DECAY_STEPS'"


def parse_schedule(text: str) -> Optional[Callable[[int], float]]:
    """The schedule `text` names: `constant:0.1` or `linear:1.0,0.05,200000` (epsilon falling
    over an executor's first 200,000 steps); None for "" (the system's default schedules).

    Raises:
      ValueError: naming the text and the accepted formats.
    """
    text = text.strip()
    if not text:
        return None
    kind, colon, arguments = text.partition(":")
    values = [value.strip() for value in arguments.split(",")] if colon else []
    try:
        if kind == "constant" and len(values) == 1:
            return ConstantEpsilon(float(values[0]))
        if kind == "linear" and len(values) == 3:
            return LinearEpsilon(float(values[0]), float(values[1]), _whole_number(values[2]))
    except ValueError as error:
        raise ValueError(f"exploration schedule {text!r}: {error}") from None
    raise ValueError(f"exploration schedule {text!r}: expected {SCHEDULE_FORMATS}")


def _whole_number(text: str) -> int:
    value = float(text)  # "2e5" as well as "200000".
    if not value.is_integer():
        raise ValueError(f"DECAY_STEPS must be a whole number, got {text}")
    return int(value)


def unfinished_schedule_note(schedule: Callable[[int], float], max_steps: Optional[int],
                             num_executors: int) -> Optional[str]:
    """What to say at launch when `schedule` (each executor's) is still annealing when a run
    of `max_steps` executor steps (shared by `num_executors` executors; None: no limit)
    stops, else None."""
    decay_steps = getattr(schedule, "decay_steps", None)
    if not max_steps or decay_steps is None:
        return None
    per_executor = max_steps // max(num_executors, 1)
    if per_executor >= decay_steps:
        return None
    return (f"Exploration: the schedule anneals over each executor's first {decay_steps} steps, "
            f"but the run stops at {max_steps} executor steps (about {per_executor} per "
            f"executor): it ends at {schedule(per_executor):.3g}, not {schedule(decay_steps):.3g}.")
