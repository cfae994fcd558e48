"""Runs a multi-agent environment with an executor, counting and logging each episode."""

import collections
from concurrent import futures
import queue
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Protocol, Sequence, Tuple

from absl import logging
from acme.utils import counting, loggers, observers as observers_lib
import dm_env
import numpy as np

from mava_systems.nodes.counting import complete_counts
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event, run_watched
from mava_systems.nodes.replay import close_this_threads_writers
from mava_systems.nodes.step_evaluation import wait_at_gate
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

# A loop starts an episode before its previous count's reply has come only while the last count
# it knows is further below the step limit than this many times the most steps the program
# counted between two of its replies (of the last `RATE_WINDOW`).
HEADROOM_EPISODES = 4
RATE_WINDOW = 8
# Far from the step limit, the episodes a loop finishes within this many seconds of its last
# count go to the counter in one increment (a call to another node costs about a millisecond of
# CPU on Ray, and short episodes end tens of times a second), as long as they hold fewer than
# `BATCH_GROWTH` times the most steps the program counted between two of the loop's replies: so
# the steps other loops hold back stay within the headroom each loop keeps for them, and
# increments grow only as fast as the rate the loops see.
COUNT_INTERVAL_S = 0.2
BATCH_GROWTH = 2
# A loop gathers episodes into one increment only while the step limit is further from the last
# count it knows (with its steps not known to be counted) than this many seconds of the program's
# mean rate since the loop's first count. Gathered episodes are counted late: a
# loop held off its core meanwhile (a thread without the GIL, a process without a core) would
# otherwise count them after the other loops had reached the limit, past one episode each.
GATHER_HORIZON_S = 10.0
# A loop waiting for a reply checks the program's stop event this often.
REPLY_WAIT_SLICE_S = 0.5


class EnvironmentFailure(RuntimeError):
    """The environment's `reset` or `step` raised."""


class _LimitReached(Exception):
    """The counts a loop read during an episode are at or past its step limit."""

    def __init__(self, counts: Dict[str, Any]):
        super().__init__(counts)
        self.counts = counts


class BackgroundCalls:
    """Runs functions one after another in a daemon thread; `submit` returns each one's future.

    A daemon thread, unlike `concurrent.futures`' workers (joined at exit), never
    holds a process's exit on a call to a node that has gone.
    """

    def __init__(self, name: str):
        self._calls: "queue.SimpleQueue[Optional[Tuple[futures.Future, Callable[[], Any]]]]" = (
            queue.SimpleQueue())
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, function: Callable[[], Any]) -> futures.Future:
        """Queues `function`; its future gets its result or its exception."""
        future: futures.Future = futures.Future()
        self._calls.put((future, function))
        return future

    def close(self) -> None:
        """Ends the thread once the calls already queued have run."""
        self._calls.put(None)

    def _serve(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            future, function = call
            try:
                future.set_result(function())
            except BaseException as error:  # pylint: disable=broad-except
                future.set_exception(error)


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


class _Finished(NamedTuple):
    """A finished episode not yet logged."""

    episode: EpisodeStatistics
    extra: Dict[str, Any]  # The values its row adds to the statistics and counts.


class _SentCount(NamedTuple):
    """Finished episodes whose counts went to the counter in one increment, its reply not read
    yet."""

    reply: futures.Future
    finished: List[_Finished]
    sent_at: float  # time.monotonic() when it was sent.


class _KnownCount(NamedTuple):
    """A `steps_key` count a loop read, and about when the counter had it."""

    steps: int
    at: float  # time.monotonic() when the call that returned it was made.


class CountedLoop:
    """What every environment loop shares: its counter, logger, stop event and step limit, and
    counting finished episodes without waiting for the counter.

    `_count` takes a finished episode; the episodes not yet counted go to the
    counter in one increment, from a background thread, once `count_interval_s`
    has passed since the last one (or at once when the step limit may be near:
    within the headroom below, or within `GATHER_HORIZON_S` seconds of the
    program's mean rate since the loop's first count).
    `_settle` reads the replies in order, logging each episode's row with the
    counts after it (an increment's earlier episodes get its counts less its
    later episodes'). `_limit_within_reach` says when a loop must count every
    episode as it ends and, with `_reply_needed`, read the replies before
    starting an episode: always without a known rate (the first two counts),
    else once the step limit is within `HEADROOM_EPISODES` times the most steps
    the program counted between two replies of the last counts known (with the
    loop's steps not known to be counted).
    """

    # A class attribute, so that a loop (or a test) may count every episode at once (0).
    count_interval_s = COUNT_INTERVAL_S

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
        self._episodes_key = steps_key[:-len("steps")] + "episodes"
        self._counts: Dict[str, Any] = {}  # The last counts read.
        self._count_sender: Optional[BackgroundCalls] = None
        self._unsent: List[_Finished] = []
        self._last_sent_at = -float("inf")  # time.monotonic() of the last increment sent.
        self._sent: "collections.deque[_SentCount]" = collections.deque()
        # The `steps_key` counts of the last replies read (and of the first `get_counts`).
        self._known_totals: "collections.deque[_KnownCount]" = collections.deque(
            maxlen=RATE_WINDOW + 1)
        self._first_known: Optional[_KnownCount] = None  # The first of them.

    def _limit_reached(self, counts: Dict[str, Any]) -> bool:
        return self._step_limit is not None and counts.get(self._steps_key, 0) >= self._step_limit

    def _read_first_counts(self) -> Dict[str, Any]:
        """The counter's counts when a run starts (with a step limit; else {})."""
        if self._step_limit is not None:
            asked_at = time.monotonic()
            self._note_counts(self._counter.get_counts(), asked_at)
        return self._counts

    def _note_counts(self, counts: Dict[str, Any], asked_at: float) -> None:
        """Keeps `counts`, the reply of a call made at `asked_at` (time.monotonic())."""
        self._counts = counts
        self._known_totals.append(_KnownCount(counts.get(self._steps_key, 0), asked_at))
        if self._first_known is None:
            self._first_known = self._known_totals[-1]

    def _count(self, episode: EpisodeStatistics, extra: Dict[str, Any],
               max_unanswered: int = 1) -> None:
        """Takes a finished episode: sends the counts of those not yet sent when they are due,
        once fewer than `max_unanswered` increments await their replies."""
        self._unsent.append(_Finished(episode, extra))
        if self._send_due():
            self._settle(keep=max_unanswered - 1)
            self._send_unsent()

    def _send_due(self) -> bool:
        """Whether the episodes not yet sent should be counted now."""
        if time.monotonic() - self._last_sent_at >= self.count_interval_s:
            return True
        if self._step_limit is None:
            return False
        most = self._most_between_replies()
        return (most is None or self._limit_within_reach()
                or self._limit_within_gather_horizon()
                or sum(one.episode.steps for one in self._unsent) >= BATCH_GROWTH * most)

    def _send_unsent(self) -> None:
        """Sends the counts of the episodes not yet sent, in one increment; its reply is read
        (and their rows logged) by `_settle`."""
        if not self._unsent:
            return
        if self._count_sender is None:
            self._count_sender = BackgroundCalls("episode counts")
        finished, self._unsent = self._unsent, []
        episodes, steps = len(finished), sum(one.episode.steps for one in finished)
        reply = self._count_sender.submit(lambda: self._increment_at_gate(episodes, steps))
        self._last_sent_at = time.monotonic()
        self._sent.append(_SentCount(reply, finished, self._last_sent_at))

    def _increment_at_gate(self, episodes: int, steps: int) -> Dict[str, Any]:
        """Counts `episodes` and `steps`; the reply comes once the evaluation gate (evaluation by
        executor steps, see `nodes/step_evaluation.py`) is open, so this loop's next
        increment waits for the evaluator's snapshot at a due step."""
        counts = self._counter.increment(episodes=episodes, steps=steps)
        wait_at_gate(counts, self._counter.get_counts, self._stop_event,
                     passed=self._limit_reached)
        return counts

    def _settle(self, wait: bool = True, keep: int = 0) -> Optional[Dict[str, Any]]:
        """Reads the replies of the episodes sent, in order, until `keep` are left unread
        (without `wait`, only those that came), logging each one's row: the last counts read,
        None if none was.

        Raises:
          ProgramStopping: when the program stops while it waits (the counter may be gone).
        """
        counts = None
        while len(self._sent) > keep and (wait or self._sent[0].reply.done()):
            counts = self._reply(self._sent[0].reply)
            sent = self._sent.popleft()
            self._note_counts(counts, sent.sent_at)
            later_steps = sum(one.episode.steps for one in sent.finished)
            for position, one in enumerate(sent.finished):
                later_steps -= one.episode.steps
                later_episodes = len(sent.finished) - 1 - position
                self._log(one.episode, one.extra, counts if not later_episodes else {
                    **counts, self._steps_key: counts.get(self._steps_key, 0) - later_steps,
                    self._episodes_key: counts.get(self._episodes_key, 0) - later_episodes})
        return counts

    def _flush(self) -> Optional[Dict[str, Any]]:
        """Sends the counts not yet sent and `_settle`s every reply."""
        self._send_unsent()
        return self._settle()

    def _reply(self, reply: futures.Future) -> Dict[str, Any]:
        while True:
            try:
                return reply.result(timeout=REPLY_WAIT_SLICE_S)
            except futures.TimeoutError:
                if self._stop_event.is_set():
                    raise ProgramStopping() from None

    def _reply_needed(self) -> bool:
        """Whether a new episode may start only once the replies sent are read: the step limit
        may be within reach of the program's steps since the last count this loop knows."""
        return bool(self._sent) and self._limit_within_reach()

    def _limit_within_reach(self) -> bool:
        """Whether the step limit may be within reach of the program's steps since the last
        count this loop knows (no rate known yet counts as within reach)."""
        if self._step_limit is None:
            return False
        most = self._most_between_replies()
        if most is None:
            return True  # No rate known yet.
        return self._projected_count(HEADROOM_EPISODES * most) >= self._step_limit

    def _limit_within_gather_horizon(self) -> bool:
        """Whether the step limit may be less than `GATHER_HORIZON_S` seconds of the program's
        mean rate (`_mean_rate`) beyond the last count this loop knows, with its steps not known
        to be counted (no rate known counts as within)."""
        if self._step_limit is None:
            return False
        rate = self._mean_rate()
        if rate is None:
            return True
        return self._projected_count(GATHER_HORIZON_S * rate) >= self._step_limit

    def _projected_count(self, margin: float) -> float:
        """The last count this loop knows, with its steps not known to be counted, plus
        `margin`."""
        uncounted = (sum(one.episode.steps for sent in self._sent for one in sent.finished)
                     + sum(one.episode.steps for one in self._unsent))
        return self._known_totals[-1].steps + uncounted + margin

    def _most_between_replies(self) -> Optional[int]:
        """The most steps the program counted between two replies this loop read (of the last
        `RATE_WINDOW`); None before two counts are known."""
        totals = list(self._known_totals)
        if len(totals) < 2:
            return None
        return max(later.steps - earlier.steps for earlier, later in zip(totals, totals[1:]))

    def _mean_rate(self) -> Optional[float]:
        """The steps a second the program counted from the first count this loop read to the
        last (timed by when their calls were made); None before two counts are known.

        A mean over the whole run rather than the fastest between two replies: the counts of
        several environments of one loop ending at one step go microseconds apart."""
        first, last = self._first_known, self._known_totals[-1] if self._known_totals else None
        if first is None or last is None or last.at <= first.at:
            return None
        return (last.steps - first.steps) / (last.at - first.at)

    def _log(self, episode: EpisodeStatistics, extra: Dict[str, Any],
             counts: Dict[str, Any]) -> Dict[str, Any]:
        """Writes a finished episode's row (its statistics, `extra`, the counts after it)."""
        result = episode.result(counts)
        result.update(extra)
        self._logger.write(result)
        return result

    def _close_count_sender(self) -> None:
        """Sends the counts not yet sent (unless the step limit was reached: see
        `EnvironmentLoop`) and ends the background thread once they have gone."""
        if not self._limit_reached(self._counts):
            self._send_unsent()
        if self._count_sender is not None:
            self._count_sender.close()
            self._count_sender = None


class EnvironmentLoop(CountedLoop):
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
    one increment; nearer each one is counted as it ends (see `CountedLoop`),
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
        """Plays one episode and returns its statistics (also logged), waiting for the counter.

        Raises:
          ProgramStopping: when the program stops during the episode.
        """
        self._flush()
        episode, extra = self._play_episode()
        asked_at = time.monotonic()
        counts = self._counter.increment(episodes=1, steps=episode.steps)
        self._note_counts(counts, asked_at)
        return self._log(episode, extra, counts)

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
            if self._sent and (self._sent[0].reply.done()
                               or (episode.steps == 0 and self._reply_needed())):
                self._settle_within_limit()
            self._executor.observe(actions, timestep, *self._extras())
            for observer in self._observers:
                observer.observe(self._environment, timestep, actions)
            self._executor.update()
            episode.after_step(timestep)
        episode.end()
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter calls: the counter may be gone.
        if self._sent:  # The previous reply did not come during the episode.
            self._settle_within_limit()
        extra: Dict[str, Any] = {}
        for observer in self._observers:
            extra.update(observer.get_metrics())
        if self._extra_log_fn is not None:
            extra.update(self._extra_log_fn())
        return episode, extra

    def _settle_within_limit(self) -> None:
        """`_settle`; raises `_LimitReached` if the counts it read are at the step limit."""
        counts = self._settle()
        if self._limit_reached(counts):
            raise _LimitReached(counts)

    def run(self, num_episodes: Optional[int] = None) -> None:
        """Plays episodes until `num_episodes` were played, the step limit is reached or the
        program stops; at the step limit it waits for the program to stop.

        A loop still blocked on a node that has gone long after the stop is given up."""
        run_watched(lambda: self._run(num_episodes), "environment loop")

    def _run(self, num_episodes: Optional[int]) -> None:
        played, failed = 0, 0
        try:
            counts = self._read_first_counts()
            while num_episodes is None or played < num_episodes:
                if self._limit_reached(counts):
                    self._wait_at_the_limit(counts)
                    return
                try:
                    episode, extra = self._play_episode()
                except _LimitReached as reached:
                    self._abandon_episode()
                    self._wait_at_the_limit(reached.counts)
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
                self._count(episode, extra)
            self._flush()
        except ProgramStopping:
            pass
        finally:
            self._close_count_sender()
            if self._stop_event.is_set():
                close_this_threads_writers()

    def _wait_at_the_limit(self, counts: Dict[str, Any]) -> None:
        logging.info("%s=%d reached the limit %d: no new episode; waiting for the program to "
                     "stop", self._steps_key, counts[self._steps_key], self._step_limit)
        self._stop_event.wait()

    def _call_environment(self, method: str, *args: Any) -> dm_env.TimeStep:
        return call_environment(self._environment, method, *args)

    def _abandon_episode(self) -> None:
        abandon = getattr(self._executor, "abandon_episode", None)
        if abandon is not None:
            abandon()
