"""Evaluation by executor steps: rounds at every multiple of N executor steps, exactly.

Three parts, one per node:

- `EvaluationGate` lives in the counter node. It knows which multiple of
  `every_steps` is due next, which snapshots the evaluator has taken and not
  yet evaluated, and says in every reply of the counter (the count
  `GATE_KEY`) whether executors must wait: while a multiple the count has
  reached has no snapshot yet, or while more than `max_pending` snapshots
  wait for evaluation.
- `wait_at_gate` is what an executor's environment loop does with a reply
  whose gate is closed: it asks the counter again until the gate opens (or the
  program stops).
- `StepEvaluator` is the evaluator node's object. One thread asks the
  counter for the next due multiple (a long poll that returns as soon as the
  count reaches it), fetches the variable source's variables at once and
  queues them with that step; the evaluator's main loop plays a round with
  each queued snapshot in order and logs it at exactly that step.

So a snapshot holds the trainer's variables fetched right after the counted
executor steps reached its multiple, while each executor takes at most one
more count increment; and executors run at most `(max_pending + 1) *
every_steps` steps (plus one increment each) beyond the step being evaluated.
"""

import collections
import threading
from typing import Any, Callable, Deque, Dict, NamedTuple, Optional

from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event, run_watched

# The counter's reply carries this count: 1 while executors must wait for the evaluator.
GATE_KEY = "evaluation_gate_closed"
# Seconds between an executor's questions to the counter while the gate is closed.
GATE_POLL_S = 0.02
# Seconds the counter holds the evaluator's question for the next due step before saying none.
NEXT_STEP_POLL_S = 1.0


class EvaluationGate:
    """The counter's side of the step schedule: due multiples, snapshots taken and evaluated.

    `counted(count)` is told every count of `steps_key` the counter reaches;
    `closed()` says whether executors must wait.
    """

    def __init__(self, every_steps: int, max_pending: int, start_count: int = 0):
        """`start_count`: the restored count; the first multiple due is 0 for a fresh run, else
        the first multiple above the restored count (those before were a previous launch's)."""
        if every_steps < 1:
            raise ValueError(f"every_steps must be >= 1, got {every_steps}")
        if max_pending < 0:
            raise ValueError(f"max_pending must be >= 0, got {max_pending}")
        self.every_steps = every_steps
        self.max_pending = max_pending
        self._count = start_count
        self._next = 0 if start_count == 0 else (start_count // every_steps + 1) * every_steps
        self._pending: Deque[int] = collections.deque()  # Snapshots taken, not yet evaluated.
        self._changed = threading.Condition()

    def counted(self, count: int) -> None:
        """Takes the counter's latest count of executor steps."""
        with self._changed:
            if count > self._count:
                self._count = count
                self._changed.notify_all()

    def closed(self) -> bool:
        """Whether executors must wait: a due multiple has no snapshot yet, or more than
        `max_pending` snapshots wait for evaluation."""
        with self._changed:
            return self._count >= self._next or len(self._pending) > self.max_pending

    def next_due(self, timeout_s: float = NEXT_STEP_POLL_S) -> Optional[int]:
        """The next multiple to snapshot, as soon as the count reaches it (None if it does not
        within `timeout_s`)."""
        with self._changed:
            if self._changed.wait_for(lambda: self._count >= self._next, timeout_s):
                return self._next
            return None

    def taken(self, step: int) -> None:
        """The snapshot of `step` (the multiple `next_due` gave) was taken."""
        with self._changed:
            if step == self._next:
                self._pending.append(step)
                self._next += self.every_steps
                self._changed.notify_all()

    def evaluated(self, step: int) -> None:
        """The snapshot of `step` was evaluated (or dropped)."""
        with self._changed:
            if step in self._pending:
                self._pending.remove(step)

    def evaluator_started(self) -> None:
        """A (re)started evaluator holds no snapshot: those pending are given up."""
        with self._changed:
            self._pending.clear()


def wait_at_gate(counts: Dict[str, Any], get_counts: Callable[[], Dict[str, Any]],
                 stop_event: threading.Event,
                 passed: Callable[[Dict[str, Any]], bool] = lambda counts: False) -> None:
    """Returns once the counter's reply `counts` (then `get_counts()`, asked again every
    `GATE_POLL_S`) says the evaluation gate is open, or `passed(counts)` (e.g. the step limit
    is reached: no more snapshot is taken).

    Raises:
      ProgramStopping: if the program stops meanwhile.
    """
    while counts.get(GATE_KEY) and not passed(counts):
        if stop_event.wait(GATE_POLL_S):
            raise ProgramStopping()
        counts = get_counts()


class Snapshot(NamedTuple):
    """The variable source's variables as they were when the count reached `step`."""

    step: int
    variables: Any
    counts: Dict[str, Any]  # The counter's counts when the snapshot was taken.


class StepEvaluator:
    """The evaluator node of the step schedule: a round of `evaluator` at every multiple.

    `evaluator` is an `Evaluator` (it plays and logs rounds); `counter` the
    counter node's handle (with the `EvaluationGate` methods of
    `CheckpointedCounter`); `take_snapshot()` fetches the source's variables,
    which `evaluator.evaluate(snapshot=...)` loads before its round. The final
    round, at `step_limit`, plays the trainer's final variables
    (`final_evaluation`, called by the coordinator), after the snapshots of
    earlier steps still queued.
    """

    def __init__(self, evaluator: Any, counter: Any, take_snapshot: Callable[[], Any],
                 step_limit: Optional[int] = None,
                 stop_event: Optional[threading.Event] = None,
                 snapshot_of_step: bool = False):
        """`stop_event`: set when the program stops (default: the program's). With
        `snapshot_of_step`, `take_snapshot(step)` is given the step it is for (e.g. a
        deterministic run's variables as executor 0 held them then)."""
        self._snapshot_of_step = snapshot_of_step
        self._evaluator = evaluator
        self._stop_event = stop_event
        self._counter = counter
        self._take_snapshot = take_snapshot
        self._step_limit = step_limit
        self._queue: Deque[Snapshot] = collections.deque()
        self._queued = threading.Condition()
        self._snapshotting = threading.Lock()  # Held while a snapshot is taken and queued.
        self._rounds = threading.Lock()  # Rounds are played one at a time, in step order.
        self._final_done = False
        self._snapshot_error: Optional[Exception] = None

    def evaluate(self, final: bool = False) -> dict:
        """One round with the source's latest variables (as `Evaluator.evaluate`)."""
        return self._evaluator.evaluate(final=final)

    def final_evaluation(self) -> dict:
        """Evaluates the snapshots of steps before the step limit (those queued, then any due
        and not yet taken), then plays the final round with the source's latest variables,
        logged at the step limit."""
        self._final_done = True
        with self._snapshotting:  # A snapshot being taken is queued first.
            pass
        with self._rounds:
            while self._queue:
                self._evaluate(self._queue.popleft())
            while True:
                step = self._counter.next_evaluation_step(0.0)
                if step is None or (self._step_limit is not None and step >= self._step_limit):
                    break
                self._evaluate(self._snapshot(step))
            return self._evaluator.evaluate(final=True, step=self._step_limit)

    def run(self) -> None:
        """Takes snapshots at every due multiple and evaluates them in order until the program
        stops (or its final round was played)."""
        run_watched(self._run, "evaluator loop")

    def _run(self) -> None:
        stop = self._stop_event or program_stop_event()
        self._counter.evaluator_started()
        threading.Thread(target=self._take_snapshots, args=(stop,), name="evaluation snapshots",
                         daemon=True).start()
        try:
            while not stop.is_set():
                if self._snapshot_error is not None:
                    raise RuntimeError(f"the evaluator's snapshots failed: "
                                       f"{self._snapshot_error}") from self._snapshot_error
                with self._queued:
                    if not self._queue:
                        self._queued.wait(0.5)
                with self._rounds:
                    if self._queue and not self._final_done:
                        self._evaluate(self._queue.popleft())
        except ProgramStopping:
            return

    def _take_snapshots(self, stop: threading.Event) -> None:
        try:
            self._snapshot_loop(stop)
        except Exception as error:  # pylint: disable=broad-except
            self._snapshot_error = error  # Raised by the main loop: executors would wait forever.

    def _snapshot_loop(self, stop: threading.Event) -> None:
        while not self._final_done and not stop.is_set():
            step = self._counter.next_evaluation_step(NEXT_STEP_POLL_S)
            if step is None:
                continue
            if self._step_limit is not None and step >= self._step_limit:
                return  # The final round stands for the step limit.
            with self._snapshotting:
                if self._final_done:
                    return
                snapshot = self._snapshot(step)
                with self._queued:
                    self._queue.append(snapshot)
                    self._queued.notify_all()

    def _snapshot(self, step: int) -> Snapshot:
        """The source's variables now, as the snapshot of `step` (which the counter learns)."""
        variables = self._take_snapshot(step) if self._snapshot_of_step else self._take_snapshot()
        return Snapshot(step, variables, self._counter.evaluation_snapshot_taken(step))

    def _evaluate(self, snapshot: Snapshot) -> None:
        try:
            self._evaluator.evaluate(snapshot=snapshot)
        finally:
            self._counter.evaluation_done(snapshot.step)
