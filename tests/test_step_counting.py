"""The step-count protocol on its own: gathered increments, rows with their own counts, when a
loop must wait for a reply, and episodes dropped at the limit."""

import threading

from acme.utils import counting, loggers

from mava_systems.acting import step_counting
from mava_systems.acting.step_counting import StepCounting


class Episode:
    """A finished episode of `steps` steps."""

    def __init__(self, steps: int):
        self.steps = steps

    def result(self, counts):
        return {"episode_length": self.steps, **counts}


class RowsLogger(loggers.Logger):
    def __init__(self):
        self.rows = []

    def write(self, data):
        self.rows.append(dict(data))

    def close(self):
        pass


class CountingCounter(counting.Counter):
    """Acme's counter, remembering each increment's steps."""

    def __init__(self):
        super().__init__()
        self.increments = []

    def increment(self, **counts):
        self.increments.append(counts.get("steps", 0))
        return super().increment(**counts)


def make_counting(step_limit=None, interval_s=60.0):
    counter, logger = CountingCounter(), RowsLogger()
    rows = []
    steps = StepCounting(counter, logger, threading.Event(), step_limit, "steps", rows.append)
    steps.count_interval_s = interval_s
    return steps, counter, logger, rows


def test_episodes_within_the_interval_go_in_one_increment_and_rows_have_their_own_counts():
    steps, counter, logger, rows = make_counting()
    steps.read_first_counts()  # No step limit: no call.
    assert counter.increments == []
    for length in (3, 4, 5):  # The first goes at once (no increment yet), the others wait.
        steps.count(Episode(length), {"epsilon": 0.5})
    steps.flush()
    assert counter.increments == [3, 9]
    assert [(row["episode_length"], row["steps"], row["episodes"]) for row in logger.rows] == [
        (3, 3, 1), (4, 7, 2), (5, 12, 3)]
    assert all(row["epsilon"] == 0.5 for row in logger.rows)
    assert rows == logger.rows  # `on_row` sees every row logged.
    assert not steps.awaiting_reply


def test_a_loop_waits_for_replies_without_a_known_rate_and_near_the_limit_only():
    steps, counter, _, _ = make_counting(step_limit=1000, interval_s=0.0)
    steps.read_first_counts()
    steps.count(Episode(10), {})
    assert steps.reply_needed()  # One count known: no rate yet.
    steps.settle()
    steps.count(Episode(10), {})
    steps.settle()
    # Known: 0, 10, 20 steps; at most 10 between two replies, so 4 x 10 of headroom.
    assert step_counting.HEADROOM_EPISODES == 4
    steps.count(Episode(10), {})
    assert not steps.reply_needed()  # 20 + 10 uncounted + 40 < 1000.
    steps.settle()
    counter.increment(steps=940)  # Other loops' steps: the program is at 970.
    steps.count(Episode(10), {})
    steps.settle()  # Known: 980, with at most 950 between two replies.
    steps.count(Episode(10), {})
    assert steps.reply_needed()
    steps.settle()
    assert steps.limit_reached() is False and steps.counts["steps"] == 990


class GatedCounter(CountingCounter):
    """A counter whose increments wait until `gate` is set (replies come when a test says)."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()

    def increment(self, **counts):
        self.gate.wait()
        return super().increment(**counts)


def test_at_the_limit_the_episodes_not_yet_counted_are_dropped(monkeypatch):
    monkeypatch.setattr(step_counting, "GATHER_HORIZON_S", 0.0)  # Gathering by rate alone.
    counter, logger = GatedCounter(), RowsLogger()
    steps = StepCounting(counter, logger, threading.Event(), 1000, "steps")
    steps.count_interval_s = 60.0
    steps.read_first_counts()
    steps.count(Episode(10), {})  # The first: sent at once.
    steps.settle()  # Known: 0 and 10, so a rate.
    counter.gate.clear()
    steps.count_interval_s = 0.0
    steps.count(Episode(10), {})  # Sent; its reply waits at the gate.
    steps.count_interval_s = 60.0
    steps.count(Episode(10), {})  # Far from the limit as far as the loop knows: gathered.
    assert counter.increments == [10]
    counting.Counter.increment(counter, steps=2000)  # Other loops pass the limit meanwhile.
    counter.gate.set()
    steps.settle()
    assert steps.limit_reached() and steps.counts["steps"] == 2020
    steps.close()
    assert counter.increments == [10, 10]  # The gathered episode was dropped, not counted.
    assert counter.get_counts()["steps"] == 2020
    assert [row["steps"] for row in logger.rows] == [10, 2020]


def test_count_now_waits_for_the_reply_and_logs_the_row():
    steps, counter, logger, _ = make_counting()
    row = steps.count_now(Episode(7), {"extra": 1})
    assert row == {"episode_length": 7, "steps": 7, "episodes": 1, "extra": 1}
    assert logger.rows == [row] and counter.increments == [7]
