"""MADDPG and MAD4PG: deterministic policy gradients with per-agent critics, as Launchpad programs."""

import functools
from typing import Any, Dict, List, Optional, Sequence

from mava_systems.acting.exploration import ConstantEpsilon, log_spread
from mava_systems.maddpg.builder import MAD4PGBuilder, MADDPGBuilder
from mava_systems.maddpg.config import MAD4PGConfig, MADDPGConfig
from mava_systems.maddpg.networks import (MADDPGNetworkFactory, check_continuous_actions,
                                          make_default_networks, make_distributional_networks)
from mava_systems.multiagent import MultiAgentSystem, ScheduledExploration


class MADDPG(ScheduledExploration, MultiAgentSystem):
    """Multi-agent DDPG: a deterministic policy and a critic per agent (shared per agent type by
    default, with agent IDs in the observations), trained off-policy from n-step replay; the
    root of the off-policy actor-critic family (MAD4PG extends it).

    The critic architecture is a config choice (`MADDPGConfig.critic`):
    "decentralised", "centralised" or "state" (see `CriticInputs`). Each
    executor explores with Gaussian noise of its own constant scale, spread
    log-uniformly across executors from `min_noise_scale` to `noise_scale`; the
    evaluator acts with the policies alone. The program is the seed's (see
    `MultiAgentSystem`): replay, counter, coordinator, trainer, evaluator, caches
    and round-robin executors. `network_factory(observation_spec,
    action_spec)` returns (policy, critic) (see `maddpg.networks`), and
    `exploration_schedules` give noise scales. The constructor refuses, before
    any process starts, a config of another class, an environment with discrete
    actions (pointing to MADQN, QMIX or MAPPO), and a "state" critic for an
    environment without a global state.
    """

    builder_class = MADDPGBuilder
    system_name = "maddpg"
    config_class = MADDPGConfig

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[MADDPGNetworkFactory] = None,
        num_executors: int = 1,
        num_caches: int = 0,
        max_executor_steps: Optional[int] = None,
        config: Optional[MADDPGConfig] = None,
        exploration_schedules: Optional[Sequence[ConstantEpsilon]] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            `wrappers.MultiAgentEnvironment` with continuous (bounded) actions.
          network_factory: `factory(observation_spec, action_spec)` returning a
            (policy, critic) pair (see `maddpg.networks`); None for MLPs with the
            config's `policy_hidden_sizes` and `critic_hidden_sizes`.
          num_executors: executor nodes (at least 1).
          num_caches: variable caches between trainer and executors (0: none).
          max_executor_steps: stop the program after this many executor steps.
          config: hyper-parameters (a `config_class`: `MADDPGConfig`, or
            `MAD4PGConfig` for MAD4PG; None: its defaults).
          exploration_schedules: one `schedule(step) -> noise scale` per executor
            (the standard deviation of the Gaussian noise added to its actions);
            by default constant scales spread log-uniformly from the config's
            `min_noise_scale` to `noise_scale`.
          run_dir: where logs and checkpoints go (default: `runs/<system_name>-<time>`).

        Raises:
          ValueError: on a bad count or config, discrete actions, or a "state"
            critic for an environment without a global state.
        """
        super().__init__(environment_factory, network_factory, num_executors, num_caches,
                         max_executor_steps, config, run_dir)
        self.set_exploration_schedules(exploration_schedules, num_executors)

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

    def check_environment(self) -> None:
        """Refuses discrete actions, and a "state" critic without the environment's global state."""
        name = type(self).__name__
        check_continuous_actions(self.environment_spec, name)
        if self.config.critic == "state" and "env_state" not in self.environment_spec.extras:
            raise ValueError(f"{name}: critic='state' needs the environment's global state, but "
                             f"{self._environment_factory!r} has none; use critic='centralised'")


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
