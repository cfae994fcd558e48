"""MADQN: multi-agent deep Q-networks as a distributed Launchpad program."""

import functools
from typing import Any, Dict, Optional, Sequence

from mava_systems.acting.exploration import default_schedules
from mava_systems.madqn.builder import MADQNBuilder
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.execution import ExplorationSchedule
from mava_systems.madqn.networks import (QNetworkFactory, make_mlp_q_network,
                                         make_recurrent_q_network)
from mava_systems.multiagent import RESUME_SEED_STRIDE, MultiAgentSystem, ScheduledExploration

__all__ = ["MADQN", "RESUME_SEED_STRIDE"]


class MADQN(ScheduledExploration, MultiAgentSystem):
    """Independent double-Q learners for every agent, trained from one shared replay: the root of
    the value-based family (VDN and QMIX extend it).

    Agents of one type share a Q-network by default (`config.shared_weights`).
    Each executor explores with its own epsilon schedule; the evaluator is greedy.
    """

    builder_class = MADQNBuilder
    system_name = "madqn"
    config_class = MADQNConfig

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[QNetworkFactory] = None,
        num_executors: int = 1,
        num_caches: int = 0,
        max_executor_steps: Optional[int] = None,
        config: Optional[MADQNConfig] = None,
        exploration_schedules: Optional[Sequence[ExplorationSchedule]] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            `wrappers.MultiAgentEnvironment` (see `wrappers.make_environment_factory`).
          network_factory: `factory(observation_spec, action_spec)` returning a
            Q-network; defaults to an MLP with `config.hidden_sizes`. With
            `config.recurrent`, an `snt.RNNCore` (e.g. an `snt.DeepRNN` holding a
            GRU); defaults to `RecurrentQNetwork` (input layers, GRU, Q head).
          num_executors: executor nodes (at least 1).
          num_caches: variable caches between trainer and executors (0: none).
          max_executor_steps: stop the program after this many executor steps.
          config: hyper-parameters (a `config_class`, e.g. `MADQNConfig`; None: its defaults).
          exploration_schedules: one `schedule(step) -> epsilon` per executor;
            by default constant epsilons spread log-uniformly as in Acme's DQN.
          run_dir: where logs and checkpoints go (default: `runs/<system_name>-<time>`).
        """
        super().__init__(environment_factory, network_factory, num_executors, num_caches,
                         max_executor_steps, config, run_dir)
        self.set_exploration_schedules(exploration_schedules, num_executors)

    def default_exploration_schedules(self, num_executors: int) -> Sequence[ExplorationSchedule]:
        """One schedule per executor when none are given: constant epsilons spread as in Acme's DQN."""
        return default_schedules(num_executors)

    def make_default_network_factory(self) -> QNetworkFactory:
        """The network factory when none is given: an MLP Q-network with `config.hidden_sizes`,
        or with `config.recurrent` the reference recurrent agent (`RecurrentQNetwork`: the
        `hidden_sizes` input layers, a GRU of `rnn_hidden_size` units, a Q head)."""
        if self.config.recurrent:
            return functools.partial(make_recurrent_q_network, input_sizes=self.config.hidden_sizes,
                                     gru_size=self.config.rnn_hidden_size)
        return functools.partial(make_mlp_q_network, hidden_sizes=self.config.hidden_sizes)

    def replay_item_description(self, table: Any) -> str:
        """What `table`'s items hold (see `DistributedSystem`); with recurrent agents, the repr of
        the builder's sequence signature: the table's own, read back from Reverb, lists the
        extras in no fixed order."""
        if self.builder.recurrent:
            return repr(self.builder.sequence_signature())
        return super().replay_item_description(table)

    def executor_log_values(self, executor: Any) -> Dict[str, Any]:
        """What each executor row logs besides its episode's statistics: its epsilon."""
        return {"epsilon": executor.epsilon}
