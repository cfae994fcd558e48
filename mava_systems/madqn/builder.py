"""Makes MADQN's parts: replay tables, dataset, adder, networks, trainer, executors."""

from typing import Any, Iterator, Mapping, Optional, Sequence

from acme import adders
from acme.tf import variable_utils
import reverb

from mava_systems.builders import REPLAY_TABLE, NStepReplayBuilder
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.nodes.variables import VersionedVariableClient
from mava_systems.madqn.batched_execution import BatchedMADQNExecutor
from mava_systems.madqn.execution import (ExplorationSchedule, MADQNExecutor,
                                          RecurrentMADQNExecutor)
from mava_systems.madqn.networks import MADQNNetworks, make_networks
from mava_systems.madqn.training import MADQNTrainer, RecurrentMADQNTrainer

__all__ = ["MADQNBuilder", "REPLAY_TABLE"]


class MADQNBuilder(NStepReplayBuilder):
    """Builds each MADQN component (the value-based family's builder: VDN's and QMIX's extend
    it); override one method to change one part, or set a class to change the loss or the acting.

    Replay is the off-policy layout (see `NStepReplayBuilder`): n-step
    transitions, or sequences with every agent's stored GRU state with
    recurrent agents.
    """

    # The classes `make_trainer` and `make_executor` construct: a subclass sets its own to change
    # the loss or the acting without copying a method (every system's builder does the same).
    trainer_class = MADQNTrainer
    executor_class = MADQNExecutor
    # The trainer and executor with `config.recurrent`: the same loss on stored sequences, and
    # acting that carries every agent's state through its episodes. A subclass that sets
    # `trainer_class` sets this one too (or a recurrent config is refused, naming it).
    recurrent_trainer_class = RecurrentMADQNTrainer
    recurrent_executor_class = RecurrentMADQNExecutor

    def make_networks(self) -> MADQNNetworks:
        """Online and target Q-networks (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory,
                             recurrent=self.recurrent)

    def acting_cores(self, networks: MADQNNetworks) -> Mapping[str, Any]:
        """The Q-networks: their states are what recurrent agents store with each step."""
        return networks.q_networks

    def make_variable_client(self, variable_source: Any,
                             networks: MADQNNetworks) -> variable_utils.VariableClient:
        """Keeps `networks`' online variables in step with `variable_source`, in the background."""
        return VersionedVariableClient(
            variable_source,
            {key: network.variables for key, network in networks.q_networks.items()},
            update_period=self.config.variable_update_period)

    def make_trainer(self, networks: MADQNNetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> MADQNTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        trainer_class, options = self.trainer_class_to_use(), self.trainer_options()
        if self.recurrent:
            options.update(burn_in_length=config.burn_in_length, n_step=config.n_step)
        return trainer_class(
            networks=networks,
            dataset=dataset,
            discount=config.discount,
            learning_rate=config.learning_rate,
            max_gradient_norm=config.max_gradient_norm,
            target_update_period=config.target_update_period,
            importance_sampling_exponent=(config.importance_sampling_exponent
                                          if config.prioritized_replay else None),
            huber_loss_parameter=config.huber_loss_parameter,
            unpack=self.unpack_replay_items(),
            transitions_per_item=self.transitions_per_item,
            replay_client=replay_client,
            replay_table=REPLAY_TABLE,
            counter=counter,
            logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call,
            jit_compile=self.config.jit_compile,
            **options)

    def make_executor(self, networks: MADQNNetworks, exploration_schedule: ExplorationSchedule,
                      adder: Optional[adders.Adder] = None,
                      variable_client: Optional[variable_utils.VariableClient] = None,
                      seed: int = 0) -> MADQNExecutor:
        """An epsilon-greedy executor following `exploration_schedule` (carrying every agent's
        recurrent state through its episodes with recurrent agents)."""
        return self.executor_class_to_use()(networks, exploration_schedule, adder, variable_client, seed)

    def make_evaluation_executor(self, networks: MADQNNetworks,
                                 variable_client: Optional[variable_utils.VariableClient] = None,
                                 seed: int = 0) -> MADQNExecutor:
        """A greedy executor that writes nothing (the evaluator's, and `evaluate`'s)."""
        return self.make_executor(networks, ConstantEpsilon(0.0), variable_client=variable_client,
                                  seed=seed)

    def make_batched_executor(self, networks: MADQNNetworks, replay_client: Optional[Any],
                              variable_client: Optional[variable_utils.VariableClient],
                              seeds: Sequence[int], agents: Sequence[str],
                              evaluation: bool = False,
                              exploration_schedule: Optional[ExplorationSchedule] = None
                              ) -> Optional[BatchedMADQNExecutor]:
        """The B environments' executor acting and writing in arrays (see
        `BatchedMADQNExecutor`), for the family's own executors only (a subclass's executor
        splits the batch); greedy with `evaluation`; with no `replay_client` it writes
        nothing."""
        if self.executor_class_to_use() not in (MADQNExecutor, RecurrentMADQNExecutor):
            return None
        if evaluation:
            actor = self.make_evaluation_executor(networks, variable_client, seed=list(seeds))
        else:
            actor = self.make_executor(networks, exploration_schedule,
                                       variable_client=variable_client, seed=list(seeds))
        adder = (None if replay_client is None
                 else self.make_batched_writer(replay_client, len(seeds)))
        return BatchedMADQNExecutor(actor, adder, agents, len(seeds),
                                    stores_state="env_state" in
                                    self.replay_environment_extras_spec())
