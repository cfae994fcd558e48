"""MADQN hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import (MultiAgentConfig, bounded, check_sizes, documented, redefault,
                                 sizes_doc, validate)


@dataclasses.dataclass
class MADQNConfig(MultiAgentConfig):
    """Every MADQN hyper-parameter, with its allowed range (the value-based family's config:
    VDN's and QMIX's extend it; `MultiAgentConfig` holds what every family shares)."""

    # Learning.
    n_step: int = bounded(5, 1, doc="Steps per n-step transition.")
    batch_size: int = bounded(256, 1, doc="Transitions per trainer step.")
    learning_rate: float = bounded(1e-3, 0.0, low_inclusive=False, doc="Adam step size.")
    max_gradient_norm: float = bounded(10.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping per network.")
    target_update_period: int = bounded(100, 1, doc="Trainer steps between target network copies.")
    huber_loss_parameter: Optional[float] = bounded(
        1.0, 0.0, low_inclusive=False, optional=True,
        doc="TD errors beyond this get a linear (Huber) loss (None: squared error).")
    # Independent learners see no agent ID by default (see `MultiAgentConfig.agent_ids`).
    agent_ids: bool = redefault(MultiAgentConfig, "agent_ids", False)
    hidden_sizes: Tuple[int, ...] = documented((64, 64), sizes_doc("each agent's Q-network"))

    # Recurrent agents (see docs/architecture.md, "Recurrent agents"): with `recurrent`, each
    # agent is `hidden_sizes[0]`-wide ReLU input layer(s) (all of `hidden_sizes`), a GRU of
    # `rnn_hidden_size` units and a Q head, trained on stored sequences of `sequence_length`
    # steps whose first `burn_in_length` steps only warm up the stored GRU state (except in
    # sequences that start an episode, whose state is exact). Replay sizes then count steps
    # (held in sequences of `sequence_period` new steps) and `sequence_batch_size` sequences
    # make a batch.
    recurrent: bool = documented(
        False, "Recurrent (GRU) agents trained on stored sequences (docs/architecture.md, "
               "Recurrent agents); replay sizes then count steps.")
    rnn_hidden_size: int = bounded(64, 1, doc="GRU units of the recurrent agent.")
    sequence_length: int = bounded(20, 2, doc="Steps per stored sequence (recurrent agents).")
    burn_in_length: int = bounded(4, 0, doc="Steps of each sequence only replayed to warm up "
                                            "the stored recurrent state.")
    sequence_period: Optional[int] = bounded(
        None, 1, optional=True,
        doc="Steps between the starts of consecutive sequences (None: sequence_length - "
            "burn_in_length - 1, so every step is trained on once).")
    sequence_batch_size: int = bounded(32, 1, doc="Sequences per trainer step (recurrent agents).")

    # Replay.
    min_replay_size: int = bounded(1000, 1, doc="Transitions in replay before training starts.")
    max_replay_size: int = bounded(100_000, 1, doc="Replay capacity in transitions.")
    samples_per_insert: Optional[float] = bounded(
        32.0, 0.0, low_inclusive=False, optional=True,
        doc="Sampled transitions per inserted one (None: no rate limit).")
    prioritized_replay: bool = documented(
        False, "Sample replay by priority (TD error ** priority_exponent) instead of uniformly.")
    priority_exponent: float = bounded(0.6, 0.0, 1.0, doc="Prioritised sampling exponent.")
    importance_sampling_exponent: float = bounded(0.2, 0.0, 1.0,
                                                  doc="Importance weight exponent.")
    transitions_per_item: int = bounded(
        4, 1, doc="Consecutive transitions of one executor's stream per replay item (not with "
                  "recurrent agents, whose items are sequences): sampling cost is per item, so "
                  "a batch of batch_size transitions samples batch_size / this items.")
    prefetch_size: int = bounded(4, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")

    def __post_init__(self):
        validate(self)
        if self.max_replay_size < self.min_replay_size:
            raise ValueError(
                f"MADQNConfig.max_replay_size ({self.max_replay_size}) must be at least "
                f"min_replay_size ({self.min_replay_size})")
        check_sizes(self, "hidden_sizes")
        if not self.recurrent and self.batch_size % self.transitions_per_item:
            raise ValueError(
                f"{type(self).__name__}.batch_size ({self.batch_size}) must be a multiple of "
                f"transitions_per_item ({self.transitions_per_item}): a batch is whole replay "
                "items")
        if self.sequence_length < self.burn_in_length + 2:
            raise ValueError(
                f"{type(self).__name__}.sequence_length ({self.sequence_length}) must be at least "
                f"burn_in_length + 2 ({self.burn_in_length + 2}): the burn-in, one step trained "
                "on and the step it bootstraps from")
        if self.recurrent and self.n_step >= self.sequence_length - self.burn_in_length:
            raise ValueError(
                f"{type(self).__name__}.n_step ({self.n_step}) must be below sequence_length - "
                f"burn_in_length ({self.sequence_length - self.burn_in_length}) with recurrent "
                "agents: n-step targets are computed within a sequence")

    @property
    def steps_per_sequence(self) -> int:
        """Steps between the starts of consecutive stored sequences (see `sequence_period`)."""
        return self.sequence_period or self.sequence_length - self.burn_in_length - 1
