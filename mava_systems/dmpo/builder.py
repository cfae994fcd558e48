"""Makes DMPO's parts: MADQN's uniform n-step replay, dataset and adder, and DMPO's own networks,
trainer and executors."""

from typing import Any, Iterator, Optional

from acme.tf import variable_utils
import reverb

from mava_systems.training.actor_critic import action_bounds
from mava_systems.dmpo.execution import DMPOExecutor
from mava_systems.dmpo.networks import DMPONetworks, make_networks
from mava_systems.dmpo.training import DMPOTrainer
from mava_systems.madqn.builder import MADQNBuilder


class DMPOBuilder(MADQNBuilder):
    """Builds each DMPO component; replay, its dataset and the adder are MADQN's (uniform, n-step)."""

    trainer_class = DMPOTrainer
    executor_class = DMPOExecutor

    def make_networks(self) -> DMPONetworks:
        """Online and target policies and critics (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory)

    def make_variable_client(self, variable_source: Any,
                             networks: DMPONetworks) -> variable_utils.VariableClient:
        """Keeps `networks`' policies in step with `variable_source`, in the background."""
        return variable_utils.VariableClient(
            variable_source, {key: policy.variables for key, policy in networks.policies.items()},
            update_period=self.config.variable_update_period)

    def make_trainer(self, networks: DMPONetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> DMPOTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        return self.trainer_class(
            networks=networks, dataset=dataset, discount=config.discount,
            num_samples=config.num_samples, policy_learning_rate=config.policy_learning_rate,
            critic_learning_rate=config.critic_learning_rate,
            dual_learning_rate=config.dual_learning_rate,
            max_gradient_norm=config.max_gradient_norm,
            target_policy_update_period=config.target_policy_update_period,
            target_critic_update_period=config.target_critic_update_period,
            epsilon=config.epsilon, epsilon_mean=config.epsilon_mean,
            epsilon_stddev=config.epsilon_stddev, unpack=self.unpack_replay_items(),
            counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call,
            jit_compile=self.config.jit_compile)

    def make_executor(self, networks: DMPONetworks, adder: Any = None,
                      variable_client: Any = None, seed: int = 0,
                      greedy: bool = False) -> DMPOExecutor:
        """An executor sampling the policy (or acting with its mean, for evaluation)."""
        return self.executor_class(networks, action_bounds(self.environment_spec, self.agent_networks),
                            adder, variable_client, seed, greedy)
