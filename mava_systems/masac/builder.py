"""Makes MASAC's parts: MADDPG's replay, dataset and adder, with stochastic policies, twin
critics, MASAC's trainer and executors."""

from typing import Any, Dict

import numpy as np

from mava_systems.maddpg.builder import MADDPGBuilder
from mava_systems.maddpg.networks import MADDPGNetworks
from mava_systems.masac.execution import MASACExecutor
from mava_systems.masac.networks import check_stochastic_policies
from mava_systems.masac.training import MASACTrainer
from mava_systems.matd3.networks import check_twin_critics
from mava_systems.specs import agents_by_network


class MASACBuilder(MADDPGBuilder):
    """MADDPG's builder with MASAC's trainer and executors; the policies must be stochastic
    (`SquashedGaussianPolicy`) and the critics twins (`matd3.TwinCritic`)."""

    trainer_class = MASACTrainer
    executor_class = MASACExecutor

    def target_entropy(self) -> Dict[str, float]:
        """Per network key, the config's target entropy, or minus its agents' action dimensions."""
        if self.config.target_entropy is not None:
            return {key: float(self.config.target_entropy)
                    for key in agents_by_network(self.agent_networks)}
        return {key: -float(np.prod(self.environment_spec.actions[agents[0]].shape))
                for key, agents in agents_by_network(self.agent_networks).items()}

    def trainer_options(self) -> Dict[str, Any]:
        """The target entropies and the temperatures' settings."""
        config = self.config
        return {"target_entropy": self.target_entropy(),
                "initial_temperature": config.initial_temperature,
                "temperature_learning_rate": config.temperature_learning_rate}

    def make_networks(self) -> MADDPGNetworks:
        """MADDPG's networks, checked to have stochastic policies and twin critics.

        Raises:
          ValueError: if a policy cannot sample or a critic has no twins.
        """
        networks = super().make_networks()
        check_stochastic_policies(networks.policies, "MASAC")
        check_twin_critics(networks.critics, "MASAC")
        return networks
