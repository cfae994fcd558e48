"""Single-agent systems: the check of their environment, and their shared node constructors."""

from typing import Any, Callable, Dict, Optional

from acme.utils import counting
from dm_env import specs

from mava_systems.nodes.lifecycle import call_unless_stopped
from mava_systems.specs import MAEnvironmentSpec, network_keys
from mava_systems.system import DistributedSystem, check_count



def single_agent_spec(environment_factory: Any, system: str, discrete: bool,
                      seed: int = 0) -> MAEnvironmentSpec:
    """The spec of the environment `environment_factory` makes, checked for `system`.

    Raises:
      ValueError: naming the problem, if the environment does not have exactly
        one agent, or its actions are not discrete (when `discrete`) or not a
        continuous float vector (otherwise).
    """
    if not callable(environment_factory):
        raise ValueError(f"environment_factory must be callable, got {environment_factory!r}")
    environment = environment_factory(evaluation=False, seed=seed)
    try:
        spec = MAEnvironmentSpec.from_environment(environment)
    finally:
        environment.close()
    if len(spec.agents) != 1:
        raise ValueError(
            f"{system} is a single-agent system but {environment_factory!r} has "
            f"{len(spec.agents)} agents {spec.agents}; use a multi-agent system (e.g. MADQN)")
    (agent,) = spec.agents
    action_spec = spec.actions[agent]
    is_discrete = isinstance(action_spec, specs.DiscreteArray)
    if discrete and not is_discrete:
        raise ValueError(
            f"{system} needs discrete actions, but {environment_factory!r} has continuous actions "
            f"{action_spec}; use a continuous-action system such as DMPO")
    if not discrete and (is_discrete or not isinstance(action_spec, specs.BoundedArray)
                         or len(action_spec.shape) != 1):
        raise ValueError(
            f"{system} needs continuous actions (a bounded float vector), but {environment_factory!r} "
            f"has actions {action_spec}; use a discrete-action system such as DQN")
    return spec


class SingleAgentSystem(DistributedSystem):
    """A single-agent system on the shared components: its builder makes every node's parts.

    Subclasses set `system_name`, `config_class`, `builder_class`,
    `discrete_actions` and `make_default_network_factory(config)`. The builder
    provides `make_networks`, `make_replay_tables`, `make_dataset_iterator`,
    `make_adder`, `make_variable_client`, `make_trainer` and
    `make_executor(networks, adder=, variable_client=, seed=, greedy=)`.
    Acting nodes are Acme's "actors" and the trainer its "learner"; actor
    steps are counted as `executor_steps`, as in every system.
    """

    system_name = ""
    config_class: type = object
    builder_class: type = object
    discrete_actions = True
    trainer_group = "learner"
    executors_group = "actor"
    coordinator_group = "counter"

    def __init__(self, environment_factory: Any, network_factory: Optional[Callable],
                 num_actors: int, num_caches: int, max_actor_steps: Optional[int],
                 config: Any, run_dir: Optional[str]):
        """Validates everything and builds the networks once, before any process starts.

        Raises:
          ValueError: on a bad count or config, or an environment without
            exactly one agent with the kind of actions the system needs.
        """
        self.config = self.config_class() if config is None else config
        if not isinstance(self.config, self.config_class):
            raise ValueError(f"config must be a {self.config_class.__name__}, got {config!r}")
        check_count("num_actors", num_actors, 1)
        if max_actor_steps is not None:
            check_count("max_actor_steps", max_actor_steps, 1)
        super().__init__(num_actors, num_caches, max_actor_steps, run_dir,
                         self.config.checkpoint_interval_s, self.config.max_checkpoints_to_keep,
                         name=self.system_name)
        self.environment_spec = single_agent_spec(
            environment_factory, self.system_name.upper(), discrete=self.discrete_actions,
            seed=self.config.seed)
        self._environment_factory = environment_factory
        self.builder = self.builder_class(
            self.config, self.environment_spec,
            network_keys(self.environment_spec.agents, self.config.shared_weights),
            network_factory or self.make_default_network_factory(self.config), self.run_dir)
        networks = self.builder.make_networks()  # Fails here, not in a node, on a bad network.
        self._network_variables = {
            name: [list(variable.shape) for variable in module.variables]
            for name, module in networks.trained_modules().items()}

    @staticmethod
    def make_default_network_factory(config: Any) -> Callable:
        """The network factory used when none is given."""
        raise NotImplementedError

    def replay(self):
        """The replay tables (or queue)."""
        return self.replay_tables(self.builder.make_replay_tables())

    def trainer(self, replay, counter):
        """The learner: trains from replay and serves its variables."""
        with self.seeded_construction():
            dataset, replay_client = self.trainer_inputs(replay)
            return self.lockstep_trainer(self.builder.make_trainer(
                self.builder.make_networks(), dataset,
                replay_client=replay_client, counter=counting.Counter(counter, prefix="trainer"),
                logger=self.trainer_logger()))

    def greedy_executor(self, variable_source, seed):
        """The greedy executor following the source's variables, and its variable client."""
        with self.seeded_construction():
            networks = self.builder.make_networks()
        variable_client = self.builder.make_variable_client(variable_source, networks)
        executor = self.builder.make_executor(
            networks, variable_client=variable_client, seed=seed, greedy=True)
        return executor, variable_client

    def executor(self, executor_id, replay, variable_source, counter):
        """Actor `executor_id`: explores with its policy and writes to replay."""
        with self.seeded_construction():
            networks = self.builder.make_networks()
        replay, variable_client = self.executor_replay_and_variables(
            executor_id, replay, variable_source,
            self.builder.make_variable_client(variable_source, networks))
        call_unless_stopped(variable_client.update_and_wait, "first variables")
        executor = self.builder.make_executor(
            networks, adder=self.builder.make_adder(replay), variable_client=variable_client,
            seed=self.config.seed + 1 + executor_id, **self.executor_options(executor_id))
        environment = self._environment_factory(evaluation=False,
                                                seed=self.config.seed + 1 + executor_id)
        return self.executor_loop(
            environment, executor,
            counting.Counter(counter, prefix="executor", time_delta=self.executor_count_interval_s),
            f"executor_{executor_id}")

    def executor_options(self, executor_id: int) -> Dict[str, Any]:
        """Extra keyword arguments of `builder.make_executor` for actor `executor_id`."""
        del executor_id
        return {}

