"""Several environments per executor (`num_envs_per_executor`): one batched policy call, and
each environment's replay stream holds exactly what a separate executor with its seed would
write; counts and episodes per environment; exact stops; bad values refused."""

import threading
import time

from acme.utils import counting
import numpy as np
import pytest
import tree

from mava_systems import registry
from mava_systems.nodes.counting import ExecutorCounter
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon, LinearEpsilon
from mava_systems.acting.multi_environment import (MultiEnvironmentExecutor,
                                                   MultiEnvironmentLoop, RowSplitGenerator,
                                                   environment_seeds)
from mava_systems.data.transition_adder import NStepTransitionAdder
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.system import RESUME_SEED_STRIDE
from mava_systems.mappo.builder import MAPPOBuilder
import wrappers
from test_environment_loop import HeldCounter, RecordingLogger, SlowCounter
from test_recurrent import user_gru_core  # A user's recurrent core: it acts in TensorFlow.

EPISODE_LENGTH = 10  # debug/line_world_v0's.


class RecordingWriter:
    """A Reverb trajectory writer that keeps every item it is asked to create."""

    def __init__(self, items):
        self.history = []
        self._items = items

    def append(self, step):
        self.history.append(step)

    def create_item(self, table, priority, trajectory):
        self._items.append(trajectory)

    def flush(self, *args, **kwargs):
        pass

    def end_episode(self, *args, **kwargs):
        pass


class RecordingClient:
    """A Reverb client whose writers record the items of one stream in `items`."""

    def __init__(self):
        self.items = []

    def trajectory_writer(self, *args, **kwargs):
        return RecordingWriter(self.items)


@pytest.fixture(scope="module", params=["madqn", "qmix"])
def system(request, tmp_path_factory):
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    system_class = registry.system_class(request.param)
    return system_class(factory, run_dir=str(tmp_path_factory.mktemp("run")),
                        config=system_class.config_class(seed=5))


def recording_adder(system, client):
    builder = system.builder
    return NStepTransitionAdder(client, "table", n_step=3, discount=0.9,
                                packer=builder.make_transition_packer(),
                                environment_extras=bool(builder.replay_environment_extras_spec()))


def multi_environment(system, networks, schedule, seeds):
    """A MultiEnvironmentExecutor over `seeds` whose streams record their items, its clients."""
    builder = system.builder
    clients = [RecordingClient() for _ in seeds]
    actor = builder.make_executor(networks, schedule, seed=list(seeds))
    streams = [builder.make_executor(networks, schedule, adder=recording_adder(system, client),
                                     seed=seed) for client, seed in zip(clients, seeds)]
    return MultiEnvironmentExecutor(actor, streams), clients


@pytest.mark.parametrize("num_envs", [2, 3])
def test_each_stream_writes_exactly_what_a_separate_executor_writes(system, num_envs):
    builder = system.builder
    networks = builder.make_networks()
    # Exploration matters: random draws (one generator per environment) and a schedule
    # that moves with each environment's own steps.
    schedule = LinearEpsilon(1.0, 0.05, 30)
    seeds = environment_seeds(5, 1, num_envs, start_step=0, resume_stride=RESUME_SEED_STRIDE)
    assert len(set(seeds)) == num_envs
    episodes = 4

    separate = []
    for seed in seeds:
        client = RecordingClient()
        executor = builder.make_executor(networks, schedule,
                                         adder=recording_adder(system, client), seed=seed)
        EnvironmentLoop(system.environment_factory(evaluation=False, seed=seed),
                        executor).run(num_episodes=episodes)
        separate.append(client.items)

    executor, clients = multi_environment(system, networks, schedule, seeds)
    assert executor.actor.acts_in_numpy
    counter = ExecutorCounter(counting.Counter(), 1, time_delta=0.0)
    loop = MultiEnvironmentLoop(
        [system.environment_factory(evaluation=False, seed=seed) for seed in seeds],
        executor, counter=counter)
    loop.run(num_steps=episodes * EPISODE_LENGTH * num_envs)

    for expected, client in zip(separate, clients):
        assert len(client.items) == len(expected) == episodes * EPISODE_LENGTH
        for written, reference in zip(client.items, expected):
            np.testing.assert_array_equal(written, reference)
    # Streams differ (distinct seeds), so the comparison above is not vacuous.
    assert not all(np.array_equal(a, b) for a, b in zip(clients[0].items, clients[1].items))
    counts = counter.get_counts()
    assert counts["executor_episodes"] == episodes * num_envs
    assert counts["executor_steps"] == counts["executor_1_steps"] == (
        episodes * EPISODE_LENGTH * num_envs)
    assert len(loop.results) == episodes * num_envs
    assert all(row["episode_length"] == EPISODE_LENGTH for row in loop.results)
    # The schedule stands at each environment's steps, not the executor's total.
    assert executor.num_steps == episodes * EPISODE_LENGTH
    assert executor.epsilon == pytest.approx(schedule(episodes * EPISODE_LENGTH))


class ReturningEvent(threading.Event):
    """A stop event whose wait returns at once (the program "stops" when the loop waits)."""

    def wait(self, timeout=None):
        return True


@pytest.mark.parametrize("limit", [1, 35, 60])
def test_the_loop_stops_within_one_episode_per_environment_of_the_limit(system, limit):
    num_envs = 3
    seeds = environment_seeds(0, 0, num_envs, 0, RESUME_SEED_STRIDE)
    executor, clients = multi_environment(system, system.builder.make_networks(),
                                          ConstantEpsilon(0.2), seeds)
    counter = ExecutorCounter(counting.Counter(), 0, time_delta=0.0)
    loop = MultiEnvironmentLoop(
        [system.environment_factory(evaluation=False, seed=seed) for seed in seeds], executor,
        counter=counter, stop_event=ReturningEvent(), step_limit=limit)
    loop.run()
    steps = counter.get_counts()["executor_steps"]
    assert limit <= steps <= limit - 1 + num_envs * EPISODE_LENGTH
    assert steps % EPISODE_LENGTH == 0
    assert counter.get_counts()["executor_episodes"] == steps // EPISODE_LENGTH
    assert sum(len(client.items) for client in clients) == steps


class FailingEnvironment:
    """An environment whose every step raises."""

    def __init__(self, environment):
        self._environment = environment

    def __getattr__(self, name):
        return getattr(self._environment, name)

    def step(self, actions):
        raise RuntimeError("broken")


def test_a_failing_environment_stops_the_loop_after_three_episodes_in_a_row(system):
    seeds = [1, 2]
    executor, _ = multi_environment(system, system.builder.make_networks(),
                                    ConstantEpsilon(0.2), seeds)
    environments = [system.environment_factory(evaluation=False, seed=seed) for seed in seeds]
    environments[1] = FailingEnvironment(environments[1])
    loop = MultiEnvironmentLoop(environments, executor)
    with pytest.raises(Exception, match=r"#1: step\(\) raised RuntimeError: broken; 3 episodes"):
        loop._run(None)  # pylint: disable=protected-access


def test_row_split_generator_draws_each_block_from_its_own_generator():
    split = RowSplitGenerator([np.random.default_rng(1), np.random.default_rng(2)])
    drawn = split.random((4, 3))
    np.testing.assert_array_equal(drawn[:2], np.random.default_rng(1).random((2, 3)))
    np.testing.assert_array_equal(drawn[2:], np.random.default_rng(2).random((2, 3)))
    with pytest.raises(ValueError, match="3 rows do not split over 2"):
        split.random((3,))


def test_environment_seeds_are_distinct_and_one_environment_keeps_the_executor_seed():
    assert environment_seeds(7, 2, 1, 0, 1000) == [7 + 1 + 2]
    seeds = [seed for executor_id in range(3)
             for seed in environment_seeds(7, executor_id, 4, 0, 1000)]
    assert len(set(seeds)) == 12


@pytest.mark.parametrize("value", [0, -1, 1.5, "2"])
def test_a_bad_num_envs_per_executor_is_refused_naming_the_field(value):
    with pytest.raises(ValueError, match="num_envs_per_executor"):
        MADQNConfig(num_envs_per_executor=value)


class RecordingSequenceAdder:
    """Records every leaf an executor hands its adder (MAPPO's sequence adder's calls; the
    recurrent executors' with `stores_environment_extras` as the system's adder has it)."""

    def __init__(self, stores_environment_extras=False):
        self.calls = []
        self.stores_environment_extras = stores_environment_extras

    def add_first(self, timestep, *args):
        self.calls.append(tree.flatten((timestep.observation, args)))

    def add(self, action, next_timestep, extras=(), *args):
        self.calls.append(tree.flatten((action, next_timestep, extras, args)))

    def reset(self):
        pass


def acting(builder, networks, schedule, **kwargs):
    """`builder.make_executor`, following `schedule` where the system explores by one (MAPPO's
    executors sample their policies and take none)."""
    if isinstance(builder, MAPPOBuilder):
        return builder.make_executor(networks, **kwargs)
    return builder.make_executor(networks, schedule, **kwargs)


@pytest.mark.parametrize("name, environment, kwargs", [
    ("mappo", "debug/line_world_v0", {}),
    ("maddpg", "mpe/simple_spread_v3", {"continuous_actions": True, "max_cycles": 10})])
def test_mappo_and_maddpg_streams_write_what_separate_executors_write(
        tmp_path, name, environment, kwargs):
    """MAPPO's sampled actions and log-probabilities and MADDPG's Gaussian exploration noise
    come from each environment's own generator, through one policy call."""
    system = registry.system_class(name)(wrappers.make_environment_factory(environment, **kwargs),
                                         run_dir=str(tmp_path / "run"))
    builder = system.builder
    networks = builder.make_networks()
    seeds = environment_seeds(0, 0, 3, 0, RESUME_SEED_STRIDE)
    separate = []
    for seed in seeds:
        adder = RecordingSequenceAdder()
        executor = acting(builder, networks, ConstantEpsilon(0.3), adder=adder, seed=seed)
        EnvironmentLoop(system.environment_factory(evaluation=False, seed=seed),
                        executor).run(num_episodes=2)
        separate.append(adder.calls)
    actor = acting(builder, networks, ConstantEpsilon(0.3), seed=list(seeds))
    adders = [RecordingSequenceAdder() for _ in seeds]
    streams = [acting(builder, networks, ConstantEpsilon(0.3), adder=adder, seed=seed)
               for adder, seed in zip(adders, seeds)]
    loop = MultiEnvironmentLoop(
        [system.environment_factory(evaluation=False, seed=seed) for seed in seeds],
        MultiEnvironmentExecutor(actor, streams))
    loop.run(num_steps=2 * EPISODE_LENGTH * len(seeds))
    for adder, expected in zip(adders, separate):
        assert len(adder.calls) == len(expected) == 2 * (EPISODE_LENGTH + 1)
        assert_same_calls(adder.calls, expected)


def assert_same_calls(calls, expected, tolerance=1e-6):
    """The adder calls `calls` hand the adder what `expected` did: floats (log-probabilities,
    Q-values' recurrent states) to float32 rounding, as BLAS sums a bigger batch's products in
    another order; everything else (actions, versions, observations) exactly."""
    assert len(calls) == len(expected)
    for index, (call, reference) in enumerate(zip(calls, expected)):
        assert len(call) == len(reference)
        for leaf, reference_leaf in zip(call, reference):
            if np.issubdtype(np.asarray(leaf).dtype, np.floating):
                np.testing.assert_allclose(leaf, reference_leaf, rtol=tolerance, atol=tolerance,
                                           err_msg=f"call {index}")
            else:
                np.testing.assert_array_equal(leaf, reference_leaf, err_msg=f"call {index}")


# Environment 0's episodes (3 steps) start again while environment 1's (7 steps) run on.
EPISODE_LENGTHS = (3, 7)
# No agent IDs: the tests make their environments themselves (not through the system's factory).
RECURRENT = dict(recurrent=True, rnn_hidden_size=8, hidden_sizes=(16,), agent_ids=False)


def line_world(length, seed):
    """debug/line_world_v0 with episodes of `length` steps (its specs do not depend on it)."""
    return wrappers.make_environment_factory("debug/line_world_v0", max_cycles=length)(
        evaluation=False, seed=seed)


def recurrent_system(name, tmp_path, network_factory=None):
    system_class = registry.system_class(name)
    return system_class(wrappers.make_environment_factory("debug/line_world_v0"),
                        network_factory=network_factory, run_dir=str(tmp_path / "run"),
                        config=system_class.config_class(**RECURRENT))


@pytest.mark.parametrize("name, network_factory", [
    ("qmix", None), ("qmix", user_gru_core), ("mappo", None)],
    ids=["qmix", "qmix_tensorflow", "mappo"])
def test_recurrent_streams_write_what_separate_executors_write(tmp_path, name, network_factory):
    """One state per (environment, agent): each stream stores its own environment's states
    (reset at its own episode starts only) with its sequences, as a separate executor does."""
    system = recurrent_system(name, tmp_path, network_factory)
    builder = system.builder
    networks = builder.make_networks()
    # Greedy on the TensorFlow path (its random draws are not split per environment); else
    # exploring, each environment drawing from its own generator.
    schedule = ConstantEpsilon(0.0) if network_factory else LinearEpsilon(1.0, 0.05, 15)
    stores_extras = bool(builder.replay_environment_extras_spec())
    seeds = environment_seeds(5, 0, 2, 0, RESUME_SEED_STRIDE)
    steps = 21  # Per environment: 7 episodes of environment 0, 3 of environment 1.

    separate = []
    for length, seed in zip(EPISODE_LENGTHS, seeds):
        adder = RecordingSequenceAdder(stores_extras)
        executor = acting(builder, networks, schedule, adder=adder, seed=seed)
        EnvironmentLoop(line_world(length, seed), executor).run(num_episodes=steps // length)
        separate.append(adder.calls)

    actor = acting(builder, networks, schedule, seed=list(seeds))
    assert actor.acts_in_numpy == (network_factory is None)
    adders = [RecordingSequenceAdder(stores_extras) for _ in seeds]
    streams = [acting(builder, networks, schedule, adder=adder, seed=seed)
               for adder, seed in zip(adders, seeds)]
    executor = MultiEnvironmentExecutor(actor, streams)
    assert executor.recurrent
    loop = MultiEnvironmentLoop([line_world(length, seed)
                                 for length, seed in zip(EPISODE_LENGTHS, seeds)], executor)
    loop.run(num_steps=2 * steps)

    assert sorted(row["episode_length"] for row in loop.results) == [3] * 7 + [7] * 3
    for adder, expected, length in zip(adders, separate, EPISODE_LENGTHS):
        assert len(adder.calls) == (steps // length) * (length + 1)
        assert_same_calls(adder.calls, expected, tolerance=1e-5)
    # The streams' states moved away from the initial ones (the comparison is not vacuous).
    assert all(np.abs(leaf).sum() > 0 for stream in streams
               for leaf in tree.flatten(stream.states.current))


@pytest.mark.parametrize("name", ["qmix", "mappo"])
def test_an_episode_start_resets_its_environments_states_and_no_others(tmp_path, name):
    system = recurrent_system(name, tmp_path)
    builder = system.builder
    networks = builder.make_networks()
    seeds = [1, 2]
    streams = [acting(builder, networks, ConstantEpsilon(0.3), seed=seed)
               for seed in seeds]
    executor = MultiEnvironmentExecutor(
        acting(builder, networks, ConstantEpsilon(0.3), seed=seeds), streams)
    environments = [line_world(10, seed) for seed in seeds]
    timesteps = [environment.reset() for environment in environments]
    for index, timestep in enumerate(timesteps):
        executor.observe_first(index, timestep)
    for _ in range(3):
        actions = executor.select_actions([timestep.observation for timestep in timesteps])
        timesteps = [environment.step(action)
                     for environment, action in zip(environments, actions)]
        for index, (action, timestep) in enumerate(zip(actions, timesteps)):
            executor.observe(index, action, timestep)
    carried = [tree.map_structure(np.copy, stream.states.current) for stream in streams]
    assert all(np.abs(leaf).sum() > 0 for leaf in tree.flatten(carried))

    executor.observe_first(0, environments[0].reset())
    for leaf in tree.flatten(streams[0].states.current):
        np.testing.assert_array_equal(leaf, 0.0)
    tree.map_structure(np.testing.assert_array_equal, streams[1].states.current, carried[1])
    # The next call acts from those states: environment 1's continue from where they were.
    alone = acting(builder, networks, ConstantEpsilon(0.3), seed=seeds[1])
    alone.states.current = carried[1]
    observations = [environments[0].reset().observation, timesteps[1].observation]
    executor.select_actions(observations)
    alone.select_actions(observations[1])
    tree.map_structure(lambda got, expected: np.testing.assert_allclose(got, expected, atol=1e-6),
                       streams[1].states.current, alone.states.current)


def test_the_tensorflow_path_acts_for_every_environment_in_one_compiled_call(system):
    """Networks without NumPy twins act in one compiled call for all environments' rows."""
    from mava_systems.madqn.execution import MADQNExecutor  # pylint: disable=import-outside-toplevel

    class TensorFlowExecutor(MADQNExecutor):
        def _batched_policy(self, observations, epsilon):  # Its own: no NumPy twin.
            return super()._batched_policy(observations, epsilon)

    networks = system.builder.make_networks()
    seeds = [3, 4, 5]
    actor = TensorFlowExecutor(networks, ConstantEpsilon(0.0), seed=seeds)
    assert not actor.acts_in_numpy
    streams = [TensorFlowExecutor(networks, ConstantEpsilon(0.0), seed=seed) for seed in seeds]
    executor = MultiEnvironmentExecutor(actor, streams)
    environments = [system.environment_factory(evaluation=False, seed=seed) for seed in seeds]
    observations = [environment.reset().observation for environment in environments]
    actions = executor.select_actions(observations)
    # Greedy: each environment's actions are what its own executor picks alone.
    for stream, observation, chosen in zip(streams, observations, actions):
        alone = stream.select_actions(observation)
        assert {agent: int(action) for agent, action in chosen.items()} == {
            agent: int(action) for agent, action in alone.items()}
    loop = MultiEnvironmentLoop(environments, executor)
    loop.run(num_steps=3 * EPISODE_LENGTH)
    assert [row["episode_length"] for row in loop.results] == [EPISODE_LENGTH] * 3


class RandomMultiExecutor:
    """Random legal actions for each of `num_environments`; counts what it observed."""

    observes_extras = False

    def __init__(self, num_environments):
        self.num_environments = num_environments
        self._rng = np.random.default_rng(0)
        self.observed = 0

    def select_actions(self, observations):
        return [{agent: int(self._rng.choice(np.flatnonzero(observation.legal_actions)))
                 for agent, observation in per_environment.items()}
                for per_environment in observations]

    def observe_first(self, index, timestep):
        pass

    def observe(self, index, actions, next_timestep):
        self.observed += 1

    def abandon_episode(self, index):
        pass

    def update(self, wait=False):
        pass


def test_the_loop_steps_on_while_episode_counts_wait_for_the_counter():
    """Without a step limit no episode waits for a reply, up to one unanswered count per
    environment; each row is logged, with the counts after its episode, once its reply came."""
    counter, logger = HeldCounter(), RecordingLogger()
    executor = RandomMultiExecutor(2)
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    loop = MultiEnvironmentLoop([factory(seed=0), factory(seed=1)], executor, counter=counter,
                                logger=logger, stop_event=threading.Event())
    loop.counting.count_interval_s = 0.0  # Every episode's count sent as it ends.
    thread = threading.Thread(target=lambda: loop.run(num_steps=100))
    thread.start()
    deadline = time.monotonic() + 30
    while executor.observed < 39 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    # Both environments' first episodes (10 steps each) counted with no reply and nothing logged;
    # the second episodes played on, and the first to end (its 39th observed step) waits to send
    # its count until the first reply comes: one unanswered count per environment at most.
    assert executor.observed == 39 and thread.is_alive()
    assert counter.calls == 1 and logger.rows == []
    counter.released.set()
    thread.join(10)
    assert not thread.is_alive()
    assert executor.observed == 100
    assert [row["executor_steps"] for row in logger.rows] == list(range(10, 101, 10))
    assert [row["executor_episodes"] for row in logger.rows] == list(range(1, 11))
    assert loop.results == logger.rows


@pytest.mark.parametrize("step_limit", [10**6, 2_000])
def test_episodes_ending_together_are_gathered_far_from_the_limit_and_counted_one_by_one_near_it(
        step_limit):
    """Four environments' episodes end at the same step, their counts going microseconds apart:
    a limit far beyond what the program's rate (about 15,000 steps a second here) could reach in
    `GATHER_HORIZON_S` still has them gathered into few increments (timing the rate between two
    such counts made it ten times that and counted every episode alone); a limit within reach
    of it has every episode counted as it ends."""
    counter, logger = SlowCounter(delay_s=0.0), RecordingLogger()
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    loop = MultiEnvironmentLoop([factory(seed=seed) for seed in range(4)],
                                RandomMultiExecutor(4), counter=counter, logger=logger,
                                stop_event=threading.Event(), step_limit=step_limit)
    loop.counting.count_interval_s = 60.0
    loop.run(num_steps=400)
    sizes = [increment["episodes"] for increment in counter.increments]
    assert sum(sizes) == 40 and sum(increment["steps"] for increment in counter.increments) == 400
    if step_limit == 2_000:
        assert sizes == [1] * 40
    else:
        assert len(sizes) <= 12, sizes
    assert [row["executor_steps"] for row in logger.rows] == list(range(10, 401, 10))
