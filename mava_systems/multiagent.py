"""The multi-agent base: what every multi-agent system shares, whatever its family.

`MultiAgentSystem` owns the config check, the environment factory (with agent
IDs when the config asks), the environment spec, which network each agent uses,
the builder and the networks' check, the run description, and every node of the
seed's program (replay, counter, coordinator, trainer, evaluator, caches and
executors, see `DistributedSystem.build`), made through the builder's interface
only (see `mava_systems.builders`). The families are siblings on it:

    DistributedSystem                  (system.py: counts, run directory, `build()`)
    +-- MultiAgentSystem               (this module)
    |   +-- MADQN -> VDN -> QMIX       value-based (with `ScheduledExploration`)
    |   +-- MADDPG -> MAD4PG           off-policy actor-critic (with `ScheduledExploration`)
    |   +-- MAPPO -> IPPO              on-policy actor-critic
    +-- SingleAgentSystem              (single_agent.py: IMPALA, R2D2, DMPO; DQN reuses MADQN)

Their configs have the same shape: `config.RunConfig` -> `config.MultiAgentConfig`
-> `MADQNConfig` / `MADDPGConfig` / `MAPPOConfig` (each family's extended within
the family only); their builders too: `builders.MultiAgentBuilder` ->
`NStepReplayBuilder` -> `MADQNBuilder` / `MADDPGBuilder`, and
`SequenceQueueBuilder` -> `MAPPOBuilder`.

How a new family plugs in (e.g. MATD3, MASAC, HAPPO), in its own package
`mava_systems/<family>/`:

1. `config.py`: a dataclass extending `MultiAgentConfig` (with `UniformReplayConfig`
   too for off-policy replay, as `MADDPGConfig` does) with the family's own fields.
2. `networks.py`: a network factory and `make_networks(...)` returning an object
   with `trained_modules()` (`{name: snt.Module}`: their variable shapes are
   recorded in run.json).
3. `training.py`: the trainer (a variable source; see `training/trainer_loop.py`).
4. `execution.py` (if Acme-style acting differs): the executor.
5. `builder.py`: a builder on `NStepReplayBuilder` (off-policy) or
   `SequenceQueueBuilder` (on-policy) implementing the `make_*` interface, with
   `trainer_class` and `executor_class` set.
6. `system.py`: `class MyFamily(MultiAgentSystem)` (and `ScheduledExploration`
   first in the bases when each executor explores by a schedule: epsilon, noise
   scale) setting `system_name`, `config_class`, `builder_class` and
   `make_default_network_factory()`; optionally `check_environment()` (refuse
   an environment it cannot handle), `builder_arguments()`, `executor_log_values()`.
   Setting `system_name` registers it: evaluate, the experiment grids and the
   examples find it by name.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
from acme.utils import counting
import reverb

from mava_systems.nodes.counting import ExecutorCounter
from mava_systems.nodes.lifecycle import call_unless_stopped
from mava_systems.acting.multi_environment import (MultiEnvironmentExecutor,
                                                   MultiEnvironmentLoop, environment_seeds)
from mava_systems.acting.unsplit_loop import BatchedEvaluationRounds, UnsplitEnvironmentLoop
from mava_systems.acting.vectorised_loop import VectorisedEnvironmentLoop
from mava_systems.config import vectorised_choice
from mava_systems.specs import MAEnvironmentSpec, network_keys
from mava_systems.system import DistributedSystem
from wrappers.agent_ids import WithAgentIDs
from wrappers.registry import EnvironmentFactory

# Resumed executors seed with their step count times this, so they do not replay old episodes.
RESUME_SEED_STRIDE = 1_000_003


class MultiAgentSystem(DistributedSystem):
    """A multi-agent system: its builder makes every node's parts (see the module's docstring).

    Subclasses set `system_name` (which registers them), `config_class` (a
    `MultiAgentConfig`), `builder_class` (a `MultiAgentBuilder`) and
    `make_default_network_factory()`, and may override the hooks
    `check_environment`, `builder_arguments`, `exploration_settings`,
    `executor_exploration` and `executor_log_values`.
    """

    builder_class: Any = None

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[Callable[..., Any]] = None,
        num_executors: int = 1,
        num_caches: int = 0,
        max_executor_steps: Optional[int] = None,
        config: Any = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            `wrappers.MultiAgentEnvironment` (see `wrappers.make_environment_factory`).
          network_factory: the family's network factory (None: `make_default_network_factory()`).
          num_executors: executor nodes (at least 1).
          num_caches: variable caches between trainer and executors (0: none).
          max_executor_steps: stop the program after this many executor steps.
          config: hyper-parameters (a `config_class`; None: its defaults).
          run_dir: where logs and checkpoints go (default: `runs/<system_name>-<time>`).

        Raises:
          ValueError: on a bad count, a config of another class, an environment
            the family cannot handle (see `check_environment`), or networks that do
            not fit the environment.
        """
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise ValueError(f"{type(self).__name__} needs a {self.config_class.__name__}, "
                             f"got {self.config!r}")
        super().__init__(num_executors, num_caches, max_executor_steps, run_dir,
                         self.config.checkpoint_interval_s, self.config.max_checkpoints_to_keep,
                         name=self.system_name)
        if not callable(environment_factory):
            raise ValueError(f"environment_factory must be callable, got {environment_factory!r}")
        if self.config.agent_ids:
            environment_factory = WithAgentIDs(environment_factory)
        self._environment_factory = environment_factory
        environment = environment_factory(evaluation=False, seed=self.config.seed)
        self.environment_spec = MAEnvironmentSpec.from_environment(environment)
        environment.close()
        self.check_environment()
        self._vectorised = self.steps_vectorised()
        self.builder = self.make_builder(
            network_keys(self.environment_spec.agents, self.config.shared_weights),
            network_factory or self.make_default_network_factory())
        if self.writes_batched:
            self.builder.batch_environments(self.num_envs_per_executor)
        networks = self.builder.make_networks()  # Fails here, not in a node, on a bad network.
        self._network_variables = {
            key: [list(variable.shape) for variable in network.variables]
            for key, network in networks.trained_modules().items()}

    # Hooks of a family.
    def make_default_network_factory(self) -> Callable[..., Any]:
        """The network factory when none is given (from the config's sizes)."""
        raise NotImplementedError

    def check_environment(self) -> None:
        """Raises ValueError, naming the problem, if this system cannot run in the environment
        (`environment_spec` is set). Nothing here."""

    def builder_arguments(self) -> Dict[str, Any]:
        """Arguments of `builder_class` beyond every builder's (e.g. VDN's `mixer_factory`)."""
        return {}

    def make_builder(self, agent_networks: Dict[str, str],
                     network_factory: Callable[..., Any]) -> Any:
        """The builder of every node's parts (once `config` and `environment_spec` are set)."""
        return self.builder_class(self.config, self.environment_spec, agent_networks,
                                  network_factory, self.run_dir, **self.builder_arguments())

    def exploration_settings(self) -> Dict[str, Any]:
        """How executors explore, as run.json and the configuration header record it (none
        here: see `ScheduledExploration`)."""
        return {}

    def executor_exploration(self, executor_id: int) -> Dict[str, Any]:
        """The exploration arguments of executor `executor_id`'s `builder.make_executor` (none
        here: see `ScheduledExploration`)."""
        del executor_id
        return {}

    def executor_log_values(self, executor: Any) -> Dict[str, Any]:
        """What each executor row logs besides its episode's statistics (nothing here)."""
        del executor
        return {}

    # Which implementation executors step.
    def steps_vectorised(self) -> bool:
        """Whether executors step a vectorised environment (see `config.vectorised`): checked
        here, before any process starts.

        Raises:
          ValueError: on a bad `vectorised` value; with `vectorised='true'`, if the environment
            has no vectorised implementation (naming those there are) or is not one of the
            registry's; if the vectorised environment's specs differ from the reference one's.
        """
        choice = vectorised_choice(self.config.vectorised)
        if choice is False or (choice is None and self.num_envs_per_executor == 1):
            return False
        factory = self._registry_factory()
        if factory is None:
            if choice:
                raise ValueError("vectorised=true needs an environment of the registry "
                                 f"(wrappers.make_environment_factory), got "
                                 f"{self._environment_factory!r}")
            return False
        from wrappers.vectorised import (  # pylint: disable=import-outside-toplevel
                                         vectorised_families, vectorised_implementation)
        try:
            make = vectorised_implementation(factory.name)
        except ValueError:  # Its family has vectorised environments, not this one.
            if choice:
                raise
            return False
        if make is None:
            if choice:
                listing = "; ".join(f"{family}: {', '.join(names)}"
                                    for family, names in vectorised_families().items())
                raise ValueError(f"vectorised=true: {factory.name!r} has no vectorised "
                                 f"implementation (there are {listing})")
            return False
        self.check_vectorised_specs(self.vectorised_environment(1))
        return True

    def _registry_factory(self) -> Optional[EnvironmentFactory]:
        """The registry's factory this system's environments come from (None: a user's)."""
        factory = self._environment_factory
        if isinstance(factory, WithAgentIDs):
            factory = factory.factory
        return factory if isinstance(factory, EnvironmentFactory) else None

    def vectorised_environment(self, num_envs: int) -> Any:
        """`num_envs` of this system's environments stepped together (a `BatchedEnvironment`),
        with agent IDs when the config asks."""
        from wrappers.vectorised import make_vectorised_environment  # pylint: disable=import-outside-toplevel
        from wrappers.vectorised.agent_ids import BatchedAgentIDs  # pylint: disable=import-outside-toplevel
        factory = self._registry_factory()
        environment = make_vectorised_environment(factory.name, num_envs, **factory.env_kwargs)
        return BatchedAgentIDs(environment) if self.config.agent_ids else environment

    def check_vectorised_specs(self, environment: Any) -> None:
        """Raises ValueError unless the vectorised `environment` has the reference environment's
        agents, observation and action shapes and extras (the networks are built for those)."""
        spec = self.environment_spec

        def shapes(tree_of_specs: Any) -> Any:
            return {key: getattr(value, "shape", None) if not isinstance(value, tuple)
                    else tuple(item.shape for item in value)
                    for key, value in tree_of_specs.items()}

        vectorised = (list(environment.agents), shapes(environment.observation_spec()),
                      {agent: action.num_values for agent, action in
                       environment.action_spec().items()},
                      shapes(environment.extras_spec()))
        reference = (spec.agents, shapes(spec.observations),
                     {agent: getattr(action, "num_values", None)
                      for agent, action in spec.actions.items()},
                     shapes(spec.extras))
        if vectorised != reference:
            raise ValueError(f"the vectorised {self._environment_factory.name!r} differs from the "
                             f"reference package's (agents, observation shapes, actions, extras: "
                             f"{vectorised} vs {reference}); run with vectorised=false")

    def environment_implementation(self) -> str:
        """Which implementation executors step, as the run's header names it."""
        if not self._vectorised:
            return "reference package"
        return (f"vectorised (wrappers.vectorised, {self.num_envs_per_executor} environments "
                f"per call)")

    # The run's description.
    def description(self) -> Dict[str, Any]:
        """The base description (see `DistributedSystem`), with the exploration settings."""
        return {**super().description(), **self.exploration_settings()}

    def run_config(self) -> Dict[str, Any]:
        """The launch settings, with the environment's name and arguments and the exploration
        settings."""
        settings = super().run_config()
        config = settings.pop("config")  # Listed last, after the environment.
        settings.update(
            environment=getattr(self._environment_factory, "name", None),
            environment_kwargs=getattr(self._environment_factory, "env_kwargs", None),
            environment_implementation=self.environment_implementation(),
            **self.exploration_settings(),
            config=config)
        return settings

    # The nodes, through the builder's interface.
    def replay(self) -> List[reverb.Table]:
        """The replay tables."""
        return self.replay_tables(self.builder.make_replay_tables())

    def trainer(self, replay: reverb.Client, counter: Any) -> Any:
        """The trainer: trains the networks and serves their variables."""
        with self.seeded_construction():
            networks = self.builder.make_networks()
            dataset, replay_client = self.trainer_inputs(replay)
            return self.lockstep_trainer(self.builder.make_trainer(
                networks,
                dataset,
                replay_client=replay_client,
                counter=counting.Counter(counter, prefix="trainer"),
                logger=self.trainer_logger()))

    def greedy_executor(self, variable_source: Any, seed: int) -> Tuple[Any, Any]:
        """The builder's evaluation executor following the source's variables, and its variable
        client."""
        with self.seeded_construction():
            networks = self.builder.make_networks()
        variable_client = self.builder.make_variable_client(variable_source, networks)
        executor = self.builder.make_evaluation_executor(
            networks, variable_client=variable_client, seed=seed)
        return executor, variable_client

    def executor(self, executor_id: int, replay: reverb.Client, variable_source: Any,
                 counter: Any) -> Any:
        """Executor `executor_id`: acts (exploring as `executor_exploration` says), writes to
        replay, follows the source's variables.

        With `config.num_envs_per_executor` N > 1 it steps N environments,
        acting for all of them in one policy call and writing each one's steps
        to its own adder (see `acting/multi_environment.py`); they are one
        vectorised environment when `steps_vectorised` (see
        `acting/vectorised_loop.py`), whose steps go to replay as one stream when
        `writes_batched` (see `data/batched_sequences.py`). A resumed
        executor continues its exploration from its own saved step count (per
        environment), with fresh random seeds.
        """
        with self.seeded_construction():
            networks = self.builder.make_networks()
        num_envs = self.num_envs_per_executor
        replay, variable_client = self.executor_replay_and_variables(
            executor_id, replay, variable_source,
            self.builder.make_variable_client(variable_source, networks), num_envs)
        # Start-up calls to other nodes: given up if the program stops first.
        call_unless_stopped(variable_client.update_and_wait, "first variables")
        executor_counter = ExecutorCounter(counter, executor_id,
                                           time_delta=self.executor_count_interval_s)
        start_step = call_unless_stopped(executor_counter.own_steps, "own steps", default=0)
        if self.lockstep:
            variable_client.start_step = start_step
        seeds = environment_seeds(self.config.seed, executor_id, num_envs, start_step,
                                  RESUME_SEED_STRIDE)
        exploration = self.executor_exploration(executor_id)
        label = f"executor_{executor_id}"
        logging.info("%s explores with %s from its step %d (%d environment%s)", label,
                     ", ".join(map(repr, exploration.values())) or "its policy", start_step,
                     num_envs, "s" if num_envs > 1 else "")
        if num_envs == 1 and not self._vectorised:
            executor = self.builder.make_executor(
                networks, adder=self.builder.make_adder(replay),
                variable_client=variable_client, seed=seeds[0], **exploration)
            executor.num_steps = start_step
            environment = self._environment_factory(evaluation=False, seed=seeds[0])
            return self.executor_loop(environment, executor, executor_counter, label,
                                      extra_log_fn=lambda: self.executor_log_values(executor))
        vectorised = self.vectorised_environment(num_envs) if self._vectorised else None
        unsplit = (self.batched_executor(networks, exploration, replay, variable_client, seeds,
                                         vectorised.agents) if vectorised is not None else None)
        executor = unsplit or self.multi_environment_executor(
            networks, exploration, replay, variable_client, seeds, batched=self.writes_batched)
        executor.num_steps = start_step // num_envs
        loop_options = dict(counter=executor_counter,
                            logger=self.node_logger(label, "executor_steps"),
                            extra_log_fn=lambda: self.executor_log_values(executor),
                            step_limit=self._max_executor_steps, steps_key=self.steps_key)
        if unsplit is not None:
            return UnsplitEnvironmentLoop(vectorised, unsplit, seeds, **loop_options)
        if vectorised is not None:
            return VectorisedEnvironmentLoop(vectorised, executor, seeds,
                                             **loop_options)
        environments = [self._environment_factory(evaluation=False, seed=seed) for seed in seeds]
        return MultiEnvironmentLoop(environments, executor, **loop_options)

    def batched_executor(self, networks: Any, exploration: Dict[str, Any], replay: Any,
                         variable_client: Any, seeds: Sequence[int], agents: Sequence[str]
                         ) -> Optional[Any]:
        """The executor of a vectorised environment (with `agents`) that never splits the batch
        (the builder's `make_batched_executor`, see `acting/unsplit_loop.py`), where executors
        step vectorised environments and the family has one; else None."""
        if not self._vectorised:
            return None
        return self.builder.make_batched_executor(networks, replay, variable_client, seeds,
                                                  agents, **exploration)

    def batched_evaluation_rounds(self, executor: Any, variable_client: Any, seed: int,
                                  episodes: int, counter: Any) -> Optional[BatchedEvaluationRounds]:
        """The evaluator's rounds of `episodes` greedy episodes at once on a vectorised
        environment (environment i from seed `seed + i`), acting with `executor`'s networks
        (those `variable_client` updates), where executors step vectorised environments and the
        family has a batched executor; else None."""
        if not self._vectorised:
            return None
        seeds = [(seed + index) % 2**31 for index in range(episodes)]
        environment = self.vectorised_environment(episodes)
        batched = self.builder.make_batched_executor(executor.networks, None, variable_client,
                                                     seeds, environment.agents, evaluation=True)
        if batched is None:
            return None
        return BatchedEvaluationRounds(environment, batched, seeds, counter)

    @property
    def writes_batched(self) -> bool:
        """Whether each executor writes its environments as one replay stream (the builder's
        `make_batched_adders`): when it steps them vectorised and the builder can."""
        return self._vectorised and self.builder.writes_batched

    @property
    def num_envs_per_executor(self) -> int:
        """Environments each executor node steps (`config.num_envs_per_executor`)."""
        return int(self.config.num_envs_per_executor)

    def multi_environment_executor(self, networks: Any, exploration: Dict[str, Any],
                                   replay: Any, variable_client: Any,
                                   seeds: Sequence[int],
                                   batched: bool = False) -> MultiEnvironmentExecutor:
        """An executor acting for one environment per seed: the actor follows the variables and
        draws each environment's random numbers from its seed; each environment's stream writes
        to its own adder (see `MultiEnvironmentExecutor`), or with `batched` (a vectorised
        environment's loop only) to its lane of one replay stream for all (the builder's
        `make_batched_adders`). The streams share the actor's variable
        client (only the actor fetches): NumPy twins a stream computes with (a recurrent critic's,
        stepped at every observation) re-read their weights when it copied new ones, as a
        separate executor's do."""
        actor = self.builder.make_executor(networks, variable_client=variable_client,
                                           seed=list(seeds), **exploration)
        adders = (self.builder.make_batched_adders(replay, len(seeds)) if batched
                  else [self.builder.make_adder(replay) for _ in seeds])
        streams = [self.builder.make_executor(networks, adder=adder,
                                              variable_client=variable_client, seed=seed,
                                              **exploration)
                   for adder, seed in zip(adders, seeds)]
        return MultiEnvironmentExecutor(actor, streams)


class ScheduledExploration:
    """For a system whose executors each explore by a schedule (`schedule(step) -> value`: MADQN's
    epsilon, MADDPG's noise scale): the `exploration_schedules` argument, its defaults, its
    record in run.json, and the schedule each executor's `builder.make_executor` gets as
    `exploration_schedule`.

    Listed first in a system's bases (`class MADQN(ScheduledExploration,
    MultiAgentSystem)`); the system's constructor calls
    `set_exploration_schedules` and implements `default_exploration_schedules`.
    Launchers read `explores_by_schedule` to offer the `--exploration` flag.
    """

    explores_by_schedule = True
    exploration_schedules: List[Callable[[int], float]]

    def set_exploration_schedules(self, schedules: Optional[Sequence[Callable[[int], float]]],
                                  num_executors: int) -> None:
        """Sets `exploration_schedules` to a copy of `schedules` (None: the defaults).

        Raises:
          ValueError: if there is not one schedule per executor.
        """
        if schedules is None:
            schedules = self.default_exploration_schedules(num_executors)
        elif len(schedules) != num_executors:
            raise ValueError(f"got {len(schedules)} exploration schedules for "
                             f"{num_executors} executors")
        self.exploration_schedules = list(schedules)

    def default_exploration_schedules(self, num_executors: int
                                      ) -> Sequence[Callable[[int], float]]:
        """One schedule per executor when none are given."""
        raise NotImplementedError

    def exploration_settings(self) -> Dict[str, Any]:
        """Every executor's exploration schedule, as run.json and the configuration header
        show them."""
        return {"exploration_schedules": [repr(schedule)
                                          for schedule in self.exploration_schedules]}

    def executor_exploration(self, executor_id: int) -> Dict[str, Any]:
        """Executor `executor_id`'s schedule, as `builder.make_executor`'s `exploration_schedule`."""
        return {"exploration_schedule": self.exploration_schedules[executor_id]}
