"""Makes MADDPG's parts: the off-policy n-step replay, dataset and adder (see
`NStepReplayBuilder`; with the global state for a "state" critic), and MADDPG's own networks,
trainer and executors."""

from typing import Any, Iterator, Optional

from acme.tf import variable_utils
import reverb

from mava_systems.builders import NStepReplayBuilder
from mava_systems.training.actor_critic import action_bounds
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.nodes.variables import VersionedVariableClient
from mava_systems.madqn.execution import ExplorationSchedule
from mava_systems.maddpg.execution import MADDPGExecutor
from mava_systems.maddpg.networks import CriticInputs, MADDPGNetworks, make_networks
from mava_systems.maddpg.training import MAD4PGTrainer, MADDPGTrainer


class MADDPGBuilder(NStepReplayBuilder):
    """Builds each MADDPG component (the off-policy actor-critic family's builder, on the n-step
    replay of `NStepReplayBuilder`); override one method to change one component."""

    trainer_class = MADDPGTrainer
    executor_class = MADDPGExecutor
    # Whether critics are categorical distributions (MAD4PG) rather than values.
    distributional = False

    @property
    def stores_environment_extras(self) -> bool:
        """Replay items carry the global state for a "state" critic only."""
        return self.config.critic == "state"

    def make_critic_inputs(self) -> CriticInputs:
        """What each agent's critic sees, for the config's critic architecture."""
        return CriticInputs(self.config.critic, self.environment_spec, self.agent_networks,
                            self.environment_spec.extras.get("env_state"))

    def make_networks(self) -> MADDPGNetworks:
        """Online and target policies and critics (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory,
                             self.make_critic_inputs(), self.distributional)

    def make_variable_client(self, variable_source: Any,
                             networks: MADDPGNetworks) -> variable_utils.VariableClient:
        """Keeps `networks`' policies in step with `variable_source`, in the background."""
        return VersionedVariableClient(
            variable_source, {key: policy.variables for key, policy in networks.policies.items()},
            update_period=self.config.variable_update_period)

    def make_trainer(self, networks: MADDPGNetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> MADDPGTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        return self.trainer_class_to_use()(
            networks=networks, critic_inputs=self.make_critic_inputs(), dataset=dataset,
            discount=config.discount, policy_learning_rate=config.policy_learning_rate,
            critic_learning_rate=config.critic_learning_rate,
            max_gradient_norm=config.max_gradient_norm,
            target_update_period=config.target_update_period,
            target_update_rate=config.target_update_rate, unpack=self.unpack_replay_items(),
            counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=config.trainer_steps_per_call, jit_compile=config.jit_compile,
            **self.trainer_options())

    def make_executor(self, networks: MADDPGNetworks, exploration_schedule: ExplorationSchedule,
                      adder: Any = None, variable_client: Any = None,
                      seed: int = 0) -> MADDPGExecutor:
        """An executor adding noise of the scale `exploration_schedule` gives to its policies."""
        return self.executor_class(networks, action_bounds(self.environment_spec, self.agent_networks),
                              exploration_schedule, adder, variable_client, seed)

    def make_evaluation_executor(self, networks: MADDPGNetworks, variable_client: Any = None,
                                 seed: int = 0) -> MADDPGExecutor:
        """An executor acting with its policies alone (no noise), writing nothing."""
        return self.make_executor(networks, ConstantEpsilon(0.0), variable_client=variable_client,
                                  seed=seed)


class MAD4PGBuilder(MADDPGBuilder):
    """MADDPG's builder with categorical critics and MAD4PG's trainer."""

    trainer_class = MAD4PGTrainer
    distributional = True
