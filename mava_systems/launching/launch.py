"""Launch helpers shared by the examples: common flags, config flags, launching, the run summary.

Importing it does not import TensorFlow (nor Reverb or Acme), and the configs import without
it (`mava_systems.lazy`). The examples name their system by its path: `ExampleMain.run` parses
and checks the flags, then imports the system before `app.run` calls the main (a system imported
inside the main made the trainer's first compiled step fail, see `ExampleMain.system_class`).
"""

import contextlib
import dataclasses
import datetime
import faulthandler
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
import typing
from typing import (Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Type, TypeVar,
                    Union)

from absl import app, flags, logging
import launchpad as lp  # (Without TensorFlow; it defines --lp_launch_type.)

from mava_systems import family_settings, ray_launch, registry
from mava_systems.launching import allocator, cpu_placement, node_processes
from mava_systems.launching.node_naming import named_nodes, node_names
from mava_systems.nodes.lifecycle import (NODE_FAILURES_FILE_ENV, NODE_NOTICE_ENV,
                                          StopsProgramIfBuildFails,
                                          exit_if_loops_were_abandoned)
from mava_systems.terminal import command_line, console
from mava_systems.config import parse_json_object
from mava_systems.acting import exploration
from mava_systems.runs.disk_space import disk_full_message
from mava_systems.terminal.log_watch import watching_log
from mava_systems.terminal.progress import read_snapshot, reporting_progress
import wrappers

FLAGS = flags.FLAGS
ConfigT = TypeVar("ConfigT")
# Seconds nodes get to stop before Launchpad kills them (its default, 10, is too short for the
# final checkpoints of a large replay, or for a slow trainer step on a busy machine).
TERMINATION_NOTICE_S = 60
# TensorFlow threads per op pool in every process of a program (0: TensorFlow's default, one
# per core). A program runs several nodes on the machine's cores; one thread each keeps them from
# contending (the trainer benchmark in docs/benchmarks.md compares both).
DEFAULT_TF_THREADS = 1
# Config defaults of every launched program that differ from the config's own (which suit a
# trainer stepped by hand, one trainer step per `step()`). A trainer node's memory grows a
# little per compiled call (in TensorFlow/Reverb, below our code): 4 steps per call keep a
# long run's trainer within 3 % an hour, against 9 % with 1 (docs/benchmarks.md, issue 17).
PROGRAM_CONFIG_DEFAULTS: Mapping[str, Any] = {"trainer_steps_per_call": 4}
# The exit status of a launch stopped before its step limit by Ctrl-C or a stop signal (as a
# shell reports a program ended by SIGINT); a run that reached its limit exits with 0.
STOPPED_EXIT_CODE = 130


def define_flags(default_env: str, default_max_executor_steps: int = 20_000,
                 executor_name: str = "executor", default_num_caches: Optional[int] = 0) -> None:
    """Defines the flags every example takes (`--lp_launch_type` comes from Launchpad).

    `executor_name` names the acting nodes in the node-count and step-limit flags:
    "executor" gives `--num_executors`/`--max_executor_steps`, "actor" (Acme's
    single-agent systems) `--num_actors`/`--max_actor_steps`. With
    `default_num_caches=None` there is no `--num_caches` (the system fixes it).
    """
    flags.DEFINE_string("env", default_env, "Environment name, e.g. mpe/simple_spread_v3.")
    flags.DEFINE_string("env_kwargs", "",
                        "The environment's keyword arguments as a JSON object, e.g. "
                        "'{\"continuous_actions\": true}' (default: none).")
    flags.DEFINE_multi_string("env_module", [],
                              "A module (or .py file) to import first, which registers --env with "
                              "wrappers.register_environment or register_family (repeatable).")
    flags.DEFINE_integer(f"num_{executor_name}s", 1, f"{executor_name.capitalize()} nodes.")
    if default_num_caches is not None:
        flags.DEFINE_integer("num_caches", default_num_caches,
                             f"Variable caches between trainer and {executor_name}s.")
    flags.DEFINE_integer(f"max_{executor_name}_steps", default_max_executor_steps,
                         f"Stop after this many {executor_name} environment steps (0: never).")
    flags.DEFINE_string("run_dir", None,
                        "Where logs and checkpoints go (default: runs/<system>-<time>). "
                        "An existing run there is continued.")
    flags.DEFINE_boolean("start_fresh", False,
                         "Start a new run even if --run_dir holds one (the old one is moved "
                         "to <run_dir>.old-<n>, not deleted).")
    flags.DEFINE_integer("tf_threads", DEFAULT_TF_THREADS,
                         "TensorFlow threads per op pool (intra- and inter-op) in every process "
                         "(0: TensorFlow's default, one per core).")
    flags.DEFINE_enum("allocator", allocator.DEFAULT_ALLOCATOR, allocator.ALLOCATORS,
                      "Memory allocator of the node processes the launcher starts (local_mp, "
                      "Ray on this machine): jemalloc (about a fifth less trainer CPU per step; "
                      "the library Ray's wheel ships), system (glibc's), or auto (jemalloc when "
                      "there is one). See mava_systems/launching/allocator.py.")
    flags.DEFINE_enum("cpu_placement", cpu_placement.DEFAULT_CPU_PLACEMENT,
                      cpu_placement.CPU_PLACEMENTS,
                      "Cores of the node processes the launcher starts (local_mp, a Ray it "
                      "starts): auto puts each executor on a core of its own when there are more "
                      "cores than executors, the other nodes on the rest (under Ray, more "
                      "executors run on every core, the other nodes on the lowest); none leaves "
                      "them to the kernel. See mava_systems/launching/cpu_placement.py.")
    flags.DEFINE_float("progress_interval_s", None,
                       "Seconds between progress lines (default: 1, updating one line, on a "
                       "terminal; 30 otherwise; 0: no progress lines).")
    flags.DEFINE_integer("max_node_restarts", node_processes.DEFAULT_MAX_RESTARTS,
                         "local_mp: times one executor, evaluator or cache node that dies is "
                         "started again before the run stops (a dead replay, trainer or counter "
                         "stops it at once).", lower_bound=0)
    flags.DEFINE_boolean("verbose", False,
                         "Show the libraries' output (TensorFlow, absl INFO lines of every node, "
                         "Launchpad, Reverb) on the terminal; by default it goes only to "
                         f"<run_dir>/{console.LOG_FILE}.")


def define_config_flags(config_class: Type[Any],
                        config_defaults: Optional[Mapping[str, Any]] = None) -> None:
    """Defines one flag per field of a config dataclass.

    A flag defaults to `config_defaults[field]` if given (an example's settings
    for its environment family), else to `PROGRAM_CONFIG_DEFAULTS[field]` (what
    every launched program uses), else to the field's default.
    """
    config_defaults = dict(config_defaults or {})
    fields = {field.name for field in dataclasses.fields(config_class)}
    unknown = set(config_defaults) - fields
    if unknown:
        raise ValueError(f"config_defaults names fields {config_class.__name__} does not have: "
                         f"{sorted(unknown)}")
    config_defaults = {**{name: value for name, value in PROGRAM_CONFIG_DEFAULTS.items()
                          if name in fields}, **config_defaults}
    for field in dataclasses.fields(config_class):
        help_text = field.metadata.get("doc") or f"{config_class.__name__}.{field.name}"
        default = config_defaults.get(field.name, field.default)
        field_type = typing.get_origin(field.type) or field.type
        if isinstance(default, bool):
            flags.DEFINE_boolean(field.name, default, help_text)
        elif isinstance(default, int) and field_type is not typing.Union:
            flags.DEFINE_integer(field.name, default, help_text)
        elif isinstance(default, float) and field_type is not typing.Union:
            flags.DEFINE_float(field.name, default, help_text)
        elif isinstance(default, tuple):
            flags.DEFINE_list(field.name, [str(value) for value in default], help_text)
        elif isinstance(default, str):
            flags.DEFINE_string(field.name, default, help_text)
        else:  # Optional numbers: "none" means None.
            flags.DEFINE_string(field.name, str(default), help_text + " ('none' for None)")


def config_from_flags(config_class: Type[ConfigT]) -> ConfigT:
    """Builds (and so validates) a config from the flags `define_config_flags` defined.

    Raises:
      ValueError: naming the flag and its value, if a size list or optional number flag does
        not hold one (absl names the flag of the others when it parses them).
    """
    values = {}
    for field in dataclasses.fields(config_class):
        value = getattr(FLAGS, field.name)
        if isinstance(field.default, tuple):
            value = _integers_flag(field.name, value)
        elif isinstance(value, str) and not isinstance(field.default, str):
            value = _optional_number_flag(field.name, value)
        values[field.name] = value
    return config_class(**values)


def _integers_flag(name: str, items: Sequence[str]) -> tuple:
    try:
        return tuple(int(item) for item in items)
    except ValueError:
        raise ValueError(f"--{name}={','.join(items)} is not a comma-separated list of integers "
                         "(e.g. 64,64)") from None


def _optional_number_flag(name: str, text: str) -> Optional[float]:
    if text.strip().lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--{name}={text} is not a number (or 'none')") from None


def environment_kwargs(env_name: str,
                       family_env_kwargs: Optional[Mapping[str, Mapping[str, Any]]] = None
                       ) -> Dict[str, Any]:
    """The constructor arguments of environment `env_name`: the example's defaults for its
    family (e.g. {"mpe": {"continuous_actions": True}}), updated by `--env_kwargs` (a JSON
    object; empty: none).

    Raises:
      ValueError: if the flag is not a JSON object.
    """
    kwargs = dict((family_env_kwargs or {}).get(env_name.partition("/")[0], {}))
    kwargs.update(parse_json_object(FLAGS.env_kwargs, "--env_kwargs"))
    return kwargs


def max_executor_steps_flag(executor_name: str = "executor") -> Optional[int]:
    """The step limit from `--max_<executor_name>_steps`, None for 0 (run until stopped)."""
    flag = f"max_{executor_name}_steps"
    value = getattr(FLAGS, flag)
    if value < 0:
        raise ValueError(f"--{flag} must be >= 0, got {value}")
    return value or None


def topology_from_flags(executor_name: str = "executor") -> dict:
    """The system keyword arguments set by `define_flags`: node counts, step limit, run dir."""
    topology = {f"num_{executor_name}s": getattr(FLAGS, f"num_{executor_name}s"),
                f"max_{executor_name}_steps": max_executor_steps_flag(executor_name),
                "run_dir": FLAGS.run_dir}
    if "num_caches" in FLAGS:
        topology["num_caches"] = FLAGS.num_caches
    return topology


def define_exploration_flag(executor_name: str = "executor", default: str = "") -> None:
    """Defines `--exploration`: one exploration schedule for every executor of a system that
    explores by schedule (epsilon; MADDPG's noise scale), instead of the system's default
    (`default`: the example's own schedule)."""
    flags.DEFINE_string(
        "exploration", default,
        f"The exploration schedule of every {executor_name}: {exploration.SCHEDULE_FORMATS} "
        f"(over each {executor_name}'s own steps); empty: the system's default schedules.")


def exploration_from_flags(num_executors: int) -> Dict[str, Any]:
    """The system keyword argument `--exploration` sets: `exploration_schedules` (the same
    schedule for each of `num_executors` executors), or nothing for the system's default.

    Raises:
      ValueError: naming the flag, for a schedule it cannot parse.
    """
    try:
        schedule = exploration.parse_schedule(FLAGS.exploration)
    except ValueError as error:
        raise ValueError(f"--exploration: {error}") from None
    if schedule is None:
        return {}
    return {"exploration_schedules": [schedule] * max(num_executors, 0)}


def show_in_help(names: Sequence[str]) -> None:
    """Lists flags `names` in `--help` (which shows the flags of the program's main module;
    these were defined here, on its behalf)."""
    for name in names:
        FLAGS.register_key_flag_for_module(sys.argv[0], FLAGS[name])


def example_main(system_class: Union[Type[Any], str], config_class: Type[Any], default_env: str,
                 executor_name: str = "executor", default_num_caches: Optional[int] = 0,
                 config_defaults: Optional[Mapping[str, Any]] = None,
                 family_env_kwargs: Optional[Mapping[str, Mapping[str, Any]]] = None,
                 default_exploration: str = "") -> "ExampleMain":
    """Defines the example flags and returns the main that builds and runs the system.

    The system is `system_class(environment_factory=..., config=..., num_executors=...,
    num_caches=..., max_executor_steps=..., run_dir=...)`, all taken from the flags
    (`num_actors` and `max_actor_steps` with `executor_name="actor"`; no
    `num_caches` with `default_num_caches=None`). The flags' defaults are the
    config's, with the settings `mava_systems.family_settings` documents for
    `default_env`'s family and this system (whatever `--env` names), then
    `config_defaults` (see `define_config_flags`), `family_env_kwargs` (constructor
    arguments of a family's environments, e.g. `{"mpe": {"continuous_actions": True}}`) and
    `default_exploration` (`--exploration`'s default, e.g. "linear:1,0.05,200000"; empty:
    the family's, else the system's own schedules). The run's header says where each
    value that is not the config's default came from.

    `system_class` may be named by its path ("mava_systems.qmix.system:QMIX"): its name and
    whether it explores by schedule are then read from its source, and `ExampleMain.run`
    imports it (and TensorFlow) only once the flags are parsed and checked, so that `--help`
    and bad input are answered at once.
    """
    if isinstance(system_class, str):
        system_name = registry.declared_attribute(system_class, "system_name")
        explores_by_schedule = registry.declared_attribute(system_class, "explores_by_schedule",
                                                           False)
    else:
        system_name = system_class.system_name
        explores_by_schedule = getattr(system_class, "explores_by_schedule", False)
    settings = family_settings.settings_for(
        default_env, system_name, [field.name for field in dataclasses.fields(config_class)])
    config_defaults = dict(config_defaults or {})
    own = {name: value for name, value in config_defaults.items()  # Not the family's too.
           if name not in settings.config or settings.config[name] != value}
    sources = {settings.source: {name: value for name, value in settings.config.items()
                                 if name not in own},
               "example setting": own}
    family_env_kwargs = {settings.family: settings.env_kwargs, **(family_env_kwargs or {})}
    defined_before = set(FLAGS)
    define_flags(default_env, executor_name=executor_name, default_num_caches=default_num_caches)
    define_config_flags(config_class, {**settings.config, **config_defaults})
    if explores_by_schedule:
        define_exploration_flag(executor_name, default_exploration or settings.exploration)
        if default_exploration or settings.exploration:
            source = "example setting" if default_exploration else settings.source
            sources[source]["exploration"] = default_exploration or settings.exploration
    show_in_help(sorted(set(FLAGS) - defined_before) + ["lp_launch_type"])
    return ExampleMain(system_class, config_class, executor_name, explores_by_schedule,
                       sources, settings, family_env_kwargs)


class ExampleMain:
    """An example's main (see `example_main`): `run()` parses and checks the flags, then
    imports the system and launches it; as an `app.run` main it does both once parsed."""

    def __init__(self, system_class: Union[Type[Any], str], config_class: Type[Any],
                 executor_name: str, explores_by_schedule: bool,
                 sources: Mapping[str, Mapping[str, Any]], settings: Any,
                 family_env_kwargs: Mapping[str, Mapping[str, Any]]):
        self._system_class = system_class
        self._config_class = config_class
        self._executor_name = executor_name
        self._explores_by_schedule = explores_by_schedule
        self._sources = sources
        self._settings = settings
        self._family_env_kwargs = family_env_kwargs
        self._inputs: Optional[Dict[str, Any]] = None

    def run(self, argv: Optional[Sequence[str]] = None) -> None:
        """Parses `argv` (default: `sys.argv`) and checks the flags, then imports the system
        (and TensorFlow), and launches it as `app.run` would."""
        arguments = command_line.parse_and_check(sys.argv if argv is None else argv,
                                                 self.check_flags)
        self.system_class()  # Imported here, not inside app.run's main: see _import_system.
        app.run(self, flags_parser=command_line.parsed(arguments))

    def check_flags(self) -> None:
        """Checks the parsed flags without importing the system: the environment id (after
        importing `--env_module`s), the config's values, the node counts and step limit, the
        exploration schedule and the allocator.

        Raises:
          ValueError: naming the flag and the problem.
        """
        settings, family_env_kwargs = self._settings, self._family_env_kwargs
        node_allocator = allocator.allocator_library(FLAGS.allocator)
        for module in FLAGS.env_module:
            wrappers.import_registration(module)
        topology = topology_from_flags(self._executor_name)
        if self._explores_by_schedule:
            topology.update(exploration_from_flags(topology[f"num_{self._executor_name}s"]))
        environment_factory = wrappers.make_environment_factory(
            FLAGS.env, **environment_kwargs(FLAGS.env, family_env_kwargs))
        config = config_from_flags(self._config_class)
        family_kwargs = family_env_kwargs.get(family_settings.family_of(FLAGS.env))
        run_sources = {**self._sources, settings.source: {
            **self._sources[settings.source], **({"env_kwargs": dict(family_kwargs)}
                                                 if family_kwargs else {})}}
        notes = header_notes(self._config_class, run_sources, topology, self._executor_name)
        self._inputs = {"allocator": node_allocator, "topology": topology, "config": config,
                        "environment_factory": environment_factory, "notes": notes}

    def system_class(self) -> Type[Any]:
        """The system class, imported (with TensorFlow) if it was named by its path.

        Raises:
          TypeError: if the imported class explores otherwise than its source said.
        """
        if isinstance(self._system_class, str):
            # A system imported inside app.run's main made the trainer's first compiled step
            # fail (an optimizer slot "out of scope", issue 44): `run` imports it before.
            loaded = registry.import_class(self._system_class)
            if getattr(loaded, "explores_by_schedule", False) != self._explores_by_schedule:
                raise TypeError(f"{self._system_class}.explores_by_schedule is not "
                                f"{self._explores_by_schedule} as its source says")
            self._system_class = loaded
        return self._system_class

    def __call__(self, argv: Sequence[str]) -> None:
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
        if isinstance(self._system_class, str):
            raise RuntimeError("an example naming its system by path is launched with its "
                               "main's run(), not app.run(main)")
        console.quiet_terminal()
        try:
            if self._inputs is None:
                self.check_flags()
            inputs = self._inputs
            configure_tensorflow_threads(FLAGS.tf_threads)
            system = self._system_class(environment_factory=inputs["environment_factory"],
                                        config=inputs["config"], **inputs["topology"])
            status = prepare(system)
        except ValueError as error:  # Bad input: say what is wrong, without a stack trace.
            console.fail(f"error: {error}")
        if not already_finished(system, status):
            with allocator.preloading(inputs["allocator"]):
                launch_and_wait(system, steps_at_start=status_steps(system, status),
                                notes=inputs["notes"])


def header_notes(config_class: Type[Any], sources: Mapping[str, Mapping[str, Any]],
                 topology: Mapping[str, Any], executor_name: str = "executor") -> List[str]:
    """The lines an example's run header adds: where its settings came from (`sources`: the
    values each source gave flags as defaults; the command line overrides them, but merges
    with `env_kwargs`), and whether its exploration schedule outlasts its step limit."""
    fields = [field.name for field in dataclasses.fields(config_class)]
    named = [name for name in fields + ["exploration", "env_kwargs"] if name in FLAGS]
    command_line = {name: FLAGS[name].value for name in named if FLAGS[name].present}
    program = {name: value for name, value in PROGRAM_CONFIG_DEFAULTS.items() if name in fields}
    by_source = {source: {name: value for name, value in values.items()
                          if name == "env_kwargs" or name not in command_line}
                 for source, values in {"program default": program, **sources}.items()}
    by_source["command line"] = command_line
    notes = [family_settings.describe_sources(config_class.__name__, by_source)]
    schedules = topology.get("exploration_schedules")
    if schedules:
        note = exploration.unfinished_schedule_note(
            schedules[0], topology.get(f"max_{executor_name}_steps"),
            topology.get(f"num_{executor_name}s", 1))
        if note:
            notes.append(note)
    return notes


def configure_tensorflow_threads(threads: int = DEFAULT_TF_THREADS) -> None:
    """Gives TensorFlow `threads` intra-op and inter-op threads in this process and its children.

    Call it before building a system: TensorFlow fixes its pools at its first
    operation (a warning says so if that has happened). Child processes
    (`local_mp` nodes) read the same setting from the environment. 0 keeps
    TensorFlow's default (one thread per core).
    """
    if threads < 0:
        raise ValueError(f"tf_threads must be 0 or more, got {threads}")
    if threads == 0:
        return
    os.environ["TF_NUM_INTRAOP_THREADS"] = os.environ["TF_NUM_INTEROP_THREADS"] = str(threads)
    import tensorflow as tf  # pylint: disable=import-outside-toplevel  (see the module's doc)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        logging.warning("TensorFlow is already running in this process: its thread pools keep "
                        "their size (only child processes get %d threads)", threads)


class NodeFailure(RuntimeError):
    """The program stopped because one of its nodes failed (the message says which, and how)."""


@contextlib.contextmanager
def recording_node_failures() -> Iterator[List[str]]:
    """Collects, in the list it yields (filled at exit), what nodes that stopped the program
    because they failed reported (see `lifecycle.stop_program_after_failure`): node processes
    inherit the file's name from the environment."""
    handle, path = tempfile.mkstemp(prefix="mava_systems_node_failures_", suffix=".txt")
    os.close(handle)
    failures: List[str] = []
    try:
        with node_processes.environment_variable(NODE_FAILURES_FILE_ENV, path):
            yield failures
    finally:
        with open(path) as failures_file:
            failures.extend(line.strip() for line in failures_file if line.strip())
        os.remove(path)


class StopSignalsHeld:
    """Within it, Ctrl-C (SIGINT) and SIGTERM are held (recorded in `held`) instead of
    interrupting this process: `deliver()` raises the first one again once the program's
    launcher handles them.

    A stop that comes while a program is built and launched (before Launchpad's
    handlers are installed) would otherwise raise KeyboardInterrupt in the middle
    of it. Holds nothing outside the main thread, where handlers cannot be installed.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.held: List[int] = []
        self._previous: Dict[int, Any] = {}

    def _hold(self, signal_number: int, frame: Any) -> None:
        del frame
        # Once Launchpad's dispatcher has replaced this handler, it calls it too (as the one
        # it replaced) beside its own, which handle the signal: not held then.
        if signal.getsignal(signal_number) == self._hold:
            self.held.append(signal_number)

    def __enter__(self) -> "StopSignalsHeld":
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._hold)
                              for number in self.SIGNALS}
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for number, previous in self._previous.items():
            # Launchpad's first launch in a process installs its own dispatcher over this
            # handler (and calls it too); left as it is. Otherwise the previous one is back.
            if signal.getsignal(number) == self._hold:
                signal.signal(number, previous)

    def deliver(self) -> None:
        """Raises the first held signal again (to whatever handles it now)."""
        if self.held:
            signal.raise_signal(self.held[0])


def launch(program: Union[lp.Program, Callable[[], lp.Program]], launch_type: str,
           run_dir: Optional[str] = None) -> None:
    """Launches `program` (or the program a function builds) and blocks until every node has
    finished.

    Nodes get `TERMINATION_NOTICE_S` after the stop to finish (unless
    `--lp_termination_notice_secs` says otherwise) before Launchpad kills them.
    A Ctrl-C or SIGTERM while the program is built ends the launch before it starts
    (nothing ran, so nothing is lost); one while it is launched stops it as it would
    stop it running (see `StopSignalsHeld`; not under Ray, whose launcher handles its own).
    `launch_type="ray"` runs it on Ray (see `mava_systems.ray_launch`; the
    `--ray_*` flags), recording where its nodes ran in `run_dir`.
    Under `local_mp` a node that dies is restarted or stops the program (see
    `mava_systems.launching.node_processes`; `--max_node_restarts`); the third Ctrl-C kills the nodes.
    A program stopped because another process took a port a node that others call was given
    is launched again once, on new ports.

    Raises:
      NodeFailure: if the program stopped because a node failed or died (once every node has
        ended), or its nodes were killed by the user.
    """
    build = program if callable(program) else lambda: program
    with recording_node_failures() as failures:
        supervisor = _launch(build, launch_type, run_dir)
    if supervisor is not None and supervisor.ports_taken and not supervisor.stopped_by_user:
        # The program stopped and saved: launched again (as its resume command would) on
        # ports picked afresh, once.
        supervisor.release_signals()
        node_processes.tell_user("Launching again on new ports (once), resuming from the "
                                 "checkpoints just saved.")
        with recording_node_failures() as failures:
            supervisor = _launch(build, launch_type, run_dir)
    if supervisor is not None:
        # A node that died comes first: the failures other nodes reported may follow from it.
        failures[:0] = supervisor.ports_taken + supervisor.failures
        if not failures:
            failures.extend(supervisor.exit_failures)
        if supervisor.killed_by_user:
            failures.append("the nodes were killed by a third Ctrl-C before they had stopped")
    if failures:
        raise NodeFailure("; ".join(failures))


def max_node_restarts() -> int:
    """`--max_node_restarts` if defined (see `define_flags`), else the default."""
    if "max_node_restarts" in FLAGS:
        return FLAGS.max_node_restarts
    return node_processes.DEFAULT_MAX_RESTARTS


def _launch(build: Callable[[], lp.Program], launch_type: str,
            run_dir: Optional[str]) -> Optional[node_processes.NodeSupervisor]:
    if "lp_termination_notice_secs" in FLAGS and not FLAGS["lp_termination_notice_secs"].present:
        FLAGS.lp_termination_notice_secs = TERMINATION_NOTICE_S
    notice_s = FLAGS["lp_termination_notice_secs"].value  # (Readable unparsed, too.)
    if launch_type == ray_launch.LAUNCH_TYPE:
        ray_launch.launch(build(), ray_launch.config_from_flags(notice_s), record_dir=run_dir,
                          cpu_placement_mode=cpu_placement_mode())
        return None
    with contextlib.ExitStack() as placement_reserved:
        with StopSignalsHeld() as signals:
            program = build()
            if signals.held:
                console.say([f"Stopped by {signal.Signals(signals.held[0]).name} while the "
                             "program was being built: nothing was launched"])
                return None
            kwargs: dict = {}
            if launch_type in ("local_mp", "test_mp"):
                kwargs["terminal"] = "current_terminal"
                stop_program_if_a_node_fails_to_build(program)
            # Node processes take the launcher's notice from the environment (see
            # `lifecycle.take_the_launchers_notice`).
            with node_processes.environment_variable(NODE_NOTICE_ENV, str(notice_s)):
                if launch_type == "local_mp":
                    placement = placement_reserved.enter_context(cpu_placement.placing(
                        node_names(program), cpu_placement_mode()))
                    if placement:
                        console.say([f"CPU placement: {placement.describe()}"])
                    worker_manager = node_processes.launch(program, max_node_restarts(),
                                                           placement)
                else:
                    worker_manager = lp.launch(program, launch_type=launch_type, **kwargs)
                    if launch_type == "local_mt":
                        node_processes.PatientCtrlC(worker_manager)
        signals.deliver()
        if worker_manager is not None:
            worker_manager.wait()
    return worker_manager if isinstance(worker_manager, node_processes.NodeSupervisor) else None


def cpu_placement_mode() -> str:
    """`--cpu_placement` if defined (see `define_flags`), else "none" (a program launched
    without the example flags runs where the kernel puts it)."""
    if "cpu_placement" in FLAGS:
        return FLAGS.cpu_placement
    return "none"


def stop_program_if_a_node_fails_to_build(program: lp.Program) -> None:
    """Makes each Courier node of `program` stop the program if its constructor raises.

    For launches with a process per node (`local_mp`): Launchpad cannot read
    such a process's exit status, so a node that failed to build (e.g. a
    trainer whose checkpoint cannot be read) would leave the others waiting on
    it forever. Threads (`local_mt`) and Ray see their nodes fail by themselves.
    """
    for name, _, node in named_nodes(program):
        # pylint: disable=protected-access
        if isinstance(node, lp.CourierNode) and not isinstance(
                node._constructor, StopsProgramIfBuildFails):
            node._constructor = StopsProgramIfBuildFails(node._constructor, name)


def prepare(system: Any, start_fresh: Optional[bool] = None) -> Any:
    """Checks and prepares the run directory, and says whether the run starts fresh or resumes.

    Raises:
      ValueError: if the run directory holds a run this system cannot continue,
        or checkpoints that cannot be read.
    """
    if start_fresh is None:
        start_fresh = FLAGS.start_fresh
    status, changed = system.prepare_run_dir(start_fresh)
    lines = [status.summary(system.run_dir)]
    if changed:
        lines.append(f"Changed since the last launch: {', '.join(changed)}")
    console.say(lines)
    return status


def already_finished(system: Any, status: Any) -> bool:
    """True, having said so, when the run's saved counts already reach its step limit.

    Nothing is launched then: a program whose coordinator would stop it at
    once gains nothing, and the saved run stays as it is.
    """
    if not status.reached_limit(system.max_executor_steps):
        return False
    console.say([f"The run in {system.run_dir} ({int(status.counts['executor_steps'])} executor "
                 f"steps) already reached {system.step_limit_name}={system.max_executor_steps}; "
                 "raise it to continue."])
    return True


def status_steps(system: Any, status: Any) -> int:
    """The executor steps a run's saved counter holds (0 for a fresh run)."""
    return int(status.counts.get(system.steps_key, 0))


def launch_and_wait(system: Any, launch_type: Optional[str] = None,
                    progress_interval_s: Optional[float] = None,
                    steps_at_start: Optional[int] = None, notes: Sequence[str] = ()) -> None:
    """Builds and launches a prepared `system` and waits for it, then prints the run's summary.

    When the terminal is quiet (`console.quiet_terminal`), the libraries' output
    goes to `<run_dir>/output.log` from here on and the terminal shows the header,
    the progress line, warnings that need attention and the summary (see
    `mava_systems.terminal.run_summary`). The progress line is kept up to date (see
    `mava_systems.terminal.progress`) every `progress_interval_s` seconds (default:
    `--progress_interval_s` if defined, else 1 on a terminal and 30 otherwise; 0: none).
    `steps_at_start` is the step count the run resumes from (default: the newest in its logs).
    `notes` are lines the header adds to the configuration (indented as its lines are), after
    which it says what a `--deterministic` run launched so does not repeat (if anything).
    If a node failed and stopped the program, the summary and the error are printed, and the
    process exits with status 1 (`SystemExit`); if the program was stopped (Ctrl-C, SIGTERM)
    before the run's step limit, the summary says "Stopped" and the process exits with
    `STOPPED_EXIT_CODE`.
    """
    # pylint: disable=import-outside-toplevel  (TensorFlow: see the module's doc)
    from mava_systems.terminal import run_summary
    from mava_systems.runs.run_directory import CONFIG_FILE, format_run_config
    from mava_systems.runs import determinism
    launch_type = launch_type or FLAGS.lp_launch_type
    notes = [*notes, *system.launch_notes(),
             *determinism.launch_notes(system.config, system.num_executors, launch_type)]
    log_file = console.attach_run_dir(
        system.run_dir, f"==== {datetime.datetime.now():%Y-%m-%d %H:%M:%S} {shlex.join(sys.argv)}\n")
    # `kill -USR2 <pid>` prints every thread's stack: the way to see what a stuck node waits on.
    faulthandler.register(signal.SIGUSR2, file=console.terminal_errors(), all_threads=True)
    console.say([f"Run directory: {system.run_dir} (launch type {launch_type})",
                 f"Configuration (saved in {os.path.join(system.run_dir, CONFIG_FILE)}):\n"
                 f"{format_run_config(system.run_config())}", *(f"  {note}" for note in notes)])
    if progress_interval_s is None and "progress_interval_s" in FLAGS:
        progress_interval_s = FLAGS.progress_interval_s
    if steps_at_start is None:
        snapshot = read_snapshot(system.run_dir)
        steps_at_start = snapshot.executor_steps if snapshot else 0
    start = time.monotonic()
    failure: Optional[NodeFailure] = None
    with watching_log(log_file, console.launch_offset(), console.report_error), \
            reporting_progress(system.run_dir, system.max_executor_steps, progress_interval_s,
                               stream=console.terminal()):
        try:
            launch(system.build, launch_type, system.run_dir)
        except NodeFailure as error:  # Everything was saved: summarise, then exit with it.
            failure = error
    summary = run_summary.summarize(system, steps_at_start, time.monotonic() - start, sys.argv,
                                    log_file, None if failure is None else str(failure))
    console.say([summary])
    if failure is not None:
        disk_full = disk_full_message(str(failure))
        resume = summary.rpartition("Resume:")[2].strip().splitlines()[:1]
        console.report_error(f"error: {disk_full}" if disk_full else
                             f"error: the run stopped because a node failed: {failure}"
                             + (f"; resume with: {resume[0]}" if resume else ""))
    exit_code = 0 if failure is None else 1
    if failure is None and not run_summary.reached_limit(
            system, run_summary.steps_at_end(system, steps_at_start)):
        exit_code = STOPPED_EXIT_CODE  # Stopped by the user: not a run to count as done.
    exit_if_loops_were_abandoned(exit_code)  # local_mt: a node loop given up at the stop.
    if exit_code:
        sys.exit(exit_code)


def run(system: Any, launch_type: Optional[str] = None, start_fresh: Optional[bool] = None,
        progress_interval_s: Optional[float] = None,
        node_allocator: str = allocator.DEFAULT_ALLOCATOR) -> None:
    """Prepares the run directory of `system`, then launches it and waits for it to finish
    (unless the run already reached its step limit).

    The terminal is quiet (see `console.quiet_terminal`) unless the command line asks otherwise.
    `node_allocator` is the node processes' allocator, as `--allocator`.
    """
    library = allocator.allocator_library(node_allocator)
    console.quiet_terminal()
    status = prepare(system, start_fresh)
    if not already_finished(system, status):
        with allocator.preloading(library):
            launch_and_wait(system, launch_type, progress_interval_s, status_steps(system, status))
