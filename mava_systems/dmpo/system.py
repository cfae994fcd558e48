"""DMPO: distributional MPO as a distributed Launchpad program, in the seed's topology."""

import functools
from typing import Any, Optional

from mava_systems.dmpo.builder import DMPOBuilder
from mava_systems.dmpo.config import DMPOConfig
from mava_systems.dmpo.networks import DMPONetworkFactory, make_default_networks
from mava_systems.single_agent import SingleAgentSystem


class DMPO(SingleAgentSystem):
    """Distributional MPO for continuous actions, trained from uniform n-step replay.

    The program is the seed's DMPO: replay; counter (with the coordinator in
    its group when `max_actor_steps` is set); learner; an evaluator reading the
    learner; `num_caches` caches (none: the learner is the only source); and
    actors reading round-robin from the sources, each given its actor id. The
    evaluator acts with the policy's mean.
    """

    system_name = "dmpo"
    config_class = DMPOConfig
    builder_class = DMPOBuilder
    discrete_actions = False

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[DMPONetworkFactory] = None,
        num_actors: int = 1,
        num_caches: int = 0,
        max_actor_steps: Optional[int] = None,
        config: Optional[DMPOConfig] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            one-agent `wrappers.MultiAgentEnvironment` with bounded float action
            vectors, e.g. `wrappers.make_environment_factory("gymnasium/Pendulum-v1")`.
          network_factory: `factory(observation_spec, action_spec)` returning
            (policy, critic) (see `dmpo.networks`); None for Acme's defaults
            sized by the config.
          num_actors: actor nodes (at least 1).
          num_caches: variable caches between the learner and the actors.
          max_actor_steps: stop the program after this many actor steps.
          config: hyper-parameters.
          run_dir: where logs and checkpoints go (default: runs/dmpo-<time>).

        Raises:
          ValueError: on a bad count or config, or an environment without
            exactly one agent with continuous actions.
        """
        super().__init__(environment_factory, network_factory, num_actors, num_caches,
                         max_actor_steps, config, run_dir)

    @staticmethod
    def make_default_network_factory(config: DMPOConfig) -> DMPONetworkFactory:
        """Acme's DMPO networks with the config's sizes and critic support."""
        return functools.partial(
            make_default_networks, policy_hidden_sizes=config.policy_hidden_sizes,
            critic_hidden_sizes=config.critic_hidden_sizes, vmin=config.vmin, vmax=config.vmax,
            num_atoms=config.num_atoms, init_scale=config.init_scale)
