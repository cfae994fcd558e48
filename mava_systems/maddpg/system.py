"""MADDPG and MAD4PG: deterministic policy gradients with per-agent critics, as Launchpad programs."""

import functools
from typing import Any, Dict, List

from mava_systems.components.exploration import ConstantEpsilon, log_spread
from mava_systems.madqn.builder import MADQNBuilder
from mava_systems.madqn.system import MADQN
from mava_systems.maddpg.builder import MAD4PGBuilder, MADDPGBuilder
from mava_systems.maddpg.config import MAD4PGConfig, MADDPGConfig
from mava_systems.maddpg.networks import (MADDPGNetworkFactory, check_continuous_actions,
                                          make_default_networks, make_distributional_networks)


class MADDPG(MADQN):
    """Multi-agent DDPG: a deterministic policy and a critic per agent (shared per agent type by
    default, with agent IDs in the observations), trained off-policy from n-step replay.

    The critic architecture is a config choice (`MADDPGConfig.critic`):
    "decentralised", "centralised" or "state" (see `CriticInputs`). Each
    executor explores with Gaussian noise of its own constant scale, spread
    log-uniformly across executors from `min_noise_scale` to `noise_scale`; the
    evaluator acts with the policies alone. The program is MADQN's (the seed's):
    replay, counter, coordinator, trainer, evaluator, caches and round-robin
    executors. Takes MADQN's arguments; `network_factory(observation_spec,
    action_spec)` returns (policy, critic) (see `maddpg.networks`), and
    `exploration_schedules` give noise scales. The constructor refuses, before
    any process starts, a config of another class, an environment with discrete
    actions (pointing to MADQN, QMIX or MAPPO), and a "state" critic for an
    environment without a global state.
    """

    builder_class = MADDPGBuilder
    system_name = "maddpg"
    config_class = MADDPGConfig

    def default_exploration_schedules(self, num_executors: int) -> List[ConstantEpsilon]:
        """One constant noise scale per executor (see `log_spread`)."""
        return [ConstantEpsilon(scale) for scale in log_spread(
            num_executors, self.config.min_noise_scale, self.config.noise_scale)]

    def executor_log_values(self, executor: Any) -> Dict[str, Any]:
        """Each executor row logs its exploration noise scale."""
        return {"noise_scale": executor.epsilon}

    def make_default_network_factory(self) -> MADDPGNetworkFactory:
        """`make_default_networks` with the config's layer sizes."""
        return functools.partial(make_default_networks,
                                 policy_hidden_sizes=self.config.policy_hidden_sizes,
                                 critic_hidden_sizes=self.config.critic_hidden_sizes)

    def make_builder(self, agent_networks: Dict[str, str],
                     network_factory: MADDPGNetworkFactory) -> MADQNBuilder:
        """The builder, once the config and the environment are known to suit the system."""
        name = type(self).__name__
        check_continuous_actions(self.environment_spec, name)
        if self.config.critic == "state" and "env_state" not in self.environment_spec.extras:
            raise ValueError(f"{name}: critic='state' needs the environment's global state, but "
                             f"{self._environment_factory!r} has none; use critic='centralised'")
        return super().make_builder(agent_networks, network_factory)


class MAD4PG(MADDPG):
    """MADDPG with categorical critics (D4PG's): each critic learns a distribution of returns
    over `num_atoms` values in [vmin, vmax], towards the projected distributional Bellman
    target; policies ascend the distributions' means. Takes MADDPG's arguments."""

    builder_class = MAD4PGBuilder
    system_name = "mad4pg"
    config_class = MAD4PGConfig

    def make_default_network_factory(self) -> MADDPGNetworkFactory:
        """`make_distributional_networks` with the config's layer sizes and support."""
        config = self.config
        return functools.partial(make_distributional_networks,
                                 policy_hidden_sizes=config.policy_hidden_sizes,
                                 critic_hidden_sizes=config.critic_hidden_sizes,
                                 vmin=config.vmin, vmax=config.vmax, num_atoms=config.num_atoms)
