"""Makes MAPPO's parts: IMPALA's sequence queue and adder, MADQN's dataset and checkpointing,
and MAPPO's own networks, executors and trainer."""

from typing import Any, Dict, Iterator, Optional

from acme import specs as acme_specs
from acme.tf import variable_utils
from dm_env import specs
import numpy as np
import reverb

from mava_systems.components.variables import VersionedVariableClient
from mava_systems.impala.builder import IMPALABuilder
from mava_systems.mappo.execution import AGENTS, MAPPOExecutor
from mava_systems.mappo.networks import MAPPONetworks, make_networks
from mava_systems.mappo.training import POLICY_VERSION, MAPPOTrainer


class MAPPOBuilder(IMPALABuilder):
    """Builds each MAPPO component; override one method to change one component.

    With the centralised critic, replay stores the environment's extras (its
    global state `env_state`, when it has one) with every step's observation.
    """

    trainer_class = MAPPOTrainer
    executor_class = MAPPOExecutor

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stores_environment_extras = self.config.critic == "centralised"

    @property
    def centralised(self) -> bool:
        """Whether critics see the global state (MAPPO) or only their agent's observation (IPPO)."""
        return self.config.critic == "centralised"

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
                              for key in self.stacker.agents_by_network})

    def sequence_environment_spec(self) -> acme_specs.EnvironmentSpec:
        """IMPALA's, with each step's observation `{"agents": stacked, **environment extras}`
        (see `MAPPOExecutor`)."""
        stacked = super().sequence_environment_spec()
        observations = {AGENTS: stacked.observations, **self.replay_environment_extras_spec()}
        return stacked._replace(observations=observations)

    def extras_spec(self) -> Dict[str, Any]:
        """What executors write with each action: every agent's behaviour log-probability,
        stacked per network, and the trainer step of the policy that chose it."""
        return {"log_prob": {key: specs.Array((len(agents),), np.float32)
                             for key, agents in self.stacker.agents_by_network.items()},
                POLICY_VERSION: specs.Array((), np.int64)}

    def make_variable_client(self, variable_source: Any,
                             networks: MAPPONetworks) -> variable_utils.VariableClient:
        """Keeps the policies and their version in step with `variable_source`, in the background."""
        variables = {key: policy.variables for key, policy in networks.policies.items()}
        variables[POLICY_VERSION] = [networks.policy_version]
        return VersionedVariableClient(variable_source, variables,
                                       update_period=self.config.variable_update_period)

    def make_trainer(self, networks: MAPPONetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> MAPPOTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        return self.trainer_class(
            networks=networks, dataset=dataset, config=self.config,
            state_from_observations=self.centralised and not self.replay_environment_extras_spec(),
            counter=counter, logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call)

    def make_executor(self, networks: MAPPONetworks, exploration_schedule: Any = None,
                      adder: Any = None, variable_client: Any = None,
                      seed: int = 0) -> MAPPOExecutor:
        """An executor sampling from its policies (MAPPO explores by sampling: there is no
        exploration schedule, `exploration_schedule` is ignored)."""
        del exploration_schedule
        return self.executor_class(networks, adder, variable_client, seed,
                             stores_state=bool(self.replay_environment_extras_spec()))

    def make_evaluation_executor(self, networks: MAPPONetworks, variable_client: Any = None,
                                 seed: int = 0) -> MAPPOExecutor:
        """An executor taking each policy's most likely action, writing nothing."""
        return self.executor_class(networks, variable_client=variable_client, seed=seed, greedy=True)
