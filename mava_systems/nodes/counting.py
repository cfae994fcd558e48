"""The program's central counter, checkpointed with the run."""

import time
from typing import Dict, Mapping, Optional

import launchpad as lp
from acme.utils import counting
from acme.utils.counting import Number

from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.nodes.lifecycle import keep_serving_after_stop
from mava_systems.nodes.step_evaluation import GATE_KEY, NEXT_STEP_POLL_S, EvaluationGate


class CheckpointedCounter(counting.Counter):
    """An Acme counter whose counts are saved under `<run_dir>/checkpoints/counter/`.

    With `evaluate_every_steps`, it also keeps the evaluation schedule by
    executor steps (see `nodes/step_evaluation.py`): its replies carry
    `GATE_KEY`, and the evaluator asks it for the next due step.
    """

    def __init__(self, run_dir: Optional[str] = None, checkpoint_interval_s: float = 300.0,
                 max_checkpoints_to_keep: int = 3, evaluate_every_steps: Optional[int] = None,
                 max_pending_evaluations: int = 2, steps_key: str = "executor_steps"):
        super().__init__()
        self._checkpointing = None
        if run_dir is not None:
            self._checkpointing = Checkpointing(
                {"counter": self}, run_dir, "counter", checkpoint_interval_s, max_checkpoints_to_keep
            )
        self._steps_key = steps_key
        self._gate = None
        if evaluate_every_steps:
            self._gate = EvaluationGate(evaluate_every_steps, max_pending_evaluations,
                                        int(self._counts.get(steps_key, 0)))

    def get_counts(self) -> Dict[str, Number]:
        """Every count; with the step schedule, also whether executors must wait (`GATE_KEY`)."""
        counts = super().get_counts()
        if self._gate is not None:
            self._gate.counted(int(counts.get(self._steps_key, 0)))
            counts[GATE_KEY] = int(self._gate.closed())
        return counts

    # The evaluator's calls of the step schedule (see `StepEvaluator`).
    def next_evaluation_step(self, timeout_s: float = NEXT_STEP_POLL_S) -> Optional[int]:
        """The next executor step to evaluate, once the count reaches it (None if it does not
        within `timeout_s`)."""
        return self._schedule().next_due(timeout_s)

    def evaluation_snapshot_taken(self, step: int) -> Dict[str, Number]:
        """Notes that the variables of `step` were fetched; returns the counts."""
        self._schedule().taken(step)
        return self.get_counts()

    def evaluation_done(self, step: int) -> None:
        """Notes that the snapshot of `step` was evaluated."""
        self._schedule().evaluated(step)

    def evaluator_started(self) -> None:
        """Notes that the evaluator (re)started: snapshots it held are given up."""
        self._schedule().evaluator_started()

    def _schedule(self) -> EvaluationGate:
        if self._gate is None:
            raise ValueError("this counter keeps no evaluation schedule by steps "
                             "(evaluate_every_steps was not given)")
        return self._gate

    def run(self) -> None:
        """Serves counts until the program stops, saving them periodically and at the end."""
        while not lp.wait_for_stop(1.0):
            if self._checkpointing is not None:
                self._checkpointing.save()
        stopped_at = time.monotonic()
        if self._checkpointing is not None:
            self._checkpointing.save(force=True)
        keep_serving_after_stop(stopped_at)


# Every count a program keeps; logged rows carry all of them so CSV columns are fixed from row one.
COUNT_KEYS = ("executor_steps", "executor_episodes", "trainer_steps",
              "evaluator_steps", "evaluator_episodes")


def complete_counts(counts: Mapping[str, Number]) -> Dict[str, Number]:
    """The program-wide counts of `COUNT_KEYS` in `counts` (missing ones are 0), nothing else."""
    return {key: counts.get(key, 0) for key in COUNT_KEYS}


def executor_steps_key(executor_id: int) -> str:
    """The count of one executor's own steps: where its exploration schedule stands."""
    return f"executor_{executor_id}_steps"


class ExecutorCounter(counting.Counter):
    """Counts an executor's steps and episodes into the program's totals and its own steps.

    The central counter keeps both `executor_steps` (all executors) and
    `executor_<id>_steps` (this one), so a resumed executor continues its
    exploration schedule where it stopped. Like Acme's counter, increments
    reach the central counter at most once per `time_delta` seconds.
    """

    def __init__(self, parent: counting.Counter, executor_id: int, time_delta: float = 1.0):
        super().__init__(parent, time_delta=time_delta)
        self._own_steps_key = executor_steps_key(executor_id)

    def increment(self, **counts: Number) -> Dict[str, Number]:
        totals = {f"executor_{key}": value for key, value in counts.items()}
        if "steps" in counts:
            totals[self._own_steps_key] = counts["steps"]
        return super().increment(**totals)

    def own_steps(self) -> int:
        """This executor's steps so far, as the central counter has them (restored on resume)."""
        return int(self._parent.get_counts().get(self._own_steps_key, 0))
