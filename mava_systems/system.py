"""The distributed system: node constructors plus the seed's Launchpad topology.

Subclasses supply `replay`, `trainer`, `greedy_executor` and `executor`: every
multi-agent family through `mava_systems.multiagent.MultiAgentSystem` (which
makes them with the family's builder), the single-agent systems through
`mava_systems.single_agent.SingleAgentSystem`. This class
supplies the counter, the coordinator and `build()`, which wires them as in the
seed's MADQN/DQN/DMPO programs: replay, counter, coordinator (only with a step
limit), trainer, evaluator, optional caches, and executors that read their
variables round-robin from the caches (or from the trainer when there are none).
"""

import dataclasses
import datetime
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
from acme.utils import counting
import launchpad as lp
import reverb

from mava_systems import recording, registry
from mava_systems.config import recorded_before_value
from mava_systems.nodes.cacher import CacherNode
from mava_systems.nodes.coordinator import StepLimiter
from mava_systems.nodes.counting import CheckpointedCounter
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.nodes.lockstep import (InsertionTracker, LockstepBatches,
                                         LockstepVariableClient, PrioritiesToBatches,
                                         queue_tables)
from mava_systems.nodes.evaluator_node import EVALUATOR_SEED_OFFSET, make_evaluator
from mava_systems.runs.logging import TensorBoardLogger, make_logger
from mava_systems.runs.replay_checkpointing import ReplayNode
from mava_systems.runs import determinism
from mava_systems.runs.disk_space import check_free_space
from mava_systems.runs.run_directory import (RunStatus, check_description,
                                             check_logs_have_checkpoints, check_writable,
                                             drop_partial_log_rows, hold, move_aside,
                                             read_status, release, roll_back_logs,
                                             save_description, save_run_config)


def default_run_dir(name: str, root: str = "runs") -> str:
    """A fresh timestamped run directory path, e.g. runs/madqn-20261129-211500."""
    return os.path.join(root, f"{name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")


def check_count(name: str, value: Any, minimum: int) -> int:
    """`value`, checked to be an integer >= `minimum`; raises ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class DistributedSystem:
    """Base of every system: holds the counts and run directory, builds the program.

    A subclass that sets its own `system_name` registers itself under that name
    (see `mava_systems.registry`), with `config_class` its config dataclass.
    """

    system_name = ""
    config_class: Any = None

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("system_name"):
            registry.register(cls)

    executors_group = "executor"
    trainer_group = "trainer"
    # Acme's DQN and DMPO put the coordinator in the counter's group.
    coordinator_group = "coordinator"
    steps_key = "executor_steps"
    # Set by subclasses: the hyper-parameter dataclass (e.g. `MADQNConfig`), the
    # environment factory and spec, and {network: [variable shape, ...]}.
    config: Any = None
    _environment_factory: Any = None
    environment_spec: Any = None
    _network_variables: Dict[str, Any] = {}

    def __init__(self, num_executors: int, num_caches: int,
                 max_executor_steps: Optional[int], run_dir: Optional[str],
                 checkpoint_interval_s: float, max_checkpoints_to_keep: int, name: str):
        self._num_executors = check_count("num_executors", num_executors, 1)
        self._num_caches = check_count("num_caches", num_caches, 0)
        if max_executor_steps is not None:
            check_count("max_executor_steps", max_executor_steps, 1)
        self._max_executor_steps = max_executor_steps
        self.run_dir = os.path.abspath(run_dir or default_run_dir(name))
        # Refused now, not when evaluate or a resume cannot find it.
        self._recorded_location = registry.recorded_location(type(self))
        self._checkpoint_interval_s = checkpoint_interval_s
        self._max_checkpoints_to_keep = max_checkpoints_to_keep
        self._name = name

    @property
    def num_executors(self) -> int:
        """How many executor nodes the program has."""
        return self._num_executors

    @property
    def max_executor_steps(self) -> Optional[int]:
        """The executor step count at which the program stops (None: never)."""
        return self._max_executor_steps

    # Entries of `description()` a resumed run must share with the saved one.
    identity_keys = ["system", "environment", "agents", "network_variables", "replay_items"]

    @property
    def step_limit_name(self) -> str:
        """The name of the step limit's flag and argument: max_executor_steps (max_actor_steps)."""
        return f"max_{self.executors_group}_steps"

    @property
    def environment_factory(self) -> Any:
        """The factory every node makes its environment with (set by subclasses)."""
        return self._environment_factory

    def description(self) -> Dict[str, Any]:
        """What this run is: saved as `<run_dir>/run.json` and compared on every launch.

        The topology; once a subclass has set them, the environment, its agents,
        the networks' variable shapes and the replay tables' item signatures;
        and every config field.
        """
        description = {"system": self._name,
                       **self._recorded_location,
                       "num_executors": self._num_executors,
                       "num_caches": self._num_caches,
                       "max_executor_steps": self._max_executor_steps}
        if self._environment_factory is not None:
            description.update({
                "environment": repr(self._environment_factory),
                "environment_name": getattr(self._environment_factory, "name", None),
                "environment_kwargs": getattr(self._environment_factory, "env_kwargs", None),
                # The module registering a user's environment, imported again by `evaluate`.
                "environment_registration": getattr(self._environment_factory, "registration", None),
                "agents": self.environment_spec.agents,
                "network_variables": self._network_variables,
                # What replay stores: a saved replay of another layout cannot be resumed.
                "replay_items": {table.name: self.replay_item_description(table)
                                 for table in self.replay()},
            })
        if dataclasses.is_dataclass(self.config):
            description.update({f"config.{key}": value
                                for key, value in dataclasses.asdict(self.config).items()})
        return description

    def recorded_before(self) -> Dict[str, Any]:
        """The description's config entries added since some runs were saved, with the value
        those runs had (the config fields marked with `config.recorded_before`)."""
        if not dataclasses.is_dataclass(self.config):
            return {}
        return {f"config.{field.name}": json.loads(json.dumps(recorded_before_value(field)))
                for field in dataclasses.fields(self.config)
                if "recorded_before" in field.metadata}

    def replay_item_description(self, table: reverb.Table) -> str:
        """What `table`'s items hold, as recorded in run.json: the repr of its signature."""
        return repr(table.info.signature)

    def launch_notes(self) -> List[str]:
        """Lines the run header adds about this configuration before launch (none here; a
        system says, e.g., where its settings make training behave unlike what a user
        might expect)."""
        return []

    def run_config(self) -> Dict[str, Any]:
        """The settings of this launch: saved as `<run_dir>/config.json` and printed at start."""
        settings: Dict[str, Any] = {
            "system": self._name, "run_dir": self.run_dir, "num_executors": self._num_executors,
            "num_caches": self._num_caches, "max_executor_steps": self._max_executor_steps}
        if dataclasses.is_dataclass(self.config):
            settings["config"] = dataclasses.asdict(self.config)
        return settings

    def prepare_run_dir(self, start_fresh: bool = False) -> Tuple[RunStatus, List[str]]:
        """Checks the run directory can hold this run, saves run.json and config.json, and reads where it stands.

        With `start_fresh`, an existing run in the directory is first moved
        aside to `<run_dir>.old-<n>` (never deleted). Returns the run's status
        (fresh, or resumed with its counts) and the description entries that
        changed since the last launch.

        Raises:
          ValueError: if the directory is a file, cannot be written, is in use by
            another running program, holds a run this configuration cannot continue, or
            holds logs without the counter checkpoint to continue them (see
            `check_logs_have_checkpoints`); or if evaluation videos are asked for and the
            environment draws no images. Logs ahead of the restored counts are cut back to
            them (see `roll_back_logs`).
        """
        if getattr(self.config, "evaluation_video_every_rounds", 0):
            recording.check_renders(self.environment_factory, recording.RGB)
        check_writable(self.run_dir)
        hold(self.run_dir)  # Before anything changes: refused if another program writes here.
        if start_fresh:
            release(self.run_dir)
            moved_to = move_aside(self.run_dir)
            if moved_to:
                logging.warning("Moved the previous run in %s to %s", self.run_dir, moved_to)
            check_writable(self.run_dir)
            hold(self.run_dir)
        description = self.description()
        changed = check_description(self.run_dir, description, self.identity_keys,
                                    self.recorded_before())
        status = read_status(self.run_dir)
        check_logs_have_checkpoints(self.run_dir, status)  # Refused before anything is written.
        check_free_space(self.run_dir)
        save_description(self.run_dir, description)
        save_run_config(self.run_dir, self.run_config())
        for path in drop_partial_log_rows(self.run_dir):
            logging.warning("Dropped the unfinished last row of %s (the run was killed)", path)
        if status.resumed:
            status.rolled_back_rows = roll_back_logs(self.run_dir, status)
        return status, changed

    # Nodes every system shares.
    def counter(self) -> CheckpointedCounter:
        """The central counter node's object (keeping the evaluation schedule by steps, if the
        config evaluates by steps)."""
        by_steps = self.evaluates_by_steps
        return CheckpointedCounter(
            self.run_dir, self._checkpoint_interval_s, self._max_checkpoints_to_keep,
            evaluate_every_steps=self.config.evaluation_every_steps if by_steps else None,
            max_pending_evaluations=getattr(self.config, "evaluation_max_pending", 0),
            steps_key=self.steps_key)

    @property
    def evaluates_by_steps(self) -> bool:
        """Whether the evaluator evaluates at multiples of `config.evaluation_every_steps`."""
        return bool(getattr(self.config, "evaluates_by_steps", False))

    def coordinator(self, counter: Any, evaluator: Any = None, trainer: Any = None
                    ) -> StepLimiter:
        """Stops the program once `max_executor_steps` executor steps were counted, after
        stopping the trainer's steps and the evaluator's final round."""
        return StepLimiter(counter, self._max_executor_steps, steps_key=self.steps_key,
                           evaluator=evaluator, trainer=trainer)

    def executor_loop(self, environment: Any, executor: Any, counter: Any, label: str,
                      extra_log_fn: Optional[Any] = None) -> EnvironmentLoop:
        """Executor node `label`'s loop, which starts no episode once the step limit is counted."""
        return EnvironmentLoop(environment, executor, counter,
                               self.node_logger(label, "executor_steps"),
                               extra_log_fn=extra_log_fn, step_limit=self._max_executor_steps,
                               steps_key=self.steps_key)

    @property
    def executor_count_interval_s(self) -> float:
        """Seconds between an executor's syncs with the central counter.

        With a step limit, every increment the loop makes is sent at once (the
        loop itself gathers the episodes of `count_interval_s` far from the
        limit and counts each one near it): that is what lets executors stop
        within one episode each of the limit (see `EnvironmentLoop`); without
        one, once a second, as Acme's counters do; with evaluation by steps, at
        every increment as well (the evaluation gate is read from the replies).
        """
        return 0.0 if self._max_executor_steps or self.evaluates_by_steps else 1.0

    def node_logger(self, label: str, steps_key: str, time_delta: float = 0.0) -> Any:
        """Node `label`'s logger (see `make_logger`): rows stepped by `steps_key`."""
        return make_logger(self.run_dir, label, self.config.terminal_log_interval_s, steps_key,
                           time_delta=time_delta)

    def trainer_logger(self) -> Any:
        """The trainer's logger: one row per `config.trainer_log_interval_s` at most."""
        return self.node_logger("trainer", "trainer_steps",
                                time_delta=self.config.trainer_log_interval_s)

    # Nodes each system supplies.
    def replay(self) -> List[reverb.Table]:
        """The replay tables."""
        raise NotImplementedError

    def replay_node(self) -> lp.ReverbNode:
        """The replay server node: tables from `replay()`, checkpointed with the run."""
        return ReplayNode(self.replay, self.run_dir)

    def trainer(self, replay: reverb.Client, counter: Any) -> Any:
        """The trainer node's object (a variable source)."""
        raise NotImplementedError

    def evaluator(self, variable_source: Any, counter: Any) -> Any:
        """The evaluator node's object: rounds of greedy episodes (see `greedy_executor`), each
        on the same evaluation seeds; by steps (see `step_evaluation.StepEvaluator`) with the
        source's variables of every multiple of `evaluation_every_steps`, else every
        `evaluation_interval_s` with its latest variables; logged against the executor steps."""
        return make_evaluator(self, variable_source, counter)

    def evaluation_videos(self, executor: Any) -> Optional[recording.EvaluationVideos]:
        """The evaluator's recordings of `executor`'s greedy episodes (None unless
        `config.evaluation_video_every_rounds`), in TensorBoard's run `evaluator_videos`."""
        every_rounds = getattr(self.config, "evaluation_video_every_rounds", 0)
        if not every_rounds:
            return None
        images = TensorBoardLogger(os.path.join(self.run_dir, "tensorboard", "evaluator_videos"),
                                   "evaluator")
        return recording.EvaluationVideos(
            self.run_dir,
            # Its own counter: recorded episodes are not counted as the program's.
            lambda environment, recorder: EnvironmentLoop(
                environment, executor, counting.Counter(), observers=[recorder]),
            self.environment_factory, self.config.seed + EVALUATOR_SEED_OFFSET, every_rounds,
            lambda gif, height, width, step: images.write_image("episode", gif, height, width,
                                                                step))

    def greedy_executor(self, variable_source: Any, seed: int) -> Tuple[Any, Any]:
        """An executor acting greedily (no exploration) with the source's variables, and the
        variable client it follows (`update_and_wait()` fetches them): what the evaluator
        node and `python -m mava_systems.evaluate` act with."""
        raise NotImplementedError

    def executor(self, executor_id: int, replay: reverb.Client, variable_source: Any,
                 counter: Any) -> Any:
        """The object of executor node `executor_id`."""
        raise NotImplementedError

    # A deterministic run's lockstep mode (`config.deterministic`, see nodes/lockstep.py).
    @property
    def lockstep(self) -> bool:
        """Whether training and acting run in lockstep (`config.deterministic`)."""
        return bool(getattr(self.config, "deterministic", False))

    def replay_tables(self, tables: List[reverb.Table]) -> List[reverb.Table]:
        """The builder's `tables`, as queues read in order in lockstep."""
        return queue_tables(tables) if self.lockstep else tables

    def trainer_inputs(self, replay: reverb.Client) -> Tuple[Any, Any]:
        """The trainer's batches (the builder's dataset iterator) and replay client (new
        priorities go to its lockstep batches' buffer)."""
        dataset = self.builder.make_dataset_iterator(replay)
        if isinstance(dataset, LockstepBatches):
            return dataset, PrioritiesToBatches(replay, dataset)
        return dataset, replay

    @property
    def evaluates_served_variables(self) -> bool:
        """Whether the evaluator's round at step m plays the variables the one executor acted
        with after its step m (in lockstep, evaluating by steps, with one executor)."""
        return self.lockstep and self.evaluates_by_steps and self._num_executors == 1

    def lockstep_trainer(self, trainer: Any) -> Any:
        """`trainer`, keeping the variables it serves for the evaluator in lockstep (see
        `evaluates_served_variables`)."""
        if self.lockstep:
            trainer.keep_served_variables(self.config.evaluation_every_steps
                                          if self.evaluates_served_variables else None)
        return trainer

    def executor_replay_and_variables(self, executor_id: int, replay: Any, variable_source: Any,
                                      variable_client: Any, steps_per_update: int = 1
                                      ) -> Tuple[Any, Any]:
        """Executor `executor_id`'s replay client and variable client: in lockstep, counting
        its items and fetching the trainer's variables they allow (`LockstepVariableClient`)."""
        if not self.lockstep:
            return replay, variable_client
        tracker = InsertionTracker(replay)
        return tracker, LockstepVariableClient(variable_client, variable_source, tracker,
                                               executor_id, steps_per_update)

    def seeded_construction(self) -> Any:
        """A context in which a node builds its networks (and the trainer its optimiser): from
        the seed alone with `config.deterministic` (see `runs.determinism`), else as usual."""
        return determinism.seeded_construction(self.config.seed,
                                               getattr(self.config, "deterministic", False))

    def build(self, name: Optional[str] = None) -> lp.Program:
        """The Launchpad program of this system."""
        program = lp.Program(name=name or self._name)
        with program.group("replay"):
            replay = program.add_node(self.replay_node())
        with program.group("counter"):
            counter = program.add_node(lp.CourierNode(self.counter))
        trainer_node = lp.CourierNode(self.trainer, replay, counter)
        evaluator_node = lp.CourierNode(self.evaluator, trainer_node.create_handle(), counter)
        if self._max_executor_steps:
            # Added before the nodes it calls, in the seed's order; their handles exist already.
            with program.group(self.coordinator_group):
                program.add_node(lp.CourierNode(self.coordinator, counter,
                                                evaluator_node.create_handle(),
                                                trainer_node.create_handle()))
        with program.group(self.trainer_group):
            trainer = program.add_node(trainer_node)
        with program.group("evaluator"):
            program.add_node(evaluator_node)
        sources = self._variable_sources(program, trainer)
        with program.group(self.executors_group):
            for executor_id in range(self._num_executors):
                source = sources[executor_id % len(sources)]
                program.add_node(
                    lp.CourierNode(self.executor, executor_id, replay, source, counter))
        return program

    def _variable_sources(self, program: lp.Program, trainer: Any) -> Sequence[Any]:
        if not self._num_caches or self.lockstep:  # Lockstep fetches go to the trainer.
            return [trainer]
        with program.group("cacher"):
            return [program.add_node(CacherNode(trainer)) for _ in range(self._num_caches)]
