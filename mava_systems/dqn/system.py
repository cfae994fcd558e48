"""DQN: MADQN's components on a one-agent environment, in the seed's DQN topology."""

from typing import Any, Optional

from mava_systems.dqn.config import DQNConfig
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.networks import QNetworkFactory
from mava_systems.madqn.system import MADQN
from mava_systems.single_agent import single_agent_spec
from mava_systems.system import check_count


class DQN(MADQN):
    """Distributed double DQN with n-step targets and prioritised replay, for one agent.

    The program is the seed's DQN: replay; counter (with the coordinator in its
    group when `max_actor_steps` is set); learner; an evaluator reading the
    learner; `num_caches` caches; and actors reading round-robin from the
    caches (from the learner when `num_caches` is 0), actor i exploring with
    epsilon `np.flip(np.logspace(1, 8, num_actors, base=0.4))[i]`.
    Actor steps are counted as `executor_steps`, as in every system.
    """

    system_name = "dqn"
    config_class = DQNConfig
    trainer_group = "learner"
    executors_group = "actor"
    coordinator_group = "counter"

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[QNetworkFactory] = None,
        num_actors: int = 1,
        num_caches: int = 1,
        max_actor_steps: Optional[int] = None,
        config: Optional[DQNConfig] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            one-agent `wrappers.MultiAgentEnvironment` with discrete actions, e.g.
            `wrappers.make_environment_factory("gymnasium/CartPole-v1")`.
          network_factory: `factory(observation_spec, action_spec)` returning a
            Q-network; None for an MLP with `config.hidden_sizes`.
          num_actors: actor nodes (at least 1).
          num_caches: variable caches between the learner and the actors.
          max_actor_steps: stop the program after this many actor steps.
          config: hyper-parameters.
          run_dir: where logs and checkpoints go (default: runs/dqn-<time>).

        Raises:
          ValueError: on a bad count or config, or an environment without
            exactly one agent with discrete actions.
        """
        config = DQNConfig() if config is None else config
        if not isinstance(config, MADQNConfig):
            raise ValueError(f"config must be a DQNConfig, got {config!r}")
        check_count("num_actors", num_actors, 1)
        if max_actor_steps is not None:
            check_count("max_actor_steps", max_actor_steps, 1)
        single_agent_spec(environment_factory, "DQN", discrete=True, seed=config.seed)
        super().__init__(environment_factory, network_factory, num_executors=num_actors,
                         num_caches=num_caches, max_executor_steps=max_actor_steps,
                         config=config, run_dir=run_dir)
