"""What every trainer node does around its gradient step: sample, count, log, checkpoint, stop."""

import time
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Tuple

from acme.utils import counting, loggers
import reverb
import tensorflow as tf

from mava_systems.components.counting import complete_counts
from mava_systems.components.lifecycle import (ProgramStopping, keep_serving_after_stop,
                                               program_stop_event, run_watched)
from mava_systems.components.replay import ReplayIterator


class TrainerLoop:
    """A trainer's node loop; subclasses supply `train_step(sample)` and `state`.

    Samples are `reverb.ReplaySample`s (their `info` gives the logged replay size).
    With `unpack`, their data are packed replay items (see `ArrayPacker`),
    unpacked here before `train_step` sees them, inside the compiled step.

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
    ):
        self._dataset = dataset
        self._unpack = unpack
        self._compiled_step: Optional[Callable[[Iterator[Any]], Any]] = None
        self._counter = counter or counting.Counter()
        self._logger = logger or loggers.NoOpLogger()
        self._stop_event = program_stop_event()
        self._num_steps_variable = self.state["num_steps"]
        self._checkpointing = make_checkpointing(self.state) if make_checkpointing else None

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds (including a `num_steps` variable)."""
        raise NotImplementedError

    @property
    def num_steps(self) -> int:
        """Trainer steps taken, including those restored from a checkpoint."""
        return int(self._num_steps_variable.numpy())

    def train_step(self, sample: Any) -> Dict[str, tf.Tensor]:
        """One gradient step on `sample`; returns the scalars to log."""
        raise NotImplementedError

    def after_train_step(self, sample: Any, fetches: Dict[str, tf.Tensor]) -> None:
        """Acts on `train_step`'s results before they are logged (e.g. pops and sends priorities).

        `sample` holds at least the batch's `info` (its data stays in the compiled step).
        """

    def step(self) -> Dict[str, Any]:
        """Samples one batch, trains on it, counts and logs the step."""
        start = time.time()
        sample, fetches = self.sample_and_train()
        self.after_train_step(sample, fetches)
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        counts = self._counter.increment(steps=1)
        # The trainer's own count: exact, and restored with its weights (the counter's may lag).
        trainer_steps = int(fetches.pop("trainer_steps").numpy())
        result = {name: float(value.numpy()) for name, value in fetches.items()}
        result["replay_size"] = int(sample.info.table_size.numpy()[0])
        result.update(complete_counts(counts))
        result["trainer_steps"] = trainer_steps
        result["step_time_s"] = time.time() - start
        self._logger.write(result)
        return result

    def sample_and_train(self) -> Tuple[reverb.ReplaySample, Dict[str, tf.Tensor]]:
        """Draws a batch and trains on it: the sample (its `info` at least) and the fetches,
        with `trainer_steps` added.

        From a `ReplayIterator` the batch is drawn inside the compiled step, so
        its arrays never pass through Python; other iterators are read in Python.
        """
        if isinstance(self._dataset, ReplayIterator):
            info, fetches = self._dataset.apply(self._sample_and_train_compiled)
            return reverb.ReplaySample(info=info, data=()), fetches
        sample = next(self._dataset)
        return sample, self._train_and_count(sample)

    def _sample_and_train_compiled(self, iterator: Iterator[Any]
                                   ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        # Traced once, then called as a concrete function: that skips tf.function's
        # per-call matching of the iterator's type (about 4% of a step). A remade
        # dataset of the same table has the same type.
        if self._compiled_step is None:
            self._compiled_step = tf.function(self._sample_and_train_graph).get_concrete_function(
                iterator)
            # Tracing takes seconds: a stop that came meanwhile may have ended replay already,
            # and a sample from a server that has gone never returns.
            if self._stop_event.is_set():
                raise ProgramStopping()
        return self._compiled_step(iterator)

    def _sample_and_train_graph(self, iterator: Iterator[Any]
                                ) -> Tuple[reverb.SampleInfo, Dict[str, tf.Tensor]]:
        sample = next(iterator)
        return sample.info, self._train_and_count(sample)

    def _train_and_count(self, sample: Any) -> Dict[str, tf.Tensor]:
        if self._unpack is not None:
            sample = sample._replace(data=self._unpack(sample.data))
        fetches = dict(self.train_step(sample))
        fetches["trainer_steps"] = self._num_steps_variable.read_value()
        return fetches

    def run(self) -> None:
        """Trains until the program stops, checkpointing periodically and at the end.

        A step still blocked long after the stop waits for a sample from a replay
        server that has gone (a stop during start-up): it is given up, and the
        checkpoint saved all the same (a blocked step has not changed any variable).
        """
        try:
            run_watched(self._train_until_stopped, "trainer loop")
        finally:
            if self._checkpointing is not None:
                self._checkpointing.save(force=True)
        keep_serving_after_stop()

    def _train_until_stopped(self) -> None:
        try:
            while not self._stop_event.is_set():
                self.step()
                if self._checkpointing is not None:
                    self._checkpointing.save()
        except ProgramStopping:
            pass
