"""Runs a multi-agent environment with an executor, counting and logging each episode."""

import threading
import time
from typing import Any, Callable, Dict, Optional, Protocol, Sequence

from absl import logging
from acme.utils import counting, loggers, observers as observers_lib
import dm_env
import numpy as np

from mava_systems.components.counting import complete_counts
from mava_systems.components.lifecycle import ProgramStopping, program_stop_event, run_watched
from mava_systems.components.replay import close_this_threads_writers
from wrappers import MultiAgentEnvironment


class Executor(Protocol):
    """What the loop needs of an executor.

    An executor with a true `observes_extras` attribute also gets the
    environment's extras (`environment.get_extras()`, e.g. `{"env_state": s}`)
    after every reset and step, as a second argument of `observe_first` and a
    third of `observe`.
    """

    def select_actions(self, observations: Dict[str, Any]) -> Dict[str, Any]: ...
    def observe_first(self, timestep: dm_env.TimeStep) -> None: ...
    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None: ...
    def update(self, wait: bool = False) -> None: ...


# Episodes in a row whose environment may fail (be dropped and restarted) before a loop gives up.
MAX_FAILED_EPISODES = 3


class EnvironmentFailure(RuntimeError):
    """The environment's `reset` or `step` raised."""


def environment_name(environment: Any) -> str:
    """The wrapped PettingZoo/Gymnasium environment's name, else the environment's class name."""
    metadata = getattr(getattr(environment, "environment", None), "metadata", None) or {}
    return str(metadata.get("name") or type(environment).__name__)


def call_environment(environment: Any, method: str, *args: Any, label: str = "") -> dm_env.TimeStep:
    """`environment.<method>(*args)`; raises `EnvironmentFailure` (naming the environment, and
    `label` after its name) if it raises."""
    try:
        return getattr(environment, method)(*args)
    except Exception as error:  # pylint: disable=broad-except
        raise EnvironmentFailure(
            f"environment {environment_name(environment)}{label}: {method}() raised "
            f"{type(error).__name__}: {error}") from error


class EpisodeStatistics:
    """One episode's length, duration and per-agent returns and lengths, as loops log them.

    Returns add up in float64 (Python floats), as a NumPy float64 array would.
    """

    def __init__(self, first: dm_env.TimeStep):
        self._start = time.time()
        self._agents = list(first.observation)
        self._returns = [0.0] * len(self._agents)
        # Per agent, the steps it could act in (any legal action): all of them for agents
        # that stay in a parallel environment, its own turns in a turn-based one.
        self._lengths = [0] * len(self._agents)
        self.steps = 0

    def before_step(self, timestep: dm_env.TimeStep) -> None:
        """Notes which agents may act from `timestep` (the one actions are chosen from)."""
        observations, lengths = timestep.observation, self._lengths
        for index, agent in enumerate(self._agents):
            legal = observations[agent].legal_actions
            if legal.any() if isinstance(legal, np.ndarray) else np.any(legal):
                lengths[index] += 1

    def after_step(self, timestep: dm_env.TimeStep) -> None:
        """Adds the step that led to `timestep`."""
        rewards, returns = timestep.reward, self._returns
        for index, agent in enumerate(self._agents):
            returns[index] += float(rewards[agent])
        self.steps += 1

    def result(self, counts: Dict[str, Any]) -> Dict[str, Any]:
        """The episode's statistics row, with the program's `counts` after it."""
        elapsed = time.time() - self._start
        return {
            "episode_length": self.steps,
            "episode_return": float(np.sum(np.array(self._returns, np.float64))),
            "steps_per_second": self.steps / elapsed if elapsed > 0 else 0.0,
            **{f"episode_return/{agent}": value
               for agent, value in zip(self._agents, self._returns)},
            **{f"episode_length/{agent}": value
               for agent, value in zip(self._agents, self._lengths)},
            **complete_counts(counts),
        }


class CountedLoop:
    """What every environment loop shares: its counter, logger, stop event and step limit."""

    def __init__(
        self,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        extra_log_fn: Optional[Callable[[], Dict[str, Any]]] = None,
        stop_event: Optional[threading.Event] = None,
        step_limit: Optional[int] = None,
        steps_key: str = "executor_steps",
    ):
        self._counter = counter or counting.Counter()
        self._logger = logger or loggers.NoOpLogger()
        self._extra_log_fn = extra_log_fn
        self._stop_event = stop_event or program_stop_event()
        self._step_limit = step_limit
        self._steps_key = steps_key

    def _limit_reached(self, counts: Dict[str, Any]) -> bool:
        return self._step_limit is not None and counts.get(self._steps_key, 0) >= self._step_limit


class EnvironmentLoop(CountedLoop):
    """Plays episodes: the executor acts, observes and updates its variables every step.

    With a `step_limit`, the loop starts an episode only while the counter's
    `steps_key` count is below the limit. Its counter should sync with the
    central one at every increment (`time_delta=0`): then the count read at
    the end of each episode includes every episode any loop finished, so each
    loop starts at most one episode below the limit that ends above it, and a
    program stops within one episode per executor of its limit. Once the limit
    is reached the loop waits for the program to stop.

    When the environment's `reset` or `step` raises, `run` logs it with the
    environment's name, drops the episode (it is not counted; the executor's
    `abandon_episode`, if it has one, forgets its unwritten steps) and starts a
    new one; after `MAX_FAILED_EPISODES` failed episodes in a row it raises
    `EnvironmentFailure`, which stops the program with that error.

    `observers` (Acme's `EnvLoopObserver`s) see the environment after every
    reset and step (e.g. to render it); their `get_metrics()` join the episode's
    statistics.
    """

    def __init__(
        self,
        environment: MultiAgentEnvironment,
        executor: Executor,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        extra_log_fn: Optional[Callable[[], Dict[str, Any]]] = None,
        stop_event: Optional[threading.Event] = None,
        step_limit: Optional[int] = None,
        steps_key: str = "executor_steps",
        observers: Sequence[observers_lib.EnvLoopObserver] = (),
    ):
        super().__init__(counter, logger, extra_log_fn, stop_event, step_limit, steps_key)
        self._environment = environment
        self._executor = executor
        self._with_extras = bool(getattr(executor, "observes_extras", False))
        self._observers = tuple(observers)

    def _extras(self) -> tuple:
        """The environment's extras as further arguments of the executor's observe calls (if it
        wants them)."""
        return (self._environment.get_extras(),) if self._with_extras else ()

    def run_episode(self) -> Dict[str, Any]:
        """Plays one episode and returns its statistics (also logged).

        Raises:
          ProgramStopping: when the program stops during the episode.
        """
        timestep = self._call_environment("reset")
        self._executor.observe_first(timestep, *self._extras())
        for observer in self._observers:
            observer.observe_first(self._environment, timestep)
        episode = EpisodeStatistics(timestep)
        while not timestep.last():
            if self._stop_event.is_set():
                raise ProgramStopping()
            episode.before_step(timestep)
            actions = self._executor.select_actions(timestep.observation)
            timestep = self._call_environment("step", actions)
            self._executor.observe(actions, timestep, *self._extras())
            for observer in self._observers:
                observer.observe(self._environment, timestep, actions)
            self._executor.update()
            episode.after_step(timestep)
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        counts = self._counter.increment(episodes=1, steps=episode.steps)
        result = episode.result(counts)
        for observer in self._observers:
            result.update(observer.get_metrics())
        if self._extra_log_fn is not None:
            result.update(self._extra_log_fn())
        self._logger.write(result)
        return result

    def run(self, num_episodes: Optional[int] = None) -> None:
        """Plays episodes until `num_episodes` were played, the step limit is reached or the
        program stops; at the step limit it waits for the program to stop.

        A loop still blocked on a node that has gone long after the stop is given up."""
        run_watched(lambda: self._run(num_episodes), "environment loop")

    def _run(self, num_episodes: Optional[int]) -> None:
        played, failed = 0, 0
        try:
            counts = self._counter.get_counts() if self._step_limit is not None else {}
            while num_episodes is None or played < num_episodes:
                if self._limit_reached(counts):
                    logging.info("%s=%d reached the limit %d: no new episode; waiting for the "
                                 "program to stop", self._steps_key, counts[self._steps_key],
                                 self._step_limit)
                    self._stop_event.wait()
                    return
                try:
                    counts = self.run_episode()
                except EnvironmentFailure as failure:
                    failed += 1
                    self._abandon_episode()
                    if failed >= MAX_FAILED_EPISODES:
                        raise EnvironmentFailure(
                            f"{failure}; {failed} episodes in a row failed, stopping") from failure
                    logging.error("%s; the episode is dropped and a new one starts", failure,
                                  exc_info=failure.__cause__)
                    continue
                failed = 0
                played += 1
        except ProgramStopping:
            pass
        finally:
            if self._stop_event.is_set():
                close_this_threads_writers()

    def _call_environment(self, method: str, *args: Any) -> dm_env.TimeStep:
        return call_environment(self._environment, method, *args)

    def _abandon_episode(self) -> None:
        abandon = getattr(self._executor, "abandon_episode", None)
        if abandon is not None:
            abandon()
