"""Makes MAPPO's parts: the on-policy sequence queue and adder (see `SequenceQueueBuilder`), and
MAPPO's own networks, executors and trainer."""

from typing import Any, Dict, Iterator, Optional, Sequence

from acme import specs as acme_specs
from acme.tf import variable_utils
from dm_env import specs
import numpy as np
import reverb

from mava_systems.nodes.variables import VersionedVariableClient
from mava_systems.builders import SequenceQueueBuilder
from mava_systems.mappo.batched_execution import BatchedMAPPOExecutor
from mava_systems.mappo.execution import (AGENTS, CRITIC_STATE, POLICY_STATE, MAPPOExecutor,
                                          RecurrentMAPPOExecutor)
from mava_systems.mappo.networks import MAPPONetworks, make_networks
from mava_systems.mappo.training import POLICY_VERSION, MAPPOTrainer, RecurrentMAPPOTrainer
import tree


class MAPPOBuilder(SequenceQueueBuilder):
    """Builds each MAPPO component (the on-policy actor-critic family's builder, on the sequence
    queue of `SequenceQueueBuilder`); override one method to change one component.

    With the centralised critic, replay stores the environment's extras (its
    global state `env_state`, when it has one) with every step's observation.
    """

    trainer_class = MAPPOTrainer
    executor_class = MAPPOExecutor
    # With `config.recurrent`: acting that carries each agent's policy (and critic) state through
    # its episodes, and training on chunks unrolled from their stored states.
    recurrent_trainer_class = RecurrentMAPPOTrainer
    recurrent_executor_class = RecurrentMAPPOExecutor

    @property
    def stores_environment_extras(self) -> bool:
        """Replay stores the environment's extras for the centralised critic only."""
        return self.centralised

    @property
    def centralised(self) -> bool:
        """Whether critics see the global state (MAPPO) or only their agent's observation (IPPO)."""
        return self.config.critic == "centralised"

    @property
    def recurrent_critic(self) -> bool:
        """Whether the critics are recurrent cores whose states executors carry and replay
        stores (`config.recurrent_critic`, with recurrent policies)."""
        return self.recurrent and self.config.recurrent_critic

    def critic_input_spec(self, key: str) -> specs.Array:
        """What network `key`'s critic sees per agent: its own observation, flattened, after
        the global state when centralised."""
        agent = self.stacker.agents_by_network[key][0]
        size = int(np.prod(self.environment_spec.observations[agent].observation.shape))
        if self.centralised:
            size += int(np.prod(self.global_state_spec().shape))
        return specs.Array((size,), np.float32, name="critic_input")

    def make_networks(self) -> MAPPONetworks:
        """The policies and critics (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory,
                             {key: self.critic_input_spec(key)
                              for key in self.stacker.agents_by_network},
                             recurrent=self.recurrent, recurrent_critic=self.recurrent_critic)

    def sequence_environment_spec(self) -> acme_specs.EnvironmentSpec:
        """The stacked environment data, with each step's observation `{"agents": stacked, **environment extras}`
        (see `MAPPOExecutor`), and with recurrent networks the policy and critic states each
        step's agents act (and are valued) from (see `RecurrentMAPPOExecutor`)."""
        stacked = super().sequence_environment_spec()
        observations = {AGENTS: stacked.observations, **self.replay_environment_extras_spec()}
        if self.recurrent:
            observations.update(self.recurrent_state_specs())
        return stacked._replace(observations=observations)

    def recurrent_state_specs(self) -> Dict[str, Any]:
        """`{"policy_state": {key: spec}, "critic_state": {key: spec}}`: every network's state,
        its agents stacked (no `"critic_state"` with MLP critics)."""
        networks = self.spec_networks()

        def specs_of(modules: Dict[str, Any], rows: Dict[str, int]) -> Dict[str, Any]:
            return {key: tree.map_structure(
                        lambda part: specs.Array(tuple(part.shape), np.float32),
                        modules[key].initial_state(count))
                    for key, count in rows.items()}

        policy_rows = {key: len(agents) for key, agents in self.stacker.agents_by_network.items()}
        states = {POLICY_STATE: specs_of(networks.policies, policy_rows)}
        if self.recurrent_critic:
            states[CRITIC_STATE] = specs_of(networks.critics, self.critic_state_rows())
        return states

    def critic_state_rows(self) -> Dict[str, int]:
        """How many rows of state each recurrent critic has, by critic key: one per agent
        using it (executors carry them, see `RecurrentMAPPOExecutor`)."""
        return {key: len(agents) for key, agents in self.stacker.agents_by_network.items()}

    def extras_spec(self) -> Dict[str, Any]:
        """What executors write with each action: every agent's behaviour log-probability,
        stacked per network, and the trainer step of the policy that chose it."""
        return {"log_prob": {key: specs.Array((len(agents),), np.float32)
                             for key, agents in self.stacker.agents_by_network.items()},
                POLICY_VERSION: specs.Array((), np.int64)}

    def make_variable_client(self, variable_source: Any,
                             networks: MAPPONetworks) -> variable_utils.VariableClient:
        """Keeps the policies and their version (and recurrent critics, whose states executors
        carry) in step with `variable_source`, in the background."""
        variables = {key: policy.variables for key, policy in networks.policies.items()}
        if self.recurrent_critic:
            variables.update({f"critic/{key}": critic.variables
                              for key, critic in networks.critics.items()})
        variables[POLICY_VERSION] = [networks.policy_version]
        return VersionedVariableClient(variable_source, variables,
                                       update_period=self.config.variable_update_period,
                                       version_key=POLICY_VERSION)

    def make_trainer(self, networks: MAPPONetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> MAPPOTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        return self.trainer_class_to_use()(
            networks=networks, dataset=dataset, config=self.config,
            state_from_observations=self.centralised and not self.replay_environment_extras_spec(),
            counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call)

    def make_executor(self, networks: MAPPONetworks, adder: Any = None,
                      variable_client: Any = None, seed: int = 0) -> MAPPOExecutor:
        """An executor sampling from its policies (MAPPO explores by sampling them)."""
        return self._executor(networks, adder=adder, variable_client=variable_client, seed=seed,
                              stores_state=bool(self.replay_environment_extras_spec()))

    def make_evaluation_executor(self, networks: MAPPONetworks, variable_client: Any = None,
                                 seed: int = 0) -> MAPPOExecutor:
        """An executor taking each policy's most likely action, writing nothing."""
        return self._executor(networks, variable_client=variable_client, seed=seed, greedy=True)

    def make_batched_executor(self, networks: MAPPONetworks, replay_client: Any,
                              variable_client: Any, seeds: Sequence[int], agents: Sequence[str],
                              evaluation: bool = False, **exploration: Any
                              ) -> Optional[BatchedMAPPOExecutor]:
        """The B environments' executor writing blocks in arrays (see `BatchedMAPPOExecutor`),
        for MAPPO's own executors only (a subclass's executor splits the batch); greedy with
        `evaluation`; with no `replay_client` it writes nothing."""
        del exploration  # MAPPO explores by sampling its policies.
        if self.executor_class_to_use() not in (MAPPOExecutor, RecurrentMAPPOExecutor):
            return None
        actor = self._executor(networks, variable_client=variable_client, seed=list(seeds),
                               greedy=evaluation)
        writer = (None if replay_client is None
                  else self.make_batched_writer(replay_client, len(seeds)))
        return BatchedMAPPOExecutor(actor, writer, agents, len(seeds),
                                    stores_state=bool(self.replay_environment_extras_spec()),
                                    centralised=self.centralised)

    def _executor(self, networks: MAPPONetworks, **kwargs: Any) -> MAPPOExecutor:
        if self.recurrent:
            return self.executor_class_to_use()(networks, centralised=self.centralised, **kwargs)
        return self.executor_class(networks, **kwargs)
