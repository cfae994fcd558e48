"""MAPPO/IPPO hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import (MultiAgentConfig, bounded, check_sizes, documented,
                                 recorded_before, redefault, sizes_doc, validate)

CRITICS = ("centralised", "decentralised")


@dataclasses.dataclass
class MAPPOConfig(MultiAgentConfig):
    """Every MAPPO hyper-parameter: the on-policy actor-critic family's config (what every
    multi-agent system shares from `MultiAgentConfig`), with the sequence queue's fields and
    PPO's own.

    `baseline_cost` weighs the value loss; `learning_rate` is the policy's step
    size (and the critic's with one optimizer, see `separate_optimizers`).
    """

    # PPO.
    critic: str = documented("centralised", "centralised (MAPPO: the critic reads the global "
                                            "state) or decentralised (IPPO: the agent's own "
                                            "observation).")
    gae_lambda: float = bounded(0.95, 0.0, 1.0, doc="GAE lambda (0: one-step TD, 1: Monte Carlo).")
    clip_epsilon: float = bounded(0.2, 0.0, low_inclusive=False,
                                  doc="Policy ratios are clipped to [1 - this, 1 + this].")
    value_clip_epsilon: Optional[float] = bounded(
        0.2, 0.0, low_inclusive=False, optional=True,
        doc="Value updates are clipped to +-this around the old value (None: no clipping).")
    num_epochs: int = bounded(4, 1, doc="Passes over each batch of sequences.")
    num_minibatches: int = bounded(2, 1, doc="Minibatches each batch is split into per epoch.")
    normalize_advantages: bool = documented(True, "Standardise advantages per minibatch.")
    normalize_values: bool = documented(
        True, "Standardise value targets by running statistics.")
    separate_optimizers: bool = documented(True, "One Adam for the policy, one for the critic "
                                                 "(else one for both).")
    critic_learning_rate: float = bounded(5e-4, 0.0, low_inclusive=False,
                                          doc="The critic's Adam step size (separate optimizers).")
    max_policy_lag: Optional[int] = bounded(
        None, 0, optional=True,
        doc="Sequences acted on more than this many trainer steps ago are dropped (None: none).")
    init_log_std: float = bounded(-0.5, doc="Initial log standard deviation (continuous actions).")
    agent_ids: bool = redefault(MultiAgentConfig, "agent_ids", True)

    # Recurrent policy (see docs/architecture.md, "Recurrent MAPPO"): with `recurrent`, it is
    # the first `rnn_input_layers` of `hidden_sizes` as ReLU input layers, a GRU of
    # `rnn_hidden_size` units and a head, trained on chunks of `chunk_length` steps unrolled from
    # their stored states. By default its critic is the feedforward MLP (EPyMARL's MAPPO and
    # IPPO: a GRU agent of one input layer, MLP critics); `recurrent_critic` makes the critic
    # the same kind of recurrent core (the MAPPO paper's rMAPPO, with `rnn_input_layers=None`).
    # Runs recorded before these two fields existed had the MAPPO paper's layout
    # (`recorded_before`: the value `evaluate` and a resume's check read for them).
    recurrent: bool = documented(
        False, "Recurrent (GRU) policy (and critic, see recurrent_critic) trained on chunks of "
               "chunk_length steps (docs/architecture.md, Recurrent MAPPO).")
    rnn_hidden_size: int = bounded(64, 1, doc="GRU units of the recurrent policy and critic.")
    rnn_input_layers: Optional[int] = recorded_before(None, bounded(
        1, 1, optional=True, integer=True,
        doc="Layers of hidden_sizes before the recurrent networks' GRU (1: EPyMARL's GRU "
            "agent; None: all of them, the MAPPO paper's MLP base)."))
    recurrent_critic: bool = recorded_before(True, documented(
        False, "With recurrent=True, a GRU critic too, trained on chunks from stored states (the "
               "MAPPO paper's rMAPPO); False: an MLP critic of hidden_sizes (EPyMARL's)."))
    chunk_length: Optional[int] = bounded(
        None, 1, optional=True,
        doc="Steps per training chunk of a recurrent policy and critic; must divide "
            "sequence_length - 1 (None: sequence_length - 1, one chunk per sequence).")

    # Learning.
    learning_rate: float = bounded(5e-4, 0.0, low_inclusive=False,
                                   doc="The policy's Adam step size (and the critic's with one "
                                       "optimizer).")
    max_abs_reward: Optional[float] = bounded(None, 0.0, low_inclusive=False, optional=True,
                                              doc="Rewards are clipped to +-this (None: no clip).")
    entropy_cost: float = bounded(0.01, 0.0, doc="Weight of the policy entropy bonus.")
    baseline_cost: float = bounded(1.0, 0.0, doc="Weight of the value loss.")
    max_gradient_norm: float = bounded(10.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping per optimizer.")
    batch_size: int = bounded(16, 1, doc="Sequences per trainer step.")
    sequence_length: int = bounded(21, 2, doc="Steps per sequence, with its bootstrap step.")
    hidden_sizes: Tuple[int, ...] = documented((64, 64), sizes_doc("the policy and critic"))

    # The queue of sequences between executors and trainer (each is trained on once).
    max_queue_size: int = bounded(64, 1, doc="Sequences the queue holds before executors wait.")
    prefetch_size: int = bounded(0, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")
    max_items_in_flight: int = bounded(
        0, 0,
        doc="Items (blocks, with num_envs_per_executor > 1) a batched executor streams "
            "unconfirmed before it waits (0: each waits until the queue holds it; a full "
            "queue holds it back, so executors stay at most one queue ahead of the trainer).")

    # Acting: executors follow the trainer closely (the queue is on-policy).
    variable_update_period: int = bounded(20, 1, doc="Executor steps between variable fetches.")

    def __post_init__(self):
        validate(self)
        check_sizes(self, "hidden_sizes")
        if self.critic not in CRITICS:
            raise ValueError(f"{type(self).__name__}.critic must be one of {CRITICS}, "
                             f"got {self.critic!r}")
        for field in ("max_policy_lag", "chunk_length", "rnn_input_layers"):
            self._integer_or_none(field)
        self._check_chunk_length()
        if self.rnn_input_layers is not None and self.rnn_input_layers > len(self.hidden_sizes):
            raise ValueError(
                f"{type(self).__name__}.rnn_input_layers ({self.rnn_input_layers}) must be at "
                f"most the number of hidden_sizes ({len(self.hidden_sizes)}: "
                f"{self.hidden_sizes}): the recurrent networks' input layers are the first of them")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"{type(self).__name__}.batch_size ({self.batch_size}) must be a multiple of "
                f"num_minibatches ({self.num_minibatches})")

    def _integer_or_none(self, field: str) -> None:
        """Makes optional integer field `field` an int (`validate` reads optional bounds as
        floats); raises ValueError naming it unless it is integral or None."""
        value = getattr(self, field)
        if value is None:
            return
        if not float(value).is_integer():
            raise ValueError(f"{type(self).__name__}.{field} must be an integer or None, "
                             f"got {value!r}")
        setattr(self, field, int(value))

    def _check_chunk_length(self) -> None:
        name = type(self).__name__
        if self.chunk_length is None:
            return
        if not self.recurrent:
            raise ValueError(f"{name}.chunk_length ({self.chunk_length}) applies to recurrent "
                             "networks only: set recurrent=True, or leave chunk_length None")
        if (self.sequence_length - 1) % self.chunk_length:
            raise ValueError(
                f"{name}.chunk_length ({self.chunk_length}) must divide sequence_length - 1 "
                f"({self.sequence_length - 1}): each stored sequence (and its bootstrap step) "
                "is cut into whole chunks")

    @property
    def rnn_input_sizes(self) -> Tuple[int, ...]:
        """The ReLU layers before the recurrent networks' GRU (see `rnn_input_layers`)."""
        return self.hidden_sizes[:self.rnn_input_layers]

    @property
    def steps_per_chunk(self) -> int:
        """Steps each recurrent training chunk unrolls (see `chunk_length`)."""
        return self.chunk_length or self.sequence_length - 1
