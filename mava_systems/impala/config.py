"""IMPALA hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import (SHARED_WEIGHTS_DOC, RunConfig, bounded, check_sizes, documented,
                                 sizes_doc, validate)


@dataclasses.dataclass
class IMPALAConfig(RunConfig):
    """Every IMPALA hyper-parameter, with its allowed range."""

    # Learning.
    discount: float = bounded(0.99, 0.0, 1.0, doc="Discount per environment step.")
    sequence_length: int = bounded(20, 2, doc="Steps per sequence (consecutive ones share a step).")
    batch_size: int = bounded(8, 1, doc="Sequences per learner step.")
    learning_rate: float = bounded(5e-4, 0.0, low_inclusive=False, doc="Adam step size.")
    max_gradient_norm: float = bounded(40.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping per network.")
    entropy_cost: float = bounded(0.01, 0.0, doc="Weight of the policy entropy bonus.")
    baseline_cost: float = bounded(0.5, 0.0, doc="Weight of the value (baseline) loss.")
    max_abs_reward: Optional[float] = bounded(None, 0.0, low_inclusive=False, optional=True,
                                              doc="Rewards are clipped to +-this (None: no clip).")
    shared_weights: bool = documented(True, SHARED_WEIGHTS_DOC)
    hidden_sizes: Tuple[int, ...] = documented((64, 64), sizes_doc("the policy and value network"))

    # The queue of sequences between actors and learner.
    max_queue_size: int = bounded(1000, 1, doc="Sequences the queue holds before actors wait.")
    prefetch_size: int = bounded(0, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")

    # Acting and evaluation.
    variable_update_period: int = bounded(20, 1, doc="Actor steps between variable fetches.")

    def __post_init__(self):
        validate(self)
        check_sizes(self, "hidden_sizes")
