"""Makes MATD3's parts: MADDPG's, with twin critics and MATD3's trainer."""

from typing import Any, Dict

from mava_systems.training.actor_critic import action_bounds
from mava_systems.maddpg.builder import MADDPGBuilder
from mava_systems.maddpg.networks import MADDPGNetworks
from mava_systems.matd3.networks import check_twin_critics
from mava_systems.matd3.training import MATD3Trainer


class MATD3Builder(MADDPGBuilder):
    """MADDPG's builder with MATD3's trainer; the critics must be twins (`TwinCritic`)."""

    trainer_class = MATD3Trainer

    def trainer_options(self) -> Dict[str, Any]:
        """The action bounds (for the target smoothing noise) and TD3's settings."""
        config = self.config
        return {"action_bounds": action_bounds(self.environment_spec, self.agent_networks),
                "policy_delay": config.policy_delay, "target_noise": config.target_noise,
                "target_noise_clip": config.target_noise_clip}

    def make_networks(self) -> MADDPGNetworks:
        """MADDPG's networks, checked to have twin critics.

        Raises:
          ValueError: if a critic has no `pair(inputs)` giving both twins' values.
        """
        networks = super().make_networks()
        check_twin_critics(networks.critics, "MATD3")
        return networks
