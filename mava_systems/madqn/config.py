"""MADQN hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import RunConfig, bounded, check_sizes, validate


@dataclasses.dataclass
class MADQNConfig(RunConfig):
    """Every MADQN hyper-parameter, with its allowed range."""

    # Learning.
    discount: float = bounded(0.99, 0.0, 1.0, doc="Discount per environment step.")
    n_step: int = bounded(5, 1, doc="Steps per n-step transition.")
    batch_size: int = bounded(256, 1, doc="Transitions per trainer step.")
    learning_rate: float = bounded(1e-3, 0.0, low_inclusive=False, doc="Adam step size.")
    max_gradient_norm: float = bounded(10.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping per network.")
    target_update_period: int = bounded(100, 1, doc="Trainer steps between target network copies.")
    huber_loss_parameter: Optional[float] = bounded(
        1.0, 0.0, low_inclusive=False, optional=True,
        doc="TD errors beyond this get a linear (Huber) loss (None: squared error).")
    shared_weights: bool = True
    # Each agent's observation gets its one-hot index appended (`wrappers.AgentIDObservations`),
    # so agents that share a network can learn different roles.
    agent_ids: bool = False
    hidden_sizes: Tuple[int, ...] = (64, 64)

    # Replay.
    min_replay_size: int = bounded(1000, 1, doc="Transitions in replay before training starts.")
    max_replay_size: int = bounded(100_000, 1, doc="Replay capacity in transitions.")
    samples_per_insert: Optional[float] = bounded(
        32.0, 0.0, low_inclusive=False, optional=True,
        doc="Sampled transitions per inserted one (None: no rate limit).")
    prioritized_replay: bool = False
    priority_exponent: float = bounded(0.6, 0.0, 1.0, doc="Prioritised sampling exponent.")
    importance_sampling_exponent: float = bounded(0.2, 0.0, 1.0,
                                                  doc="Importance weight exponent.")
    prefetch_size: int = bounded(4, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")

    # Acting and evaluation.
    variable_update_period: int = bounded(100, 1, doc="Executor steps between variable fetches.")

    def __post_init__(self):
        validate(self)
        if self.max_replay_size < self.min_replay_size:
            raise ValueError(
                f"MADQNConfig.max_replay_size ({self.max_replay_size}) must be at least "
                f"min_replay_size ({self.min_replay_size})")
        check_sizes(self, "hidden_sizes")
