"""Makes IMPALA's parts: the sequence queue, dataset, adder, networks, trainer and executors."""

from typing import Any, Iterator, List, Optional

from acme import adders
from acme import specs as acme_specs
from acme.adders import reverb as reverb_adders
from acme.adders.reverb.sequence import EndBehavior
from acme.tf import variable_utils
from dm_env import specs
import numpy as np
import reverb

from mava_systems.components.replay import StopAwareClient
from mava_systems.impala.execution import IMPALAExecutor
from mava_systems.impala.networks import IMPALANetworks, make_networks
from mava_systems.impala.training import IMPALATrainer
from mava_systems.madqn.builder import REPLAY_TABLE, MADQNBuilder

# The queue has the replay table's name, so MADQN's dataset reads from it.
QUEUE_TABLE = REPLAY_TABLE


class IMPALABuilder(MADQNBuilder):
    """Builds each IMPALA component; the dataset (of sequences) is MADQN's."""

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

    def sequence_environment_spec(self) -> acme_specs.EnvironmentSpec:
        """The spec of what each stored step holds besides its extras: the environment's data
        stacked per network."""
        return self.environment_spec.stacked(self.stacker)

    def make_replay_tables(self) -> List[reverb.Table]:
        """One FIFO queue of sequences: each is trained on once, and actors wait when it is full."""
        signature = reverb_adders.SequenceAdder.signature(
            self.sequence_environment_spec(), self.extras_spec(),
            sequence_length=self.config.sequence_length)
        return [reverb.Table.queue(name=QUEUE_TABLE, max_size=self.config.max_queue_size,
                                   signature=signature)]

    def unpack_replay_items(self) -> None:
        """Sequences are stored as Acme's `SequenceAdder` writes them: nothing to unpack."""
        return None

    def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
        """Writes sequences of `sequence_length` steps, each starting at the previous one's last."""
        return reverb_adders.SequenceAdder(
            client=StopAwareClient(replay_client), sequence_length=self.config.sequence_length,
            period=self.config.sequence_length - 1,
            end_of_episode_behavior=EndBehavior.CONTINUE)

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
