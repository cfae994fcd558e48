"""MASAC and ISAC: multi-agent soft actor-critic with centralised or independent twin critics."""

import functools

from mava_systems.maddpg.networks import MADDPGNetworkFactory
from mava_systems.maddpg.system import MADDPG
from mava_systems.masac.builder import MASACBuilder
from mava_systems.masac.config import ISACConfig, MASACConfig
from mava_systems.masac.networks import make_sac_networks


class MASAC(MADDPG):
    """Multi-agent soft actor-critic: a squashed Gaussian policy and twin soft Q critics per
    agent (shared per agent type by default), the critics of the config's architecture
    (centralised on every agent's observation and action by default; "state": the global
    state), trained off-policy from n-step replay with each agent's entropy bonus weighted by
    its temperature, tuned to a target entropy (see `MASACTrainer`). Executors sample from
    the policies (their noise scales multiply the policies' standard deviations); the evaluator
    acts with the means. Takes MADDPG's arguments, with a `MASACConfig`; a `network_factory`
    must return a stochastic policy (`masac.SquashedGaussianPolicy`) and twin critics
    (`matd3.TwinCritic`). Discrete actions are refused before any process starts."""

    builder_class = MASACBuilder
    system_name = "masac"
    config_class = MASACConfig

    def make_default_network_factory(self) -> MADDPGNetworkFactory:
        """`make_sac_networks` with the config's layer sizes."""
        return functools.partial(make_sac_networks,
                                 policy_hidden_sizes=self.config.policy_hidden_sizes,
                                 critic_hidden_sizes=self.config.critic_hidden_sizes)


class ISAC(MASAC):
    """Independent soft actor-critic: MASAC with decentralised critics, each agent's twin critics
    seeing its own observation and action only (`ISACConfig`). Takes MASAC's arguments."""

    system_name = "isac"
    config_class = ISACConfig
