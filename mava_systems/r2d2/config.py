"""R2D2 hyper-parameters, validated on construction."""

import dataclasses
import numbers
from typing import Optional, Tuple

from mava_systems.config import (SHARED_WEIGHTS_DOC, RunConfig, bounded, documented, sizes_doc,
                                 validate)


@dataclasses.dataclass
class R2D2Config(RunConfig):
    """Every R2D2 hyper-parameter, with its allowed range."""

    # Learning.
    discount: float = bounded(0.99, 0.0, 1.0, doc="Discount per environment step.")
    n_step: int = bounded(5, 1, doc="Steps per n-step target.")
    burn_in_length: int = bounded(8, 0, doc="Steps replayed only to warm up the LSTM state.")
    trace_length: int = bounded(20, 2, doc="Steps per sequence trained on, after the burn-in.")
    replay_period: int = bounded(10, 1, doc="Steps between the starts of consecutive sequences.")
    batch_size: int = bounded(32, 1, doc="Sequences per learner step.")
    learning_rate: float = bounded(1e-3, 0.0, low_inclusive=False, doc="Adam step size.")
    max_gradient_norm: float = bounded(40.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping per network.")
    target_update_period: int = bounded(100, 1, doc="Learner steps between target network copies.")
    shared_weights: bool = documented(True, SHARED_WEIGHTS_DOC)
    hidden_sizes: Tuple[int, ...] = documented((64,), sizes_doc("the Q-network's MLP torso"))
    lstm_size: int = bounded(64, 1, doc="LSTM units.")

    # Replay of sequences (prioritised).
    min_replay_size: int = bounded(100, 1, doc="Sequences in replay before training starts.")
    max_replay_size: int = bounded(10_000, 1, doc="Replay capacity in sequences.")
    samples_per_insert: Optional[float] = bounded(
        4.0, 0.0, low_inclusive=False, optional=True,
        doc="Sampled sequences per inserted one (None: no rate limit).")
    priority_exponent: float = bounded(0.6, 0.0, 1.0, doc="Prioritised sampling exponent.")
    importance_sampling_exponent: float = bounded(0.6, 0.0, 1.0, doc="Importance weight exponent.")
    max_priority_weight: float = bounded(0.9, 0.0, 1.0,
                                         doc="Priority = w * max |TD| + (1 - w) * mean |TD|.")
    prefetch_size: int = bounded(2, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")

    # Acting and evaluation.
    variable_update_period: int = bounded(100, 1, doc="Actor steps between variable fetches.")

    # Read by the dataset MADQN's builder makes.
    prioritized_replay = True

    @property
    def sequence_length(self) -> int:
        """Steps per stored sequence: burn-in, trace and one step to bootstrap from."""
        return self.burn_in_length + self.trace_length + 1

    def __post_init__(self):
        validate(self)
        if self.max_replay_size < self.min_replay_size:
            raise ValueError(
                f"R2D2Config.max_replay_size ({self.max_replay_size}) must be at least "
                f"min_replay_size ({self.min_replay_size})")
        if self.n_step >= self.trace_length:
            raise ValueError(f"R2D2Config.n_step ({self.n_step}) must be below trace_length "
                             f"({self.trace_length})")
        if (not isinstance(self.hidden_sizes, (tuple, list)) or any(
                isinstance(size, bool) or not isinstance(size, numbers.Integral) or size <= 0
                for size in self.hidden_sizes)):
            raise ValueError("R2D2Config.hidden_sizes must be a sequence of positive integers, "
                             f"got {self.hidden_sizes!r}")
        self.hidden_sizes = tuple(int(size) for size in self.hidden_sizes)
