"""MATD3: MADDPG with TD3's twin critics, target policy smoothing and delayed policy updates."""

import functools

from mava_systems.maddpg.networks import MADDPGNetworkFactory
from mava_systems.maddpg.system import MADDPG
from mava_systems.matd3.builder import MATD3Builder
from mava_systems.matd3.config import MATD3Config
from mava_systems.matd3.networks import make_twin_networks


class MATD3(MADDPG):
    """Multi-agent TD3: MADDPG (deterministic policies, per-agent critics of the config's
    architecture, Gaussian exploration, the same program) with twin critics trained towards the
    smaller of their targets, clipped noise on the target policies' actions, and the policies and
    targets updated once every `policy_delay` critic updates (see `MATD3Trainer`). Takes
    MADDPG's arguments, with an `MATD3Config`; a `network_factory` must return twin critics
    (`matd3.TwinCritic`)."""

    builder_class = MATD3Builder
    system_name = "matd3"
    config_class = MATD3Config

    def make_default_network_factory(self) -> MADDPGNetworkFactory:
        """`make_twin_networks` with the config's layer sizes."""
        return functools.partial(make_twin_networks,
                                 policy_hidden_sizes=self.config.policy_hidden_sizes,
                                 critic_hidden_sizes=self.config.critic_hidden_sizes)
