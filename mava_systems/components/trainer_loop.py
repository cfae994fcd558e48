"""What every trainer node does around its gradient step: sample, count, log, checkpoint, stop."""

import time
from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from acme.utils import counting, loggers
import tensorflow as tf

from mava_systems.components.counting import complete_counts
from mava_systems.components.lifecycle import (ProgramStopping, keep_serving_after_stop,
                                               program_stop_event)


class TrainerLoop:
    """A trainer's node loop; subclasses supply `train_step(sample)` and `state`.

    Samples are `reverb.ReplaySample`s (their `info` gives the logged replay size).

    Subclasses call `__init__` last in their own constructor: it restores
    the checkpoint of `state`, which must then hold every network and optimiser.
    """

    def __init__(
        self,
        dataset: Iterator[Any],
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
    ):
        self._dataset = dataset
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
        """Acts on `train_step`'s results before they are logged (e.g. pops and sends priorities)."""

    def step(self) -> Dict[str, Any]:
        """Samples one batch, trains on it, counts and logs the step."""
        start = time.time()
        sample = next(self._dataset)
        fetches = self.train_step(sample)
        self.after_train_step(sample, fetches)
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        counts = self._counter.increment(steps=1)
        result = {name: float(value.numpy()) for name, value in fetches.items()}
        result["replay_size"] = int(sample.info.table_size.numpy()[0])  # No TF op: cheaper.
        result.update(complete_counts(counts))
        # The trainer's own count: exact, and restored with its weights (the counter's may lag).
        result["trainer_steps"] = self.num_steps
        result["step_time_s"] = time.time() - start
        self._logger.write(result)
        return result

    def run(self) -> None:
        """Trains until the program stops, checkpointing periodically and at the end."""
        try:
            while not self._stop_event.is_set():
                self.step()
                if self._checkpointing is not None:
                    self._checkpointing.save()
        except ProgramStopping:
            pass
        finally:
            if self._checkpointing is not None:
                self._checkpointing.save(force=True)
        keep_serving_after_stop()
