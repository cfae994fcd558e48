"""The step-count protocol of environment loops: finished episodes counted without waiting for
the counter, and stops exactly at a step limit.

A loop hands each finished episode to its `StepCounting`. Far from the step limit the
episodes of `count_interval_s` go to the counter in one increment, from a background
thread; nearer, each one as it ends. The replies are read in order (`settle`) and each
episode's row is logged with the counts after it (an increment's earlier episodes get its
counts less its later episodes'). `reply_needed` tells a loop when the limit may be within
reach of the program's steps since the last count it knows, so that it must read the
replies before starting an episode: always without a known rate (the first two counts),
else once the limit is within `HEADROOM_EPISODES` times the most steps the program counted
between two replies of the last `RATE_WINDOW` (with the loop's own uncounted steps added).
"""

import collections
from concurrent import futures
import queue
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Protocol, Tuple

from absl import logging
from acme.utils import counting, loggers

from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event
from mava_systems.nodes.step_evaluation import wait_at_gate

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


class FinishedEpisode(Protocol):
    """What counting needs of an episode (`environment_loop.EpisodeStatistics` is one)."""

    steps: int

    def result(self, counts: Dict[str, Any]) -> Dict[str, Any]: ...


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

    def wait_at_the_limit(self) -> None:
        """Says the step limit was reached and waits for the program to stop."""
        logging.info("%s=%d reached the limit %d: no new episode; waiting for the program to "
                     "stop", self.steps_key, self.counts.get(self.steps_key, 0), self.step_limit)
        self._stop_event.wait()

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


class _Finished(NamedTuple):
    """A finished episode not yet logged."""

    episode: FinishedEpisode
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


class StepCounting:
    """One loop's side of the step-count protocol (see the module docstring): its counter,
    logger, stop event and step limit, the increments it sent and the counts it read."""

    # A class attribute, so that a loop (or a test) may count every episode at once (0).
    count_interval_s = COUNT_INTERVAL_S

    def __init__(
        self,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        stop_event: Optional[threading.Event] = None,
        step_limit: Optional[int] = None,
        steps_key: str = "executor_steps",
        on_row: Optional[Callable[[Dict[str, Any]], None]] = None,
    ):
        """`on_row`, if given, gets every row after it is logged."""
        self._counter = counter or counting.Counter()
        self._logger = logger or loggers.NoOpLogger()
        self._on_row = on_row
        self._stop_event = stop_event or program_stop_event()
        self.step_limit = step_limit
        self.steps_key = steps_key
        self._episodes_key = steps_key[:-len("steps")] + "episodes"
        self.counts: Dict[str, Any] = {}  # The last counts read.
        self._count_sender: Optional[BackgroundCalls] = None
        self._unsent: List[_Finished] = []
        self._last_sent_at = -float("inf")  # time.monotonic() of the last increment sent.
        self._sent: "collections.deque[_SentCount]" = collections.deque()
        # The `steps_key` counts of the last replies read (and of the first `get_counts`).
        self._known_totals: "collections.deque[_KnownCount]" = collections.deque(
            maxlen=RATE_WINDOW + 1)
        self._first_known: Optional[_KnownCount] = None  # The first of them.

    def limit_reached(self, counts: Optional[Dict[str, Any]] = None) -> bool:
        """Whether `counts` (by default the last read) are at or past the step limit."""
        counts = self.counts if counts is None else counts
        return self.step_limit is not None and counts.get(self.steps_key, 0) >= self.step_limit

    @property
    def awaiting_reply(self) -> bool:
        """Whether an increment was sent whose reply is not read yet."""
        return bool(self._sent)

    def reply_came(self) -> bool:
        """Whether the oldest increment's reply has come (and may be read without waiting)."""
        return bool(self._sent) and self._sent[0].reply.done()

    def read_first_counts(self) -> Dict[str, Any]:
        """The counter's counts when a run starts (with a step limit; else {})."""
        if self.step_limit is not None:
            asked_at = time.monotonic()
            self._note_counts(self._counter.get_counts(), asked_at)
        return self.counts

    def count_now(self, episode: FinishedEpisode, extra: Dict[str, Any]) -> Dict[str, Any]:
        """Counts `episode` waiting for the reply (call `flush` first); logs and returns its
        row."""
        asked_at = time.monotonic()
        counts = self._counter.increment(episodes=1, steps=episode.steps)
        self._note_counts(counts, asked_at)
        return self._log(episode, extra, counts)

    def count(self, episode: FinishedEpisode, extra: Dict[str, Any],
              max_unanswered: int = 1) -> None:
        """Takes a finished episode (and the values its row adds): sends the counts of those
        not yet sent when they are due, once fewer than `max_unanswered` increments await their
        replies."""
        self._unsent.append(_Finished(episode, extra))
        if self._send_due():
            self.settle(keep=max_unanswered - 1)
            self._send_unsent()

    def settle(self, wait: bool = True, keep: int = 0) -> Optional[Dict[str, Any]]:
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
                    **counts, self.steps_key: counts.get(self.steps_key, 0) - later_steps,
                    self._episodes_key: counts.get(self._episodes_key, 0) - later_episodes})
        return counts

    def flush(self) -> Optional[Dict[str, Any]]:
        """Sends the counts not yet sent and `settle`s every reply."""
        self._send_unsent()
        return self.settle()

    def reply_needed(self) -> bool:
        """Whether a new episode may start only once the replies sent are read: the step limit
        may be within reach of the program's steps since the last count this loop knows."""
        return bool(self._sent) and self._limit_within_reach()

    def wait_at_the_limit(self) -> None:
        """Says the step limit was reached and waits for the program to stop."""
        logging.info("%s=%d reached the limit %d: no new episode; waiting for the program to "
                     "stop", self.steps_key, self.counts.get(self.steps_key, 0), self.step_limit)
        self._stop_event.wait()

    def close(self) -> None:
        """Sends the counts not yet sent (unless the step limit was reached: those episodes are
        dropped, see `EnvironmentLoop`) and ends the background thread once they have gone."""
        if not self.limit_reached():
            self._send_unsent()
        if self._count_sender is not None:
            self._count_sender.close()
            self._count_sender = None

    def _note_counts(self, counts: Dict[str, Any], asked_at: float) -> None:
        """Keeps `counts`, the reply of a call made at `asked_at` (time.monotonic())."""
        self.counts = counts
        self._known_totals.append(_KnownCount(counts.get(self.steps_key, 0), asked_at))
        if self._first_known is None:
            self._first_known = self._known_totals[-1]

    def _send_due(self) -> bool:
        """Whether the episodes not yet sent should be counted now."""
        if time.monotonic() - self._last_sent_at >= self.count_interval_s:
            return True
        if self.step_limit is None:
            return False
        most = self._most_between_replies()
        return (most is None or self._limit_within_reach()
                or self._limit_within_gather_horizon()
                or sum(one.episode.steps for one in self._unsent) >= BATCH_GROWTH * most)

    def _send_unsent(self) -> None:
        """Sends the counts of the episodes not yet sent, in one increment; its reply is read
        (and their rows logged) by `settle`."""
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
                     passed=self.limit_reached)
        return counts

    def _reply(self, reply: futures.Future) -> Dict[str, Any]:
        while True:
            try:
                return reply.result(timeout=REPLY_WAIT_SLICE_S)
            except futures.TimeoutError:
                if self._stop_event.is_set():
                    raise ProgramStopping() from None

    def _limit_within_reach(self) -> bool:
        """Whether the step limit may be within reach of the program's steps since the last
        count this loop knows (no rate known yet counts as within reach)."""
        if self.step_limit is None:
            return False
        most = self._most_between_replies()
        if most is None:
            return True  # No rate known yet.
        return self._projected_count(HEADROOM_EPISODES * most) >= self.step_limit

    def _limit_within_gather_horizon(self) -> bool:
        """Whether the step limit may be less than `GATHER_HORIZON_S` seconds of the program's
        mean rate (`_mean_rate`) beyond the last count this loop knows, with its steps not known
        to be counted (no rate known counts as within)."""
        if self.step_limit is None:
            return False
        rate = self._mean_rate()
        if rate is None:
            return True
        return self._projected_count(GATHER_HORIZON_S * rate) >= self.step_limit

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

    def _log(self, episode: FinishedEpisode, extra: Dict[str, Any],
             counts: Dict[str, Any]) -> Dict[str, Any]:
        """Writes a finished episode's row (its statistics, `extra`, the counts after it)."""
        result = episode.result(counts)
        result.update(extra)
        self._logger.write(result)
        if self._on_row is not None:
            self._on_row(result)
        return result
