"""Makes HAPPO's parts: MAPPO's queue, adder and executors, a policy per agent and one team
critic, and HAPPO's trainer."""

import dataclasses
from typing import Dict

from dm_env import specs
import numpy as np

from mava_systems.happo.execution import RecurrentHAPPOExecutor
from mava_systems.happo.training import TEAM, HAPPOTrainer, RecurrentHAPPOTrainer
from mava_systems.mappo.builder import MAPPOBuilder
from mava_systems.mappo.networks import MAPPONetworks, make_networks


class HAPPOBuilder(MAPPOBuilder):
    """MAPPO's builder (the on-policy sequence queue, sampling executors) with HAPPO's trainer
    and networks: a policy per agent and one critic, `critics["team"]`, of the global state
    (with `config.recurrent`, GRU policies and critic, and the recurrent trainer and executors
    carrying one team critic state)."""

    trainer_class = HAPPOTrainer
    recurrent_trainer_class = RecurrentHAPPOTrainer
    recurrent_executor_class = RecurrentHAPPOExecutor

    def team_critic_input_spec(self) -> specs.Array:
        """What the team critic sees: the global state, flattened (see `global_state_spec`)."""
        size = int(np.prod(self.global_state_spec().shape))
        return specs.Array((size,), np.float32, name="critic_input")

    def make_networks(self) -> MAPPONetworks:
        """Every agent's policy from the network factory, and the team critic: the critic the
        factory returns for the first agent, built on the global state (the other agents'
        critics are dropped)."""
        team_spec = self.team_critic_input_spec()
        networks = make_networks(self.environment_spec, self.agent_networks, self.network_factory,
                                 {key: team_spec for key in self.stacker.agents_by_network},
                                 recurrent=self.recurrent,
                                 recurrent_critic=self.recurrent_critic)
        first = next(iter(networks.critics))
        return dataclasses.replace(networks, critics={TEAM: networks.critics[first]})

    def critic_state_rows(self) -> Dict[str, int]:
        """The team critic's state: one row."""
        return {TEAM: 1}
