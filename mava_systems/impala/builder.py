"""Makes IMPALA's parts: the sequence queue, dataset, adder, networks, trainer and executors."""

from typing import Any, Iterator, Optional

from acme.tf import variable_utils
from dm_env import specs
import numpy as np
import reverb

from mava_systems.builders import REPLAY_TABLE, SequenceQueueBuilder
from mava_systems.impala.execution import IMPALAExecutor
from mava_systems.impala.networks import IMPALANetworks, make_networks
from mava_systems.impala.training import IMPALATrainer

# The queue is the builders' one replay table, which the dataset reads.
QUEUE_TABLE = REPLAY_TABLE


class IMPALABuilder(SequenceQueueBuilder):
    """Builds each IMPALA component on the on-policy sequence queue (see `SequenceQueueBuilder`)."""

    trainer_class = IMPALATrainer
    executor_class = IMPALAExecutor

    def make_networks(self) -> IMPALANetworks:
        """The actor-critic networks (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory)

    def extras_spec(self) -> dict:
        """What executors write with each step: the behaviour logits, stacked per network."""
        return {"logits": {
            key: specs.Array((len(agents), self.environment_spec.actions[agents[0]].num_values),
                             np.float32)
            for key, agents in self.stacker.agents_by_network.items()}}

    def make_variable_client(self, variable_source: Any,
                             networks: IMPALANetworks) -> variable_utils.VariableClient:
        """Keeps `networks` in step with `variable_source`, in the background."""
        return variable_utils.VariableClient(
            variable_source,
            {key: network.variables for key, network in networks.networks.items()},
            update_period=self.config.variable_update_period)

    def make_trainer(self, networks: IMPALANetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> IMPALATrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        return self.trainer_class(
            networks=networks, dataset=dataset, discount=config.discount,
            learning_rate=config.learning_rate, max_gradient_norm=config.max_gradient_norm,
            entropy_cost=config.entropy_cost, baseline_cost=config.baseline_cost,
            max_abs_reward=config.max_abs_reward, unpack=self.unpack_replay_items(),
            counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call,
            jit_compile=self.config.jit_compile)

    def make_executor(self, networks: IMPALANetworks, adder: Any = None,
                      variable_client: Any = None, seed: int = 0,
                      greedy: bool = False) -> IMPALAExecutor:
        """An executor sampling from the policy (or greedy, for evaluation)."""
        return self.executor_class(networks, adder, variable_client, seed, greedy)
