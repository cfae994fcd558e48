"""The executor's data path on vectorised environments (`acting/vectorised_loop.py`): one
policy call per step for all B environments, each environment's replay stream holding exactly
what an executor stepping the reference package's environment with the same seed and actions
writes (and, written as one batched stream, the same sequences block by block); exact stop
counts; the implementation chosen (`config.vectorised`) named in the header,
and a vectorised family asked for an id it does not implement refused with the ids it has."""

import threading

from acme.utils import counting
import numpy as np
import pytest
import reverb
import tree

from mava_systems import registry
from mava_systems.nodes.counting import ExecutorCounter
from mava_systems.acting.exploration import LinearEpsilon
from mava_systems.acting.multi_environment import MultiEnvironmentExecutor, environment_seeds
from mava_systems.acting.unsplit_loop import UnsplitEnvironmentLoop
from mava_systems.acting.vectorised_loop import VectorisedEnvironmentLoop
from mava_systems.madqn.batched_execution import BatchedMADQNExecutor
from mava_systems.mappo.batched_execution import BatchedMAPPOExecutor
from mava_systems.mappo.execution import CRITIC_STATE
from mava_systems.multiagent import RESUME_SEED_STRIDE
import wrappers

LBF = "lbf/Foraging-8x8-2p-2f-coop-v3"
EPISODE_LIMIT = 50  # Foraging-8x8-2p-2f-coop-v3's max_episode_steps.
NUM_ENVS = 3


def make_system(name, tmp_path_factory, **config):
    system_class = registry.system_class(name)
    return system_class(wrappers.make_environment_factory(LBF),
                        run_dir=str(tmp_path_factory.mktemp("run")),
                        config=system_class.config_class(seed=3, **config))


@pytest.fixture(scope="module", params=["mappo", "qmix"])
def system(request, tmp_path_factory):
    return make_system(request.param, tmp_path_factory, num_envs_per_executor=NUM_ENVS)


class RecordingClient:
    """A Reverb client whose writers also keep, in `items`, the data of every item they create."""

    def __init__(self, client):
        self._client = client
        self.items = []
        self.writers = []

    def trajectory_writer(self, *args, **kwargs):
        writer = self._client.trajectory_writer(*args, **kwargs)
        self.writers.append(writer)
        create_item = writer.create_item

        def record(table, priority, trajectory):
            self.items.append(tree.map_structure(lambda column: column.numpy(), trajectory))
            create_item(table, priority, trajectory)

        writer.create_item = record
        return writer

    def close(self):
        """Closes the writers (a server with open streams takes seconds to stop)."""
        for writer in self.writers:
            writer.close()
            # The adders flush their writer when they are collected: nothing is left to flush.
            writer.flush = lambda *args, **kwargs: None

    def __getattr__(self, name):
        return getattr(self._client, name)


def unbounded_server(system):
    """A Reverb server with the system's tables, unbounded (nothing consumes the items)."""
    return reverb.Server([reverb.Table(table.name, reverb.selectors.Uniform(),
                                       reverb.selectors.Fifo(), 10 ** 6,
                                       reverb.rate_limiters.MinSize(1))
                          for table in system.replay()])


def run_vectorised_loop(system, loop_class, executor, seeds, num_calls):
    """Runs `loop_class` over a vectorised environment of NUM_ENVS for `num_calls` batched
    steps: the environment steps taken, the counter's counts and the executor's step count."""
    counter = ExecutorCounter(counting.Counter(), 0, time_delta=0.0)
    loop = loop_class(system.vectorised_environment(NUM_ENVS), executor, seeds, counter=counter)
    loop.run(num_steps=1)
    taken = NUM_ENVS + sum(loop.step() for _ in range(num_calls - 1))
    loop.counting.flush()
    return taken, counter.get_counts(), executor.num_steps


@pytest.fixture(scope="module")
def client(system):
    """A client of a server with the system's tables, unbounded (nothing consumes the items)."""
    server = unbounded_server(system)
    yield reverb.Client(f"localhost:{server.port}")
    server.stop()


def exploration(system):
    # Random draws matter (one generator per environment) and epsilon moves per environment.
    return ({"exploration_schedule": LinearEpsilon(1.0, 0.05, 60)}
            if getattr(system, "explores_by_schedule", False) else {})


def recording_streams(system, client, networks, seeds):
    """A MultiEnvironmentExecutor over `seeds` whose streams write through the builder's adders to
    recording clients; the clients."""
    builder, options = system.builder, exploration(system)
    clients = [RecordingClient(client) for _ in seeds]
    actor = builder.make_executor(networks, seed=list(seeds), **options)
    streams = [builder.make_executor(networks, adder=builder.make_adder(client), seed=seed,
                                     **options) for client, seed in zip(clients, seeds)]
    return MultiEnvironmentExecutor(actor, streams), clients


def steps_of_finished_episodes(parts):
    """The environment steps of the episodes that ended among `parts` (an OutputsLog's)."""
    ends = [position for position, (on_last, _) in enumerate(parts) if on_last]
    return sum(not on_last for on_last, _ in parts[:ends[-1]]) if ends else 0


def close(clients):
    for one in clients:
        one.close()


class OutputsLog:
    """Records, per environment, the policy outputs its stream received and whether it acted on a
    LAST timestep (a row the batched reset ignores); counts the policy calls."""

    def __init__(self, executor, loop):
        self.calls, self.parts = 0, [[] for _ in executor.streams]
        policy_outputs = executor.actor.policy_outputs

        def counted(*args, **kwargs):
            self.calls += 1
            return policy_outputs(*args, **kwargs)

        executor.actor.policy_outputs = counted
        for index, stream in enumerate(executor.streams):
            stream.actions_from_outputs = self._recording(index, stream.actions_from_outputs,
                                                          loop)

    def _recording(self, index, actions_from_outputs, loop):
        def record(part, actor=None):
            timestep = loop._timesteps[index][0]  # pylint: disable=protected-access
            self.parts[index].append((timestep.last(), tree.map_structure(np.copy, part)))
            return actions_from_outputs(part, actor)
        return record


def replay_on_reference(system, client, networks, seed, parts):
    """The items a stream writes when the reference environment with `seed` is stepped with the
    actions of `parts` (the policy outputs, those on LAST timesteps left out)."""
    recording = RecordingClient(client)
    stream = system.builder.make_executor(networks, adder=system.builder.make_adder(recording),
                                          seed=seed, **exploration(system))
    environment = system.environment_factory(evaluation=False, seed=seed)
    extras = lambda: (environment.get_extras(),) if stream.observes_extras else ()  # noqa: E731
    stream.observe_first(environment.reset(), *extras())
    for on_last, part in parts:
        if on_last:
            continue
        actions = stream.actions_from_outputs(part)
        timestep = environment.step(actions)
        stream.observe(actions, timestep, *extras())
        if timestep.last():
            stream.observe_first(environment.reset(), *extras())
    return recording.items, recording


def test_one_policy_call_per_step_writes_what_reference_environments_write(system, client):
    networks = system.builder.make_networks()
    seeds = environment_seeds(3, 0, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    executor, clients = recording_streams(system, client, networks, seeds)
    counter = ExecutorCounter(counting.Counter(), 0, time_delta=0.0)
    loop = VectorisedEnvironmentLoop(system.vectorised_environment(NUM_ENVS), executor, seeds,
                                     counter=counter)
    log = OutputsLog(executor, loop)
    num_calls = 2 * EPISODE_LIMIT + 20
    loop.run(num_steps=1)  # Resets and makes one call; the rest one step at a time.
    taken = 1 * NUM_ENVS + sum(loop.step() for _ in range(num_calls - 1))

    assert log.calls == num_calls  # One policy call per batched step, for all environments.
    ended = finished_steps = 0
    for index, seed in enumerate(seeds):
        assert len(log.parts[index]) == num_calls
        expected, recording = replay_on_reference(system, client, networks, seed,
                                                  log.parts[index])
        close([recording])
        ended += sum(on_last for on_last, _ in log.parts[index])
        finished_steps += steps_of_finished_episodes(log.parts[index])
        assert len(clients[index].items) == len(expected) > 0
        for written, reference in zip(clients[index].items, expected):
            tree.map_structure(np.testing.assert_array_equal, written, reference)
    assert ended >= NUM_ENVS  # Every environment ended an episode and was reset in the batch.
    assert taken == num_calls * NUM_ENVS - ended
    # Every environment step of a finished episode counted.
    loop.counting.flush()
    close(clients)
    counts = counter.get_counts()
    assert counts["executor_episodes"] == ended
    assert counts["executor_steps"] == counts["executor_0_steps"] == finished_steps
    assert executor.num_steps == num_calls - min(sum(on_last for on_last, _ in parts)
                                                 for parts in log.parts)


def test_batched_writes_hold_what_each_environments_adder_writes(system, client):
    """A vectorised executor writing one stream (`make_batched_adders`) stores what its
    environments' own adders store for the same steps: MAPPO's sequences lane by lane in
    blocks, QMIX's transition items unchanged."""
    assert system.writes_batched
    networks = system.builder.make_networks()
    seeds = environment_seeds(3, 0, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    num_calls = 2 * EPISODE_LIMIT + 20

    def run(executor):
        loop = VectorisedEnvironmentLoop(system.vectorised_environment(NUM_ENVS), executor,
                                         seeds)
        loop.run(num_steps=1)
        return 1 * NUM_ENVS + sum(loop.step() for _ in range(num_calls - 1))

    separate, clients = recording_streams(system, client, networks, seeds)
    taken = run(separate)
    recording = RecordingClient(client)
    batched = system.multi_environment_executor(networks, exploration(system), recording, None,
                                                seeds, batched=True)
    assert run(batched) == taken
    close(clients + [recording])
    if system.builder.envs_per_item == 1:  # Each environment's items, in one stream.
        assert sorted(np.asarray(item).tobytes() for item in recording.items) == sorted(
            np.asarray(item).tobytes() for one in clients for item in one.items)
        assert len(recording.items) >= NUM_ENVS * num_calls // (
            system.config.transitions_per_item + 1)
        return
    blocks = recording.items
    assert len(blocks) == 1 + (num_calls - system.config.sequence_length) // (
        system.config.sequence_length - 1)
    for index, one in enumerate(clients):
        assert len(one.items) >= len(blocks)
        for block, sequence in zip(blocks, one.items):
            tree.map_structure(
                lambda lanes, own: np.testing.assert_array_equal(lanes[:, index], own),
                block, sequence)


class ReturningEvent(threading.Event):
    """A stop event whose wait returns at once (the program "stops" when the loop waits)."""

    def wait(self, timeout=None):
        return True


@pytest.mark.parametrize("limit", [1, 120])
def test_the_loop_stops_within_one_episode_per_environment_of_the_limit(system, client, limit):
    networks = system.builder.make_networks()
    seeds = environment_seeds(3, 1, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    executor, clients = recording_streams(system, client, networks, seeds)
    counter = ExecutorCounter(counting.Counter(), 1, time_delta=0.0)
    loop = VectorisedEnvironmentLoop(system.vectorised_environment(NUM_ENVS), executor, seeds,
                                     counter=counter, stop_event=ReturningEvent(),
                                     step_limit=limit)
    loop.run()
    close(clients)
    counts = counter.get_counts()
    steps = counts["executor_steps"]
    assert limit <= steps <= limit - 1 + NUM_ENVS * EPISODE_LIMIT
    assert counts["executor_1_steps"] == steps
    # Nothing past the limit started: every environment's stream wrote only counted episodes.
    assert counts["executor_episodes"] >= 1
    assert executor.num_steps <= steps


def test_the_header_names_the_implementation(system, tmp_path_factory):
    assert system.run_config()["environment_implementation"] == (
        f"vectorised (wrappers.vectorised, {NUM_ENVS} environments per call)")
    reference = make_system("mappo", tmp_path_factory, num_envs_per_executor=NUM_ENVS,
                            vectorised="false")
    assert reference.run_config()["environment_implementation"] == "reference package"


def test_an_id_a_vectorised_family_does_not_implement_is_refused_with_its_ids(tmp_path):
    system_class = registry.system_class("mappo")
    with pytest.raises(ValueError, match=r"no vectorised implementation of 'mpe/simple_tag_v3'"
                                         r": family 'mpe' has simple_spread_v3"):
        system_class(wrappers.make_environment_factory("mpe/simple_tag_v3"),
                     run_dir=str(tmp_path / "run"),
                     config=system_class.config_class(vectorised="true"))
    with pytest.raises(ValueError, match="vectorised='maybe' is not one of auto, true, false"):
        system_class(wrappers.make_environment_factory(LBF), run_dir=str(tmp_path / "run"),
                     config=system_class.config_class(vectorised="maybe"))


@pytest.mark.parametrize("config", [{}, {"recurrent": True},
                                    {"recurrent": True, "recurrent_critic": True}],
                         ids=["feedforward", "recurrent", "recurrent_critic"])
def test_the_unsplit_loop_writes_what_the_split_loop_writes(config, tmp_path_factory):
    """`UnsplitEnvironmentLoop` with MAPPO's batched executor (arrays from the environment to
    the policy and the writer) stores the same blocks, counts the same steps and episodes and
    takes the same policy outputs as the vectorised loop of batched adders, with the same seeds."""
    system = make_system("mappo", tmp_path_factory, num_envs_per_executor=NUM_ENVS, **config)
    server = unbounded_server(system)
    client = reverb.Client(f"localhost:{server.port}")
    networks = system.builder.make_networks()
    seeds = environment_seeds(3, 0, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    num_calls = 2 * EPISODE_LIMIT + 20
    environment = system.vectorised_environment(NUM_ENVS)

    def run(loop_class, executor):
        return run_vectorised_loop(system, loop_class, executor, seeds, num_calls)

    split_client, unsplit_client = RecordingClient(client), RecordingClient(client)
    split = system.multi_environment_executor(networks, {}, split_client, None, seeds,
                                              batched=True)
    unsplit = system.batched_executor(networks, {}, unsplit_client, None, seeds,
                                      environment.agents)
    assert isinstance(unsplit, BatchedMAPPOExecutor)
    expected = run(VectorisedEnvironmentLoop, split)
    assert run(UnsplitEnvironmentLoop, unsplit) == expected
    assert expected[1]["executor_episodes"] >= NUM_ENVS  # Episodes ended and were reset.
    close([split_client, unsplit_client])
    server.stop()
    assert len(unsplit_client.items) == len(split_client.items) == 1 + (
        num_calls - system.config.sequence_length) // (system.config.sequence_length - 1)
    for written, reference in zip(unsplit_client.items, split_client.items):
        tree.assert_same_structure(written, reference)
        for (path, one), other in zip(tree.flatten_with_path(written), tree.flatten(reference)):
            assert one.dtype == other.dtype, path
            if CRITIC_STATE in path:  # One critic call for B environments: float32 rounding.
                np.testing.assert_allclose(one, other, rtol=1e-5, atol=1e-6, err_msg=str(path))
            else:
                np.testing.assert_array_equal(one, other, err_msg=str(path))


@pytest.mark.parametrize("config", [{}, {"recurrent": True}], ids=["feedforward", "recurrent"])
def test_the_unsplit_value_based_loop_writes_what_the_split_loop_writes(config,
                                                                       tmp_path_factory):
    """QMIX's batched executor (one epsilon-greedy policy call, n-step transitions computed in
    arrays, `BatchedNStepAdder`; recurrent agents' zero-padded sequences with their states,
    `BatchedEpisodeSequenceAdder`) stores the items the split loop's per-environment adders
    store (observations, actions, n-step returns and discounts, global states, items across
    episode ends), counts the same steps and episodes, and explores at the same epsilon."""
    system = make_system("qmix", tmp_path_factory, num_envs_per_executor=NUM_ENVS, n_step=3,
                         transitions_per_item=2, **config)
    server = unbounded_server(system)
    client = reverb.Client(f"localhost:{server.port}")
    networks = system.builder.make_networks()
    seeds = environment_seeds(3, 0, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    num_calls = 2 * EPISODE_LIMIT + 20

    def run(loop_class, executor):
        return (*run_vectorised_loop(system, loop_class, executor, seeds, num_calls),
                executor.epsilon)

    split_client, unsplit_client = RecordingClient(client), RecordingClient(client)
    split = system.multi_environment_executor(networks, exploration(system), split_client, None,
                                              seeds, batched=system.writes_batched)
    unsplit = system.batched_executor(networks, exploration(system), unsplit_client, None,
                                      seeds, system.vectorised_environment(NUM_ENVS).agents)
    assert isinstance(unsplit, BatchedMADQNExecutor)
    expected = run(VectorisedEnvironmentLoop, split)
    assert run(UnsplitEnvironmentLoop, unsplit) == expected
    assert expected[1]["executor_episodes"] >= NUM_ENVS  # Episodes ended and were reset.
    close([split_client, unsplit_client])
    server.stop()
    assert len(split_client.items) >= NUM_ENVS * num_calls // 20
    assert sorted(tree.flatten(tree.map_structure(lambda leaf: leaf.tobytes(), item))
                  for item in unsplit_client.items) == sorted(
        tree.flatten(tree.map_structure(lambda leaf: leaf.tobytes(), item))
        for item in split_client.items)


def test_the_unsplit_loop_stops_within_one_episode_per_environment_of_the_limit(
        tmp_path_factory):
    system = make_system("mappo", tmp_path_factory, num_envs_per_executor=NUM_ENVS)
    environment = system.vectorised_environment(NUM_ENVS)
    seeds = environment_seeds(3, 1, NUM_ENVS, 0, RESUME_SEED_STRIDE)
    executor = system.batched_executor(system.builder.make_networks(), {}, None, None, seeds,
                                       environment.agents)
    counter = ExecutorCounter(counting.Counter(), 1, time_delta=0.0)
    limit = 120
    loop = UnsplitEnvironmentLoop(environment, executor, seeds, counter=counter,
                                  stop_event=ReturningEvent(), step_limit=limit)
    loop.run()
    counts = counter.get_counts()
    steps = counts["executor_steps"]
    assert limit <= steps <= limit - 1 + NUM_ENVS * EPISODE_LIMIT
    assert counts["executor_1_steps"] == steps
    assert counts["executor_episodes"] >= NUM_ENVS
    assert executor.num_steps <= steps


def test_batched_evaluation_rounds_play_each_seeds_reference_episode(tmp_path_factory):
    """The evaluator's rounds on a vectorised environment play, at once, the greedy episode a
    reference environment made with each evaluation seed plays, the same every round, and count
    every episode and step."""
    from mava_systems.acting.environment_loop import EnvironmentLoop

    system = make_system("mappo", tmp_path_factory, num_envs_per_executor=NUM_ENVS)
    greedy = system.builder.make_evaluation_executor(system.builder.make_networks())
    counter = counting.Counter()
    rounds = system.batched_evaluation_rounds(greedy, None, 10_003, NUM_ENVS, counter)
    first = [rounds.run_episode() for _ in range(NUM_ENVS)]
    second = [rounds.run_episode() for _ in range(NUM_ENVS)]
    keys = [key for key in first[0] if key.startswith("episode_")]
    assert [[row[key] for key in keys] for row in second] == [
        [row[key] for key in keys] for row in first]
    for index, row in enumerate(first):
        environment = system.environment_factory(evaluation=True, seed=10_003 + index)
        reference = EnvironmentLoop(environment, greedy).run_episode()
        assert {key: row[key] for key in keys} == {key: reference[key] for key in keys}
    assert counter.get_counts() == {
        "episodes": 2 * NUM_ENVS, "steps": 2 * sum(row["episode_length"] for row in first)}


def test_mappo_says_when_each_block_makes_several_trainer_steps(tmp_path_factory):
    several = make_system("mappo", tmp_path_factory, num_envs_per_executor=8, batch_size=2,
                          num_minibatches=1)
    assert any("every block makes 4 trainer steps" in note and "--batch_size=8" in note
               for note in several.launch_notes())
    once = make_system("mappo", tmp_path_factory, num_envs_per_executor=8, batch_size=8,
                       num_minibatches=1)
    assert not any("block" in note for note in once.launch_notes())
    split = make_system("mappo", tmp_path_factory, num_envs_per_executor=8, batch_size=2,
                        num_minibatches=1, vectorised=False)
    assert not any("block" in note for note in split.launch_notes())
