"""What the environment loop logs per episode: totals and per-agent values."""

import numpy as np
import pytest

from mava_systems.acting.environment_loop import EnvironmentLoop
import wrappers


class RandomLegalExecutor:
    """Picks a uniformly random legal action for every agent (any action if none is legal)."""

    def __init__(self, seed=0):
        self._rng = np.random.default_rng(seed)

    def select_actions(self, observations):
        actions = {}
        for agent, observation in observations.items():
            legal = np.flatnonzero(observation.legal_actions)
            if not len(legal):
                legal = np.arange(len(observation.legal_actions))
            actions[agent] = int(self._rng.choice(legal))
        return actions

    def observe_first(self, timestep):
        pass

    def observe(self, actions, next_timestep):
        pass

    def update(self, wait=False):
        pass


@pytest.mark.parametrize("name", ["classic/tictactoe_v3", "debug/line_world_v0"])
def test_episode_statistics_per_agent_and_in_total(name):
    environment = wrappers.make_environment_factory(name)(seed=0)
    result = EnvironmentLoop(environment, RandomLegalExecutor()).run_episode()
    agents = environment.agents
    per_agent_lengths = [result[f"episode_length/{agent}"] for agent in agents]
    if name.startswith("classic"):
        # Turn-based: every step is one agent's turn, and the first player moves first.
        assert sum(per_agent_lengths) == result["episode_length"]
        assert per_agent_lengths[0] - per_agent_lengths[1] in (0, 1)
        assert 5 <= result["episode_length"] <= 9
    else:
        assert per_agent_lengths == [result["episode_length"]] * len(agents) == [10, 10]
    assert result["episode_return"] == pytest.approx(
        sum(result[f"episode_return/{agent}"] for agent in agents))


def test_loops_sharing_a_step_limit_stop_within_one_episode_each():
    """Two loops, one central count: each starts episodes only below the limit, then waits."""
    import threading
    import time

    from acme.utils import counting

    from mava_systems.nodes.counting import ExecutorCounter

    central = counting.Counter()
    stop = threading.Event()
    limit, episode_length = 205, 10
    loops = [EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=i),
                             RandomLegalExecutor(seed=i),
                             ExecutorCounter(central, executor_id=i, time_delta=0.0),
                             stop_event=stop, step_limit=limit)
             for i in range(2)]
    threads = [threading.Thread(target=loop.run) for loop in loops]
    for thread in threads:
        thread.start()
    deadline = time.time() + 30
    while central.get_counts().get("executor_steps", 0) < limit and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # A loop that ignored the limit would take thousands more steps by now.
    stopped_at = central.get_counts()["executor_steps"]
    stop.set()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert limit <= stopped_at <= limit - 1 + 2 * episode_length
    assert stopped_at % episode_length == 0
    counts = central.get_counts()
    # A loop may reach no episode end before the other reaches the limit (a thread starved on
    # a busy machine): the counter then has no key of its own.
    assert counts.get("executor_0_steps", 0) + counts.get("executor_1_steps", 0) == stopped_at


class StateRecordingExecutor(RandomLegalExecutor):
    """Asks for the environment's extras and records the global state it is given at each step."""

    observes_extras = True

    def __init__(self):
        super().__init__()
        self.states = []

    def observe_first(self, timestep, extras):
        self.states.append(extras["env_state"])

    def observe(self, actions, next_timestep, extras):
        self.states.append(extras["env_state"])


def test_executors_that_ask_get_the_global_state_after_every_reset_and_step():
    environment = wrappers.make_environment_factory("debug/two_step_v0")()
    executor = StateRecordingExecutor()
    EnvironmentLoop(environment, executor).run_episode()
    # The first state, then 2A or 2B (agent_0's random choice), then the end (zeros).
    assert len(executor.states) == 3
    np.testing.assert_array_equal(executor.states[0], [1, 0, 0])
    assert executor.states[1][0] == 0 and executor.states[1].sum() == 1
    np.testing.assert_array_equal(executor.states[2], [0, 0, 0])


class WritingExecutor(RandomLegalExecutor):
    """Writes every step to replay with a stop-aware writer made in the loop's thread."""

    def __init__(self, client):
        super().__init__()
        self._client = client
        self.writer = None

    def observe_first(self, timestep):
        if self.writer is None:
            self.writer = self._client.trajectory_writer(num_keep_alive_refs=1)

    def observe(self, actions, next_timestep):
        self.writer.append({"step": np.float32(0)})
        self.writer.create_item("queue", 1.0, {"step": self.writer.history["step"][-1:]})
        self.writer.flush()


def test_a_loop_ending_at_the_stop_closes_the_writers_it_made_so_replay_stops_at_once():
    """A writer left open keeps a stream the server's stop waits 5 s for, at every launch's end."""
    import threading
    import time

    from acme.utils import counting
    import reverb

    from mava_systems.nodes.counting import ExecutorCounter
    from mava_systems.nodes.replay import StopAwareClient

    server = reverb.Server([reverb.Table.queue("queue", 10_000)])
    stop = threading.Event()
    client = StopAwareClient(reverb.Client(f"localhost:{server.port}"), stop)
    executor = WritingExecutor(client)
    counter = counting.Counter()
    loop = EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=0),
                           executor, ExecutorCounter(counter, executor_id=0, time_delta=0.0),
                           stop_event=stop, step_limit=30)
    thread = threading.Thread(target=loop.run)
    thread.start()
    deadline = time.time() + 30
    while counter.get_counts().get("executor_steps", 0) < 30 and time.time() < deadline:
        time.sleep(0.01)
    # The loop waits for the stop at its step limit, its writer idle and open.
    other_threads_writer = client.trajectory_writer(num_keep_alive_refs=1)
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert reverb.Client(f"localhost:{server.port}").server_info()["queue"].current_size == 30
    other_threads_writer.close()  # The loop closed its own writers only.
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.5  # Not the 5 s an open stream costs.


class SlowCounter:
    """A counter whose replies take `delay_s`, recording each increment and when it returned."""

    def __init__(self, delay_s):
        from acme.utils import counting  # pylint: disable=import-outside-toplevel
        self._counter = counting.Counter()
        self._delay_s = delay_s
        self.returned_at = []
        self.increments = []

    def increment(self, **counts):
        import time  # pylint: disable=import-outside-toplevel
        self.increments.append(dict(counts))
        time.sleep(self._delay_s)
        result = self._counter.increment(**{f"executor_{key}": value
                                            for key, value in counts.items()})
        self.returned_at.append(time.monotonic())
        return result

    def get_counts(self):
        return self._counter.get_counts()


class CountingExecutor(RandomLegalExecutor):
    """Records when each episode starts and how many steps it observed."""

    def __init__(self):
        super().__init__()
        self.started_at, self.observed, self.abandoned = [], 0, 0

    def observe_first(self, timestep):
        import time  # pylint: disable=import-outside-toplevel
        self.started_at.append(time.monotonic())

    def observe(self, actions, next_timestep):
        self.observed += 1

    def abandon_episode(self):
        self.abandoned += 1


class RecordingLogger:
    def __init__(self):
        self.rows = []

    def write(self, values):
        self.rows.append(dict(values))


def test_counts_go_without_waiting_and_the_stop_stays_exact():
    """The next episode starts before the counter replies; the reply read at its first step
    stops the loop there, nothing of that episode observed."""
    import threading  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel

    counter, executor, logger = SlowCounter(delay_s=0.05), CountingExecutor(), RecordingLogger()
    stop = threading.Event()
    loop = EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=0),
                           executor, counter, logger, stop_event=stop, step_limit=35)
    thread = threading.Thread(target=loop.run)
    thread.start()
    deadline = time.monotonic() + 30
    while executor.abandoned == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # A loop that went on would play three more episodes by now.
    assert thread.is_alive()  # Waiting for the stop at the limit.
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    # Episodes of 10 steps: counted 10, 20, 30, 40; the fifth was dropped at its first step.
    assert [row["executor_steps"] for row in logger.rows] == [10, 20, 30, 40]
    assert [row["episode_length"] for row in logger.rows] == [10] * 4
    assert executor.observed == 40 and executor.abandoned == 1
    assert len(executor.started_at) == 5
    # Each episode started before the previous one's count came back.
    for started, returned in zip(executor.started_at[1:], counter.returned_at):
        assert started < returned


def test_episodes_played_to_a_number_are_all_counted_and_logged():
    counter, logger = SlowCounter(delay_s=0.01), RecordingLogger()
    loop = EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=0),
                           CountingExecutor(), counter, logger)
    loop.run(num_episodes=3)
    assert [row["executor_steps"] for row in logger.rows] == [10, 20, 30]
    assert loop.run_episode()["executor_steps"] == 40


class SlowSteps:
    """An environment whose steps take at least `delay_s`."""

    def __init__(self, environment, delay_s):
        self._environment = environment
        self._delay_s = delay_s

    def __getattr__(self, name):
        return getattr(self._environment, name)

    def step(self, actions):
        import time  # pylint: disable=import-outside-toplevel
        time.sleep(self._delay_s)
        return self._environment.step(actions)


class ObservedAtWriteLogger(RecordingLogger):
    """Records how many steps `executor` had observed when each row was written."""

    def __init__(self, executor):
        super().__init__()
        self._executor = executor
        self.observed_at_write = []

    def write(self, values):
        super().write(values)
        self.observed_at_write.append(self._executor.observed)


def test_far_from_the_limit_episodes_go_on_before_the_reply_and_near_it_they_wait():
    """A reply that takes longer than an episode's first step holds no episode while the limit
    is more than `HEADROOM_EPISODES` episodes' steps away, and the stop is still exact."""
    import threading  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel

    executor = CountingExecutor()
    counter, logger = SlowCounter(delay_s=0.03), ObservedAtWriteLogger(executor)
    stop = threading.Event()
    environment = SlowSteps(
        wrappers.make_environment_factory("debug/line_world_v0")(seed=0), delay_s=0.01)
    loop = EnvironmentLoop(environment, executor, counter, logger, stop_event=stop,
                           step_limit=75)
    thread = threading.Thread(target=loop.run)
    thread.start()
    deadline = time.monotonic() + 60
    while executor.abandoned == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread.is_alive()  # Waiting for the stop at the limit.
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    # Episodes of 10 steps, each reply read no earlier than 30 ms after its episode ended, so
    # at the next episode's first step (10 ms in) only if the loop waited for it.
    assert [row["executor_steps"] for row in logger.rows] == [10, 20, 30, 40, 50, 60, 70, 80]
    observed_in_next_episode = [observed - row["executor_steps"] for observed, row
                                in zip(logger.observed_at_write, logger.rows)]
    # The first reply gives the program's rate (10 steps per episode): episodes 3 and 4 start
    # with 20 + 10 and 30 + 10 steps known, more than 4 x 10 below 75, and go on.
    assert observed_in_next_episode[0] == 0
    assert all(steps >= 1 for steps in observed_in_next_episode[1:3]), observed_in_next_episode
    # From 40 + 10 + 40 >= 75 on, each episode waits for its reply at its first step; the
    # ninth was dropped there (the count was 80).
    assert observed_in_next_episode[3:] == [0] * 5
    assert executor.observed == 80 and executor.abandoned == 1


class HeldCounter(SlowCounter):
    """A counter whose replies wait until `released` is set; `calls` counts the increments."""

    def __init__(self):
        import threading  # pylint: disable=import-outside-toplevel
        super().__init__(delay_s=0.0)
        self.released = threading.Event()
        self.calls = 0

    def increment(self, **counts):
        self.calls += 1
        self.released.wait()
        return super().increment(**counts)


def test_a_loop_waiting_for_a_reply_ends_when_the_program_stops():
    """The counter may be gone at the stop: a loop waiting for its reply gives it up."""
    import threading  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel

    counter, executor, stop = HeldCounter(), CountingExecutor(), threading.Event()
    loop = EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=0),
                           executor, counter, RecordingLogger(), stop_event=stop)
    thread = threading.Thread(target=lambda: loop.run(num_episodes=3))
    thread.start()
    deadline = time.monotonic() + 30
    while executor.observed < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    # The second episode ended waiting for the first one's reply (one reply outstanding at most).
    assert executor.observed == 20 and thread.is_alive()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    counter.released.set()


@pytest.mark.parametrize("step_limit", [None, 10**12, 2_000])
def test_episodes_of_one_count_interval_go_in_one_increment_and_each_row_has_its_own_counts(
        step_limit):
    """Far from the limit the loop gathers episodes into increments; with a step limit each
    increment holds at most twice the steps counted between two earlier replies (without one,
    the interval alone decides), and a limit the program's rate could reach within
    `GATHER_HORIZON_S` has every episode counted as it ends. Every row still carries the counts
    after its own episode."""
    import threading  # pylint: disable=import-outside-toplevel

    counter, logger = SlowCounter(delay_s=0.0), RecordingLogger()
    loop = EnvironmentLoop(wrappers.make_environment_factory("debug/line_world_v0")(seed=0),
                           RandomLegalExecutor(), counter, logger, stop_event=threading.Event(),
                           step_limit=step_limit)
    loop.counting.count_interval_s = 60.0
    loop.run(num_episodes=40)
    sizes = [increment["episodes"] for increment in counter.increments]
    assert sum(sizes) == 40 and sum(increment["steps"] for increment in counter.increments) == 400
    if step_limit is None:
        assert sizes == [1, 39]  # The first at once, the rest at the end of the run.
    elif step_limit == 2_000:
        # 400 steps take well under the 10 s that even 200 steps a second would need for 2,000.
        assert sizes == [1] * 40
    else:
        assert sizes[0] == 1 and len(sizes) <= 8, sizes
        # One loop: between two of its replies the program counted exactly one increment.
        assert all(size <= 2 * max(sizes[:index]) for index, size in enumerate(sizes) if index)
    assert [row["executor_steps"] for row in logger.rows] == list(range(10, 401, 10))
    assert [row["executor_episodes"] for row in logger.rows] == list(range(1, 41))
