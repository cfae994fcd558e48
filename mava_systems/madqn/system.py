"""MADQN: multi-agent deep Q-networks as a distributed Launchpad program."""

import functools
from typing import Any, Dict, Optional, Sequence

from absl import logging
from acme.utils import counting

from mava_systems.components.counting import ExecutorCounter
from mava_systems.components.lifecycle import call_unless_stopped
from mava_systems.components.exploration import default_schedules
from mava_systems.components.multi_environment import (MultiEnvironmentExecutor,
                                                       MultiEnvironmentLoop, environment_seeds)
from mava_systems.madqn.builder import MADQNBuilder
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.execution import ExplorationSchedule
from mava_systems.madqn.networks import (QNetworkFactory, make_mlp_q_network,
                                         make_recurrent_q_network)
from mava_systems.specs import MAEnvironmentSpec, network_keys
from mava_systems.system import DistributedSystem
from wrappers.agent_ids import WithAgentIDs

# Resumed executors seed with their step count times this, so they do not replay old episodes.
RESUME_SEED_STRIDE = 1_000_003


class MADQN(DistributedSystem):
    """Independent double-Q learners for every agent, trained from one shared replay.

    Agents of one type share a Q-network by default (`config.shared_weights`).
    Each executor explores with its own epsilon schedule; the evaluator is greedy.
    """

    builder_class = MADQNBuilder
    system_name = "madqn"
    config_class = MADQNConfig
    # Whether executors follow `exploration_schedules` (recorded in run.json and the header);
    # MAPPO's sample their policies instead.
    explores_by_schedule = True

    def __init__(
        self,
        environment_factory: Any,
        network_factory: Optional[QNetworkFactory] = None,
        num_executors: int = 1,
        num_caches: int = 0,
        max_executor_steps: Optional[int] = None,
        config: Optional[MADQNConfig] = None,
        exploration_schedules: Optional[Sequence[ExplorationSchedule]] = None,
        run_dir: Optional[str] = None,
    ):
        """Validates everything and builds the networks once, before any process starts.

        Args:
          environment_factory: `factory(evaluation=False, seed=None)` returning a
            `wrappers.MultiAgentEnvironment` (see `wrappers.make_environment_factory`).
          network_factory: `factory(observation_spec, action_spec)` returning a
            Q-network; defaults to an MLP with `config.hidden_sizes`. With
            `config.recurrent`, an `snt.RNNCore` (e.g. an `snt.DeepRNN` holding a
            GRU); defaults to `RecurrentQNetwork` (input layers, GRU, Q head).
          num_executors: executor nodes (at least 1).
          num_caches: variable caches between trainer and executors (0: none).
          max_executor_steps: stop the program after this many executor steps.
          config: hyper-parameters (a `config_class`, e.g. `MADQNConfig`; None: its defaults).
          exploration_schedules: one `schedule(step) -> epsilon` per executor;
            by default constant epsilons spread log-uniformly as in Acme's DQN.
          run_dir: where logs and checkpoints go (default: `runs/<system_name>-<time>`).
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
        if exploration_schedules is None:
            exploration_schedules = self.default_exploration_schedules(num_executors)
        elif len(exploration_schedules) != num_executors:
            raise ValueError(f"got {len(exploration_schedules)} exploration schedules for "
                             f"{num_executors} executors")
        self.exploration_schedules = list(exploration_schedules)

        environment = environment_factory(evaluation=False, seed=self.config.seed)
        self.environment_spec = MAEnvironmentSpec.from_environment(environment)
        environment.close()
        self.builder = self.make_builder(
            network_keys(self.environment_spec.agents, self.config.shared_weights),
            network_factory or self.make_default_network_factory())
        networks = self.builder.make_networks()  # Fails here, not in a node, on a bad network.
        self._network_variables = {
            key: [list(variable.shape) for variable in network.variables]
            for key, network in networks.trained_modules().items()}

    def default_exploration_schedules(self, num_executors: int) -> Sequence[ExplorationSchedule]:
        """One schedule per executor when none are given: constant epsilons spread as in Acme's DQN."""
        return default_schedules(num_executors)

    def make_default_network_factory(self) -> QNetworkFactory:
        """The network factory when none is given: an MLP Q-network with `config.hidden_sizes`,
        or with `config.recurrent` the reference recurrent agent (`RecurrentQNetwork`: the
        `hidden_sizes` input layers, a GRU of `rnn_hidden_size` units, a Q head)."""
        if self.config.recurrent:
            return functools.partial(make_recurrent_q_network, input_sizes=self.config.hidden_sizes,
                                     gru_size=self.config.rnn_hidden_size)
        return functools.partial(make_mlp_q_network, hidden_sizes=self.config.hidden_sizes)

    def make_builder(self, agent_networks: Dict[str, str],
                     network_factory: QNetworkFactory) -> MADQNBuilder:
        """The builder of every node's parts (once `config` and `environment_spec` are set)."""
        return self.builder_class(self.config, self.environment_spec, agent_networks,
                                  network_factory, self.run_dir)

    def exploration_settings(self) -> Dict[str, Any]:
        """Every executor's exploration schedule, if it explores by one (see
        `explores_by_schedule`), as run.json and the configuration header show them."""
        if not self.explores_by_schedule:
            return {}
        return {"exploration_schedules": [repr(schedule)
                                          for schedule in self.exploration_schedules]}

    def description(self) -> Dict[str, Any]:
        """The base description (see `DistributedSystem`), with the exploration settings."""
        return {**super().description(), **self.exploration_settings()}

    def replay_item_description(self, table: Any) -> str:
        """What `table`'s items hold (see `DistributedSystem`); with recurrent agents, the repr of
        the builder's sequence signature: the table's own, read back from Reverb, lists the
        extras in no fixed order."""
        if self.builder.recurrent:
            return repr(self.builder.sequence_signature())
        return super().replay_item_description(table)

    def run_config(self) -> Dict[str, Any]:
        """The launch settings, with the environment's name and arguments and the exploration
        settings."""
        settings = super().run_config()
        config = settings.pop("config")  # Listed last, after the environment.
        settings.update(
            environment=getattr(self._environment_factory, "name", None),
            environment_kwargs=getattr(self._environment_factory, "env_kwargs", None),
            **self.exploration_settings(),
            config=config)
        return settings

    def replay(self):
        """The replay tables."""
        return self.builder.make_replay_tables()

    def trainer(self, replay, counter):
        """The trainer: trains the online networks and serves their variables."""
        networks = self.builder.make_networks()
        return self.builder.make_trainer(
            networks,
            self.builder.make_dataset_iterator(replay),
            replay_client=replay,
            counter=counting.Counter(counter, prefix="trainer"),
            logger=self.trainer_logger())

    def greedy_executor(self, variable_source, seed):
        """An executor with epsilon 0 following the source's variables, and its variable client."""
        networks = self.builder.make_networks()
        variable_client = self.builder.make_variable_client(variable_source, networks)
        executor = self.builder.make_evaluation_executor(
            networks, variable_client=variable_client, seed=seed)
        return executor, variable_client

    def executor(self, executor_id, replay, variable_source, counter):
        """Executor `executor_id`: explores, writes to replay, follows the source's variables.

        With `config.num_envs_per_executor` N > 1 it steps N environments,
        acting for all of them in one policy call and writing each one's steps
        to its own adder (see `components/multi_environment.py`). A resumed
        executor continues its exploration schedule from its own saved step
        count (per environment), with fresh random seeds.
        """
        networks = self.builder.make_networks()
        variable_client = self.builder.make_variable_client(variable_source, networks)
        # Start-up calls to other nodes: given up if the program stops first.
        call_unless_stopped(variable_client.update_and_wait, "first variables")
        executor_counter = ExecutorCounter(counter, executor_id,
                                           time_delta=self.executor_count_interval_s)
        start_step = call_unless_stopped(executor_counter.own_steps, "own steps", default=0)
        num_envs = self.num_envs_per_executor
        seeds = environment_seeds(self.config.seed, executor_id, num_envs, start_step,
                                  RESUME_SEED_STRIDE)
        schedule = self.exploration_schedules[executor_id]
        label = f"executor_{executor_id}"
        logging.info("%s explores with %r from its step %d (%d environment%s)", label, schedule,
                     start_step, num_envs, "s" if num_envs > 1 else "")
        if num_envs == 1:
            executor = self.builder.make_executor(
                networks, schedule, adder=self.builder.make_adder(replay),
                variable_client=variable_client, seed=seeds[0])
            executor.num_steps = start_step
            environment = self._environment_factory(evaluation=False, seed=seeds[0])
            return self.executor_loop(environment, executor, executor_counter, label,
                                      extra_log_fn=lambda: self.executor_log_values(executor))
        executor = self.multi_environment_executor(networks, schedule, replay, variable_client,
                                                   seeds)
        executor.num_steps = start_step // num_envs
        environments = [self._environment_factory(evaluation=False, seed=seed) for seed in seeds]
        return MultiEnvironmentLoop(
            environments, executor, counter=executor_counter,
            logger=self.node_logger(label, "executor_steps"),
            extra_log_fn=lambda: self.executor_log_values(executor),
            step_limit=self._max_executor_steps, steps_key=self.steps_key)

    @property
    def num_envs_per_executor(self) -> int:
        """Environments each executor node steps (`config.num_envs_per_executor`, else 1)."""
        return int(getattr(self.config, "num_envs_per_executor", 1))

    def multi_environment_executor(self, networks: Any, schedule: ExplorationSchedule,
                                   replay: Any, variable_client: Any,
                                   seeds: Sequence[int]) -> MultiEnvironmentExecutor:
        """An executor acting for one environment per seed: the actor follows the variables and
        draws each environment's random numbers from its seed; each environment's stream writes
        to its own adder (see `MultiEnvironmentExecutor`). The streams share the actor's variable
        client (only the actor fetches): NumPy twins a stream computes with (a recurrent critic's,
        stepped at every observation) re-read their weights when it copied new ones, as a
        separate executor's do."""
        actor = self.builder.make_executor(networks, schedule, variable_client=variable_client,
                                           seed=list(seeds))
        streams = [self.builder.make_executor(networks, schedule,
                                              adder=self.builder.make_adder(replay),
                                              variable_client=variable_client, seed=seed)
                   for seed in seeds]
        return MultiEnvironmentExecutor(actor, streams)

    def executor_log_values(self, executor: Any) -> Dict[str, Any]:
        """What each executor row logs besides its episode's statistics: its epsilon."""
        return {"epsilon": executor.epsilon}

