"""What every trainer node does around its gradient step: sample, count, log, checkpoint, stop."""

import contextlib
import re
import threading
import time
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from absl import logging
from acme.utils import counting, loggers
import reverb
import tensorflow as tf

from mava_systems.nodes.counting import complete_counts
from mava_systems.nodes.lifecycle import (ProgramStopping, keep_serving_after_stop,
                                          program_stop_event, run_watched)
from mava_systems.nodes.lockstep import LockstepBatches, ServedSnapshots
from mava_systems.nodes.replay import ReplayIterator
from mava_systems.training import graph_conversion  # noqa: F401  (AutoGraph's rules)

# The fetch holding each sampled item's new replay priority (prioritised replay).
PRIORITIES = "priorities"
# Seconds the checkpoint at the stop waits for a first step still being built (traced). Its
# variables (e.g. Adam's slots) are made while it is traced: a checkpoint taken meanwhile can
# hold some without their values, and the run could not be resumed from it.
BUILD_WAIT_S = 30.0
# Seconds `stop_training` waits for the step in progress: a step waiting for its batch ends
# within one sampling timeout; one still being built (traced) within `BUILD_WAIT_S`.
STOP_TRAINING_WAIT_S = 2 * BUILD_WAIT_S
# What TensorFlow's errors say when XLA cannot compile a step (e.g. an op it has no kernel for).
_XLA_ERROR_MARKERS = ("when trying to compile", "XLA_CPU_JIT", "XLA_GPU_JIT",
                      "compile-time constant")
_XLA_UNSUPPORTED_OPS = re.compile(r"on XLA_\w+_JIT: (.+?) \(No registered")


def xla_compile_error(error: tf.errors.OpError) -> ValueError:
    """A clear error for a trainer step that XLA could not compile (`jit_compile=True`), naming
    the operations XLA has no kernel for when TensorFlow's message does."""
    message = str(error)
    ops = _XLA_UNSUPPORTED_OPS.search(message)
    if ops:
        what = f"it uses operations XLA cannot compile ({ops.group(1)})"
    else:
        what = "XLA says: " + next(line.strip() for line in message.splitlines() + [message]
                                   if any(marker in line for marker in _XLA_ERROR_MARKERS))[:300]
    return ValueError(
        f"The trainer step cannot be compiled with XLA (jit_compile=True): {what}. A network or "
        "loss of your own may use such an operation; set jit_compile=False in the system's "
        "config (flag --jit_compile=false) to train with TensorFlow's own graph.")


@contextlib.contextmanager
def xla_errors(jit_compile: bool) -> Iterator[None]:
    """With `jit_compile`, turns TensorFlow's errors from an XLA compilation into
    `xla_compile_error`'s ValueError (other errors pass unchanged)."""
    try:
        yield
    except tf.errors.OpError as error:
        if jit_compile and any(marker in str(error) for marker in _XLA_ERROR_MARKERS):
            raise xla_compile_error(error) from None
        raise


def concatenate_steps(values: tf.Tensor) -> tf.Tensor:
    """Per-item values of K steps, [K, B, ...], as one batch of them: [K * B, ...]."""
    return tf.reshape(values, tf.concat([[-1], tf.shape(values)[2:]], axis=0))


class TrainerLoop:
    """A trainer's node loop; subclasses supply `train_step(sample)` and `state`.

    Samples are `reverb.ReplaySample`s (their `info` gives the logged replay size, in
    items times `transitions_per_item`).
    With `unpack`, their data are packed replay items (see `ArrayPacker`),
    unpacked here before `train_step` sees them, inside the compiled step.

    With `steps_per_call` K > 1, each `step` samples and trains on K batches in
    one compiled call (as Acme's `num_sgd_steps_per_step`): the trainer's step
    count, target updates and everything else counted in trainer steps still
    count gradient steps; the row logged per call holds the last step's
    scalars (as a row of K = 1 at that step would), and `after_train_step`
    sees the K batches' `info` and per-item fetches concatenated ([K * B]).

    With `jit_compile`, `train_step` (the pure computation: losses, gradients,
    optimiser and target updates, counting) is compiled with XLA; sampling,
    unpacking and everything around the step stay in TensorFlow's graph. An
    operation XLA cannot compile fails the first step with a ValueError naming
    `jit_compile` (see `xla_compile_error`).

    Subclasses call `__init__` last in their own constructor: it restores
    the checkpoint of `state`, which must then hold every network and optimiser.
    """

    def __init__(
        self,
        dataset: Iterator[Any],
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        unpack: Optional[Callable[[tf.Tensor], Any]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        if isinstance(steps_per_call, bool) or not isinstance(steps_per_call, int) \
                or steps_per_call < 1:
            raise ValueError(f"steps_per_call must be an integer of at least 1, got "
                             f"{steps_per_call!r}")
        self._steps_per_call = steps_per_call
        self._jit_compile = bool(jit_compile)
        # A `train_step` that is a `tf.function` of its own is traced afresh inside the XLA
        # step: a graph of it traced outside XLA may call functions compiled with XLA on their
        # own (`recurrent_unroll`), which crashed the step compiled around them.
        self._xla_train_step = (
            tf.function(getattr(self.train_step, "python_function", self.train_step),
                        jit_compile=True) if jit_compile else None)
        self._dataset = dataset
        self._unpack = unpack
        self._compiled_step: Optional[Callable[[Iterator[Any]], Any]] = None
        # Held while the first step is built (see `BUILD_WAIT_S`); `_built` once it has been.
        self._build_lock = threading.RLock()  # Re-entered: a compiled step traces `train_step`.
        self._built = False
        self._counter = counter or counting.Counter()
        self._logger = logger or loggers.NoOpLogger()
        self._stop_event = program_stop_event()
        self._training_stopped = threading.Event()  # See `stop_training`.
        self._training_ended = threading.Event()  # Set once `run`'s loop takes no more step.
        self._num_steps_variable = self.state["num_steps"]
        self._checkpointing = make_checkpointing(self.state) if make_checkpointing else None
        self._counted_steps = self.num_steps  # Trainer steps already given to the counter.
        # Seconds this node's steps have waited for sampled batches (see `batch_wait_s`).
        self._batch_wait_s = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self._served = ServedSnapshots(None)  # See `keep_served_variables`.

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds (including a `num_steps` variable)."""
        raise NotImplementedError

    # Fetches holding a value per sampled item (e.g. new priorities), concatenated over the
    # steps of a call like the batches' info; see `combine_steps`.
    per_item_fetches: Tuple[str, ...] = (PRIORITIES,)
    # Steps (e.g. transitions) each replay item holds: the logged `replay_size` counts them.
    transitions_per_item: int = 1

    @property
    def steps_per_call(self) -> int:
        """Trainer (gradient) steps each `step` takes, in one compiled call."""
        return self._steps_per_call

    @property
    def jit_compile(self) -> bool:
        """Whether `train_step` runs compiled with XLA (see the class)."""
        return self._jit_compile

    @property
    def batch_wait_s(self) -> float:
        """Seconds this trainer's steps have waited for their sampled batches since the node
        started: while the rate limiter held sampling back, or replay was slow to serve."""
        return float(self._batch_wait_s.numpy())

    @property
    def num_steps(self) -> int:
        """Trainer steps taken, including those restored from a checkpoint."""
        return int(self._num_steps_variable.numpy())

    def train_step(self, sample: Any) -> Dict[str, tf.Tensor]:
        """One gradient step on `sample`; returns the scalars to log. Counts itself with
        `count_step`."""
        raise NotImplementedError

    def compiled_train_step(self, sample: Any) -> Dict[str, tf.Tensor]:
        """`train_step` as the trainer runs it: compiled with XLA with `jit_compile`."""
        if self._xla_train_step is None:
            return self.train_step(sample)
        with xla_errors(True):
            return self._xla_train_step(sample)

    def count_step(self, after: Any) -> tf.Operation:
        """Adds one to the step count (`state["num_steps"]`) once the tensors in `after`,
        computed from the step's batch (e.g. its losses), are.

        In a compiled step, an operation that reads nothing of the batch runs as soon as the
        step starts: before a batch still awaited, and again at each retry after a sampling
        timeout. Counted that way, executors would be served a count ahead of the weights.
        """
        with tf.control_dependencies(tf.nest.flatten(after)):
            return self._num_steps_variable.assign_add(1)

    def after_train_step(self, sample: Any, fetches: Dict[str, tf.Tensor]) -> None:
        """Acts on `train_step`'s results before they are logged (e.g. pops and sends priorities).

        `sample` holds at least the batch's `info` (its data stays in the compiled step).
        """

    def step(self) -> Dict[str, Any]:
        """Samples `steps_per_call` batches, trains on each in turn, counts and logs the steps."""
        start = time.time()
        with xla_errors(self._jit_compile):  # XLA compiles the step at its first call.
            sample, fetches = self.sample_and_train()
        self.after_train_step(sample, fetches)
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        # The trainer's own count: exact, and restored with its weights (the counter's may lag).
        trainer_steps = int(fetches.pop("trainer_steps").numpy())
        # Every step taken since the last count: a call cut short by a dataset that ran out
        # (then retried) has taken some steps of its own.
        counts = self._counter.increment(steps=trainer_steps - self._counted_steps)
        self._counted_steps = trainer_steps
        result = {name: float(value.numpy()) for name, value in fetches.items()}
        result["replay_size"] = int(sample.info.table_size.numpy()[-1]) * self.transitions_per_item
        result.update(complete_counts(counts))
        result["trainer_steps"] = trainer_steps
        result["step_time_s"] = time.time() - start
        result["batch_wait_s"] = self.batch_wait_s
        self._logger.write(result)
        return result

    def sample_and_train(self) -> Tuple[reverb.ReplaySample, Dict[str, tf.Tensor]]:
        """Draws `steps_per_call` batches and trains on each: the sample (its `info` at least)
        and the fetches, with `trainer_steps` added (combined over the steps, see the class).

        From a `ReplayIterator` the batches are drawn inside the compiled step, so
        their arrays never pass through Python; other iterators are read in Python.
        """
        if isinstance(self._dataset, ReplayIterator):
            info, fetches = self._dataset.apply(self._sample_and_train_compiled)
            return reverb.ReplaySample(info=info, data=()), fetches
        if self._steps_per_call == 1:
            sample = self._next_batch(self._dataset)
            return sample, self._train_and_count(sample)
        steps = []
        for _ in range(self._steps_per_call):
            sample = self._next_batch(self._dataset)
            steps.append((sample.info, self._train_and_count(sample)))
        stacked = [tf.stack(values) for values in zip(*map(tf.nest.flatten, steps))]
        info, fetches = self.combine_steps(steps[0], stacked)
        return reverb.ReplaySample(info=info, data=()), fetches

    def combine_steps(self, first: Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]],
                      stacked: Sequence[tf.Tensor]
                      ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        """The results of K trainer steps as one: `stacked` holds the flattened leaves of
        `first` (one step's batch info and fetches) stacked over the K steps ([K, ...]).

        The batches' info and the fetches named in `per_item_fetches` are
        concatenated ([K * B, ...]); every other fetch is the last step's (what
        a row logged at that step holds: losses, statistics and counts alike,
        whatever their shape).
        """
        info, fetches = tf.nest.pack_sequence_as(first, list(stacked))
        return (tf.nest.map_structure(concatenate_steps, info),
                {name: concatenate_steps(value) if name in self.per_item_fetches else value[-1]
                 for name, value in fetches.items()})

    def _sample_and_train_compiled(self, iterator: Iterator[Any]
                                   ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        # Traced once, then called as a concrete function: that skips tf.function's
        # per-call matching of the iterator's type (about 4% of a step). A remade
        # dataset of the same table has the same type.
        if self._compiled_step is None:
            with self._building():
                self._compiled_step = tf.function(
                    self._sample_and_train_graph).get_concrete_function(iterator)
            # Tracing takes seconds: a stop that came meanwhile may have ended replay already,
            # and a sample from a server that has gone never returns.
            if self._stop_event.is_set():
                raise ProgramStopping()
        return self._compiled_step(iterator)

    def _sample_and_train_graph(self, iterator: Iterator[Any]
                                ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        first = self._sample_and_train_once(iterator)
        if self._steps_per_call == 1:
            return first
        # The further steps in a graph loop (traced once, whatever K), each step's results
        # stacked; one iteration at a time, so that each step sees the last one's variables.
        arrays = [tf.TensorArray(value.dtype, size=self._steps_per_call,
                                 element_shape=value.shape).write(0, value)
                  for value in tf.nest.flatten(first)]

        def train_once_more(index, arrays):
            values = tf.nest.flatten(self._sample_and_train_once(iterator))
            return index + 1, [array.write(index, value) for array, value in zip(arrays, values)]

        _, arrays = tf.while_loop(lambda index, _: index < self._steps_per_call, train_once_more,
                                  (tf.constant(1), arrays), parallel_iterations=1)
        return self.combine_steps(first, [array.stack() for array in arrays])

    def _sample_and_train_once(self, iterator: Iterator[Any]
                               ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        sample = self._next_batch(iterator)
        return sample.info, self._train_and_count(sample)

    def _next_batch(self, iterator: Iterator[Any]) -> Any:
        """The next sampled batch, its wait added to `batch_wait_s` (in a compiled step, the
        timestamps run in program order around the sample: they are stateful operations)."""
        started = tf.timestamp()
        with tf.control_dependencies([started]):
            sample = next(iterator)
        with tf.control_dependencies(tf.nest.flatten(sample)):
            self._batch_wait_s.assign_add(tf.timestamp() - started)
        return sample

    def _train_and_count(self, sample: Any) -> Dict[str, tf.Tensor]:
        if self._unpack is not None:
            sample = sample._replace(data=self._unpack(sample.data))
        with self._building():  # Traced at its first call (outside a compiled step).
            fetches = dict(self.compiled_train_step(sample))
        fetches["trainer_steps"] = self._num_steps_variable.read_value()
        return fetches

    @contextlib.contextmanager
    def _building(self) -> Iterator[None]:
        """Holds the build lock around what may build the first step, until one is built."""
        if self._built:
            yield
            return
        with self._build_lock:
            yield
            self._built = True

    def save_initial_state(self) -> None:
        """Saves a fresh trainer's state (one that restored no checkpoint) before its first
        step is built, so that a run stopped at any moment of start-up resumes from a
        complete trainer checkpoint: the one at the stop is skipped while that step is still
        being built (see `save_at_stop`). Replay, still empty, is not saved with it."""
        if self._checkpointing is not None and self._checkpointing.restored_from is None:
            self._checkpointing.save(force=True, call_before_save=False)

    def save_at_stop(self) -> None:
        """Saves the final checkpoint, once no first step is being built (the variables it
        makes would be saved half-made); if one still is after `BUILD_WAIT_S`, the last
        checkpoint stands (a step not yet built has changed nothing)."""
        if self._checkpointing is None:
            return
        if not self._build_lock.acquire(timeout=BUILD_WAIT_S):
            logging.warning("trainer: no checkpoint at the stop: its first step was still being "
                            "built after %.0f s (the last checkpoint stands)", BUILD_WAIT_S)
            return
        try:
            self._checkpointing.save(force=True)
        finally:
            self._build_lock.release()

    # A deterministic run's variable fetches (see nodes/lockstep.py).
    def keep_served_variables(self, every_steps: Optional[int]) -> None:
        """Keeps the variables served to executor 0 for evaluations at multiples of
        `every_steps` (None: none; see `served_variables`)."""
        self._served = ServedSnapshots(every_steps)

    def lockstep_variables(self, names: Sequence[str], executor_id: int, executor_step: int,
                           items: int) -> Any:
        """The variables of `names` after every trainer step that the items executor
        `executor_id` has inserted (`items`, all in replay) allow, once the trainer has taken
        them (a deterministic run's fetch, from the executor's step `executor_step`).

        Raises:
          ValueError: if this trainer's batches are not lockstep ones (`config.deterministic`).
        """
        if not isinstance(self._dataset, LockstepBatches):
            raise ValueError("lockstep variables need a deterministic run's trainer "
                             "(config.deterministic)")
        self._dataset.wait_idle(self._dataset.request(executor_id, items))
        variables = self.get_variables(names)
        if executor_id == 0:
            self._served.add(executor_step, names, variables)
        return variables

    def served_variables(self, names: Sequence[str], executor_step: int) -> Any:
        """The variables executor 0 acted with after its step `executor_step` (a deterministic
        run's evaluation snapshot)."""
        return self._served.at(executor_step, names)

    def stop_training(self, timeout_s: float = STOP_TRAINING_WAIT_S) -> int:
        """Has `run` take no further step, waits (up to `timeout_s`) for the step in progress
        to end, and returns the trainer step the variables now stay at.

        The coordinator calls it when the program reaches its step limit, before
        the evaluator's final round: that round then plays the weights the final
        checkpoint saves, even where data left in replay (e.g. IMPALA's queue)
        would have let the trainer go on until the program stopped. A step
        waiting for its batch is given up at its next sampling timeout (it has
        changed nothing). The variables are still served until the program stops. In a
        deterministic run it first waits (up to `timeout_s`) for the steps the executors'
        lockstep fetches allowed.
        """
        if isinstance(self._dataset, LockstepBatches):
            # The last fetch may come as the program reaches its limit: the final weights are
            # those of every step the fetches allowed, however soon the stop follows.
            self._dataset.wait_idle(self._dataset.allowed_steps, timeout_s)
        self._training_stopped.set()
        stop_sampling = getattr(self._dataset, "stop_sampling", None)
        if stop_sampling is not None:
            stop_sampling()
        if not self._training_ended.wait(timeout_s):
            logging.warning("trainer: a step still in progress %.0f s after training was "
                            "stopped; it may change the weights once more", timeout_s)
        return self.num_steps

    def run(self) -> None:
        """Trains until the program stops (or `stop_training`), checkpointing periodically
        and at the program's stop.

        A step still blocked long after the stop waits for a sample from a replay
        server that has gone (a stop during start-up): it is given up, and the
        checkpoint saved all the same (a blocked step has not changed any variable).
        """
        self.save_initial_state()
        try:
            run_watched(self._train_until_stopped, "trainer loop")
        finally:
            stopped_at = time.monotonic()
            self.save_at_stop()
        keep_serving_after_stop(stopped_at)

    def _train_until_stopped(self) -> None:
        try:
            while not (self._stop_event.is_set() or self._training_stopped.is_set()):
                self.step()
                if self._checkpointing is not None:
                    self._checkpointing.save()
        except ProgramStopping:
            pass
        finally:
            self._training_ended.set()
        self._stop_event.wait()  # Training was stopped: serve the variables until the stop.
