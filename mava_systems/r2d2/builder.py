"""Makes R2D2's parts: prioritised sequence replay, adder, recurrent networks, trainer, executors.

The dataset and variable client are MADQN's.
"""

from typing import Any, Iterator, List, Optional

from acme import adders
from acme.adders import reverb as reverb_adders
from dm_env import specs
import numpy as np
import reverb
import tree

from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.nodes.replay import StopAwareClient
from mava_systems.madqn.builder import REPLAY_TABLE, MADQNBuilder
from mava_systems.madqn.execution import ExplorationSchedule
from mava_systems.r2d2.execution import R2D2Executor
from mava_systems.r2d2.networks import R2D2Networks, make_networks
from mava_systems.r2d2.training import R2D2Trainer


class R2D2Builder(MADQNBuilder):
    """Builds each R2D2 component; override one method to change one component."""

    trainer_class = R2D2Trainer
    executor_class = R2D2Executor

    def make_networks(self) -> R2D2Networks:
        """Online and target recurrent Q-networks (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory)

    def extras_spec(self) -> dict:
        """What executors write with each step: the LSTM state before acting, stacked per network."""
        networks = self.spec_networks()
        return {"core_state": {
            key: tree.map_structure(lambda part: specs.Array(tuple(part.shape), np.float32),
                                    networks.q_networks[key].initial_state(len(agents)))
            for key, agents in self.stacker.agents_by_network.items()}}

    def make_replay_tables(self) -> List[reverb.Table]:
        """One prioritised table of sequences, rate-limited by samples per insert."""
        config = self.config
        signature = reverb_adders.SequenceAdder.signature(
            self.environment_spec.stacked(self.stacker), self.extras_spec(),
            sequence_length=config.sequence_length)
        return [reverb.Table(name=REPLAY_TABLE,
                             sampler=reverb.selectors.Prioritized(config.priority_exponent),
                             remover=reverb.selectors.Fifo(), max_size=config.max_replay_size,
                             rate_limiter=self.make_rate_limiter(), signature=signature)]

    def unpack_replay_items(self) -> None:
        """Sequences are stored as Acme's `SequenceAdder` writes them: nothing to unpack."""
        return None

    def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
        """Writes overlapping sequences (burn-in + trace + 1 steps) every `replay_period` steps."""
        return reverb_adders.SequenceAdder(
            client=StopAwareClient(replay_client), sequence_length=self.config.sequence_length,
            period=self.config.replay_period)

    def make_trainer(self, networks: R2D2Networks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> R2D2Trainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        return self.trainer_class(
            networks=networks, dataset=dataset, discount=config.discount, n_step=config.n_step,
            burn_in_length=config.burn_in_length, learning_rate=config.learning_rate,
            max_gradient_norm=config.max_gradient_norm,
            target_update_period=config.target_update_period,
            importance_sampling_exponent=config.importance_sampling_exponent,
            max_priority_weight=config.max_priority_weight, unpack=self.unpack_replay_items(),
            replay_client=replay_client,
            replay_table=REPLAY_TABLE, counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call,
            jit_compile=self.config.jit_compile)

    def make_executor(self, networks: R2D2Networks,
                      exploration_schedule: Optional[ExplorationSchedule] = None,
                      adder: Optional[adders.Adder] = None, variable_client: Any = None,
                      seed: int = 0, greedy: bool = False) -> R2D2Executor:
        """An epsilon-greedy recurrent executor (greedy: epsilon 0, for evaluation)."""
        if greedy or exploration_schedule is None:
            exploration_schedule = ConstantEpsilon(0.0)
        return self.executor_class(networks, exploration_schedule, adder, variable_client, seed)
