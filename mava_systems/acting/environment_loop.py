"""Runs a multi-agent environment with an executor, counting and logging each episode."""

import threading
import time
from typing import Any, Callable, Dict, Optional, Protocol, Sequence, Tuple

from absl import logging
from acme.utils import counting, loggers, observers as observers_lib
import dm_env
import numpy as np

from mava_systems.acting.step_counting import StepCounting
from mava_systems.nodes.counting import complete_counts
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event, run_watched
from mava_systems.nodes.replay import close_this_threads_writers
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


class _LimitReached(Exception):
    """The counts a loop read during an episode are at or past its step limit."""

    def __init__(self, counts: Dict[str, Any]):
        super().__init__(counts)
        self.counts = counts


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
        self._end: Optional[float] = None
        self.steps = 0

    @classmethod
    def finished(cls, agents: Sequence[str], start: float, end: float, returns: Sequence[float],
                 lengths: Sequence[int], steps: int) -> "EpisodeStatistics":
        """The statistics of an episode another loop kept (per agent `returns` and `lengths`,
        in `agents`' order), ended at `end`."""
        episode = cls.__new__(cls)
        episode._start, episode._end = float(start), float(end)
        episode._agents = list(agents)
        episode._returns = [float(value) for value in returns]
        episode._lengths = [int(value) for value in lengths]
        episode.steps = int(steps)
        return episode

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

    def end(self) -> None:
        """Stops the episode's clock (else `result` reads it)."""
        self._end = time.time()

    def result(self, counts: Dict[str, Any]) -> Dict[str, Any]:
        """The episode's statistics row, with the program's `counts` after it."""
        elapsed = (self._end if self._end is not None else time.time()) - self._start
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


class EnvironmentLoop:
    """Plays episodes: the executor acts, observes and updates its variables every step.

    With a `step_limit`, the loop starts an episode only while the counter's
    `steps_key` count is below the limit. Its counter should sync with the
    central one at every increment (`time_delta=0`): then the count read at
    the end of each episode includes every episode any loop finished, so each
    loop starts at most one episode below the limit that ends above it, and a
    program stops within one episode per executor of its limit. Once the limit
    is reached the loop waits for the program to stop.

    In `run`, an episode's counts go to the counter without waiting for its
    reply: the next episode starts meanwhile, and the reply is read (and the
    finished episode's row logged) after that episode's first environment
    step, before the executor observes it. An episode the reply finds at or
    past the limit is dropped there, nothing of it counted or written (the
    executor's `abandon_episode`, if it has one, forgets it), so the stop is
    as exact as if the loop had waited; the wait for the counter overlaps the
    reset, the first action and the first step. Far from the limit the loop
    does not wait at all: while the last count it knows, with the steps it
    sent since, is below the limit by more than `HEADROOM_EPISODES` times the
    most steps the program counted between two of its replies, the episode
    goes on and the reply is read at the first step after it came (or at the
    episode's end). So a slow counter (a Ray actor call) holds no episode
    unless the program's rate jumps more than that within one episode; were
    the late reply then at the limit, the episode is dropped where it is
    (uncounted; its items already written stay in replay). Far from the limit
    (more than `GATHER_HORIZON_S` seconds of the program's mean rate away)
    the episodes finished within `count_interval_s` of the last count go in
    one increment; nearer each one is counted as it ends (see `step_counting`),
    so an increment that comes late (its loop held off its core) still holds
    one episode; the episodes not yet counted when the limit is reached are
    dropped as well.
    `run_episode` waits.

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
        self._stop_event = stop_event or program_stop_event()
        self.counting = StepCounting(counter, logger, self._stop_event, step_limit, steps_key)
        self._extra_log_fn = extra_log_fn
        self._environment = environment
        self._executor = executor
        self._with_extras = bool(getattr(executor, "observes_extras", False))
        self._observers = tuple(observers)

    def _extras(self) -> tuple:
        """The environment's extras as further arguments of the executor's observe calls (if it
        wants them)."""
        return (self._environment.get_extras(),) if self._with_extras else ()

    def run_episode(self) -> Dict[str, Any]:
        """Plays one episode and returns its statistics (also logged), waiting for the counter.

        Raises:
          ProgramStopping: when the program stops during the episode.
        """
        self.counting.flush()
        episode, extra = self._play_episode()
        return self.counting.count_now(episode, extra)

    def _play_episode(self) -> Tuple[EpisodeStatistics, Dict[str, Any]]:
        """Plays one episode: its statistics and the row values its end adds (the observers'
        metrics, `extra_log_fn`'s). Settles the previous episode's count after the first step.

        Raises:
          ProgramStopping: when the program stops during the episode.
          _LimitReached: when the previous episode's count reached the step limit.
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
            if self.counting.reply_came() or (episode.steps == 0
                                              and self.counting.reply_needed()):
                self._settle_within_limit()
            self._executor.observe(actions, timestep, *self._extras())
            for observer in self._observers:
                observer.observe(self._environment, timestep, actions)
            self._executor.update()
            episode.after_step(timestep)
        episode.end()
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter calls: the counter may be gone.
        if self.counting.awaiting_reply:  # The previous reply did not come during the episode.
            self._settle_within_limit()
        extra: Dict[str, Any] = {}
        for observer in self._observers:
            extra.update(observer.get_metrics())
        if self._extra_log_fn is not None:
            extra.update(self._extra_log_fn())
        return episode, extra

    def _settle_within_limit(self) -> None:
        """`counting.settle`; raises `_LimitReached` if the counts it read are at the step limit."""
        counts = self.counting.settle()
        if self.counting.limit_reached(counts):
            raise _LimitReached(counts)

    def run(self, num_episodes: Optional[int] = None) -> None:
        """Plays episodes until `num_episodes` were played, the step limit is reached or the
        program stops; at the step limit it waits for the program to stop.

        A loop still blocked on a node that has gone long after the stop is given up."""
        run_watched(lambda: self._run(num_episodes), "environment loop")

    def _run(self, num_episodes: Optional[int]) -> None:
        played, failed = 0, 0
        try:
            counts = self.counting.read_first_counts()
            while num_episodes is None or played < num_episodes:
                if self.counting.limit_reached(counts):
                    self.counting.wait_at_the_limit()
                    return
                try:
                    episode, extra = self._play_episode()
                except _LimitReached:
                    self._abandon_episode()
                    self.counting.wait_at_the_limit()
                    return
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
                self.counting.count(episode, extra)
            self.counting.flush()
        except ProgramStopping:
            pass
        finally:
            self.counting.close()
            if self._stop_event.is_set():
                close_this_threads_writers()

    def _call_environment(self, method: str, *args: Any) -> dm_env.TimeStep:
        return call_environment(self._environment, method, *args)

    def _abandon_episode(self) -> None:
        abandon = getattr(self._executor, "abandon_episode", None)
        if abandon is not None:
            abandon()
