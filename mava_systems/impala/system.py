"""IMPALA: a V-trace actor-critic as a distributed Launchpad program, in the seed's topology."""

import functools
from typing import Any, Optional

from mava_systems.impala.builder import IMPALABuilder
from mava_systems.impala.config import IMPALAConfig
from mava_systems.impala.networks import ActorCriticFactory, make_mlp_actor_critic
from mava_systems.single_agent import SingleAgentSystem


class IMPALA(SingleAgentSystem):
    """Importance-weighted actor-learner: actors sample their policy, the learner corrects with V-trace.

    The program is the seed's IMPALA: a Reverb queue in the replay group;
    counter (with the coordinator in its group when `max_actor_steps` is set);
    learner; an evaluator reading the learner; one cache in front of the
    learner; and `num_actors` actors reading the cache and writing sequences
    to the queue. The evaluator acts greedily (the most likely action).
    """

    system_name = "impala"
    config_class = IMPALAConfig
    builder_class = IMPALABuilder
    discrete_actions = True

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[ActorCriticFactory] = None,
        num_actors: int = 1,
        max_actor_steps: Optional[int] = None,
        config: Optional[IMPALAConfig] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            one-agent `wrappers.MultiAgentEnvironment` with discrete actions, e.g.
            `wrappers.make_environment_factory("gymnasium/CartPole-v1")`.
          network_factory: `factory(observation_spec, action_spec)` returning a
            module mapping observations to (logits, value); None for MLPs
            with `config.hidden_sizes`.
          num_actors: actor nodes (at least 1).
          max_actor_steps: stop the program after this many actor steps.
          config: hyper-parameters.
          run_dir: where logs and checkpoints go (default: runs/impala-<time>).

        Raises:
          ValueError: on a bad count or config, or an environment without
            exactly one agent with discrete actions.
        """
        super().__init__(environment_factory, network_factory, num_actors, 1, max_actor_steps,
                         config, run_dir)

    @staticmethod
    def make_default_network_factory(config: IMPALAConfig) -> ActorCriticFactory:
        """MLP policy and value networks with `config.hidden_sizes`."""
        return functools.partial(make_mlp_actor_critic, hidden_sizes=config.hidden_sizes)
