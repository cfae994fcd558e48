"""The batched sequence writer (`data/batched_sequences.py`): one replay stream for B
environments stepped together holds exactly the sequences B of Acme's sequence adders write,
in blocks the trainer's dataset splits back into sequences."""

import threading

from acme import specs as acme_specs
from acme.adders.reverb import sequence as acme_sequence
import dm_env
from dm_env import specs
import numpy as np
import pytest
import reverb
import tree

from mava_systems.data.batched_sequences import (BatchedSequenceWriter, batched_signature,
                                                 items_holding, lane_major_sequences)

NUM_LANES = 3
SEQUENCE_LENGTH = 5
PERIOD = SEQUENCE_LENGTH - 1
ENVIRONMENT_SPEC = acme_specs.EnvironmentSpec(
    observations={"agents": specs.Array((2, 3), np.float32)},
    actions=specs.Array((2,), np.int32), rewards=specs.Array((2,), np.float32),
    discounts=specs.Array((2,), np.float32))
EXTRAS_SPEC = {"log_prob": specs.Array((2,), np.float32),
               "policy_version": specs.Array((), np.int64)}
SIGNATURE = acme_sequence.SequenceAdder.signature(ENVIRONMENT_SPEC, EXTRAS_SPEC,
                                                  sequence_length=SEQUENCE_LENGTH)


@pytest.fixture(scope="module")
def server():
    tables = [reverb.Table.queue(f"lane_{index}", 1000, signature=SIGNATURE)
              for index in range(NUM_LANES)]
    tables.append(reverb.Table.queue("batched", 1000,
                                     signature=batched_signature(SIGNATURE, NUM_LANES)))
    server = reverb.Server(tables)
    yield server
    server.stop()


def vectorised_streams(seed, iterations, episode_lengths):
    """Per batched step, each environment's adder call as the vectorised loop makes it: an
    episode's first timestep after the batched reset step (which follows its LAST one), else
    a step with random data."""
    rng = np.random.default_rng(seed)
    observation = lambda: {"agents": rng.standard_normal((2, 3)).astype(np.float32)}  # noqa: E731
    calls = [[] for _ in range(NUM_LANES)]
    for lane in range(NUM_LANES):
        step = 0
        calls[lane].append(("first", dm_env.restart(observation())))
        for _ in range(iterations):
            if step is None:  # The batched reset step: the next episode's first timestep.
                calls[lane].append(("first", dm_env.restart(observation())))
                step = 0
                continue
            step += 1
            reward = rng.standard_normal(2).astype(np.float32)
            if step == episode_lengths[lane]:
                timestep = dm_env.truncation(reward, observation())
                timestep = timestep._replace(discount=np.ones(2, np.float32))
                step = None
            else:
                timestep = dm_env.transition(reward, observation(), np.ones(2, np.float32))
            calls[lane].append(("add", rng.integers(0, 5, 2).astype(np.int32), timestep,
                                {"log_prob": rng.standard_normal(2).astype(np.float32),
                                 "policy_version": np.int64(rng.integers(0, 9))}))
    return calls


def feed(adder, calls):
    for call in calls:
        if call[0] == "first":
            adder.add_first(call[1])
        else:
            adder.add(*call[1:])


def sampled(server, table, count):
    """The first `count` items of a queue, in order."""
    dataset = reverb.TrajectoryDataset.from_table_signature(
        server_address=f"localhost:{server.port}", table=table,
        max_in_flight_samples_per_worker=1, rate_limiter_timeout_ms=500)
    return [tree.map_structure(np.asarray, sample.data) for sample in dataset.take(count)]


@pytest.mark.parametrize("episode_lengths", [(7, 7, 7), (3, 9, 14)])
def test_the_blocks_hold_what_one_acme_adder_per_environment_writes(server, episode_lengths):
    client = reverb.Client(f"localhost:{server.port}")
    calls = vectorised_streams(seed=sum(episode_lengths), iterations=40,
                               episode_lengths=episode_lengths)
    batched = BatchedSequenceWriter(client, "batched", NUM_LANES, SEQUENCE_LENGTH, PERIOD)
    for iteration in range(len(calls[0])):  # In turns, as the loop hands each step over.
        for lane in range(NUM_LANES):
            feed(batched.lanes[lane], [calls[lane][iteration]])
    batched.flush()
    expected = []
    for lane in range(NUM_LANES):
        adder = acme_sequence.SequenceAdder(
            client, SEQUENCE_LENGTH, PERIOD, priority_fns={f"lane_{lane}": None},
            end_of_episode_behavior=acme_sequence.EndBehavior.CONTINUE)
        feed(adder, calls[lane])
        adder._writer.flush()  # pylint: disable=protected-access
        del adder  # Closes its stream.
        size = client.server_info()[f"lane_{lane}"].current_size
        expected.append(sampled(server, f"lane_{lane}", size))
    # One row per lane and batched step: 40 steps and the first observation of each lane.
    assert batched.rows_written == 40
    num_items = client.server_info()["batched"].current_size
    assert num_items == 1 + (40 - SEQUENCE_LENGTH) // PERIOD == 9
    batched.close()
    for item, block in enumerate(sampled(server, "batched", num_items)):
        assert block.observation["agents"].shape == (SEQUENCE_LENGTH, NUM_LANES, 2, 3)
        for lane in range(NUM_LANES):
            tree.map_structure(lambda mine, acme: np.testing.assert_array_equal(mine[:, lane],
                                                                               acme),
                               block, expected[lane][item])
    assert all(len(items) == num_items for items in expected)


def test_a_stopped_lane_stops_the_stream_and_the_dataset_splits_blocks_into_sequences(server):
    client = reverb.Client(f"localhost:{server.port}")
    batched = BatchedSequenceWriter(client, "batched", NUM_LANES, SEQUENCE_LENGTH, PERIOD)
    calls = vectorised_streams(seed=1, iterations=30, episode_lengths=(4, 6, 8))
    for iteration in range(len(calls[0])):
        for lane in range(NUM_LANES):
            if lane == 0 and iteration >= 12:
                continue  # Lane 0 finished (the step limit): no more rows from it.
            feed(batched.lanes[lane], [calls[lane][iteration]])
    batched.flush()
    batched.close()
    # Lane 0 gave 11 rows: two episodes of 4 steps (5 rows each with the final observation's),
    # one step of a third; the other lanes' rows after them wait for it.
    assert batched.rows_written == 11
    assert client.server_info()["batched"].current_size == 2
    dataset = reverb.TrajectoryDataset.from_table_signature(
        server_address=f"localhost:{server.port}", table="batched",
        max_in_flight_samples_per_worker=1, rate_limiter_timeout_ms=500)
    sequences = list(dataset.map(lambda sample: lane_major_sequences(sample, NUM_LANES))
                     .unbatch().take(2 * NUM_LANES))
    assert len(sequences) == 2 * NUM_LANES
    assert sequences[0].data.observation["agents"].shape == (SEQUENCE_LENGTH, 2, 3)
    assert sequences[0].info.key.shape == ()
    # The second block's lane 1 continues the first block's: the last row is the next's first.
    first, second = sequences[1].data, sequences[NUM_LANES + 1].data
    np.testing.assert_array_equal(first.observation["agents"][-1],
                                  second.observation["agents"][0])
    assert items_holding(64, 16) == 4 and items_holding(64, 128) == 1 and items_holding(5, 2) == 3


def test_bad_arguments_are_refused(server):
    client = reverb.Client(f"localhost:{server.port}")
    with pytest.raises(ValueError, match="num_lanes must be at least 1"):
        BatchedSequenceWriter(client, "batched", 0, SEQUENCE_LENGTH, PERIOD)
    with pytest.raises(ValueError, match="period must be in"):
        BatchedSequenceWriter(client, "batched", 2, SEQUENCE_LENGTH, SEQUENCE_LENGTH + 1)
    lane = BatchedSequenceWriter(client, "batched", 2, SEQUENCE_LENGTH, PERIOD).lanes[0]
    with pytest.raises(ValueError, match="add_first must be called before add"):
        lane.add(np.zeros(2, np.int32), dm_env.transition(np.zeros(2), {}))
    with pytest.raises(ValueError, match="add_first needs the first timestep"):
        lane.add_first(dm_env.transition(np.zeros(2), {}))


def test_with_no_items_in_flight_each_item_waits_for_the_full_queue_and_the_wait_is_counted():
    """max_in_flight_items=0: the writer returns from an item only once replay holds it, so an
    executor is never more than the queue's blocks ahead; `wait_s` counts its waits."""
    server = reverb.Server([reverb.Table.queue(
        "one_block", 1, signature=batched_signature(SIGNATURE, NUM_LANES))])
    try:
        client = reverb.Client(f"localhost:{server.port}")
        batched = BatchedSequenceWriter(client, "one_block", NUM_LANES, SEQUENCE_LENGTH, PERIOD,
                                        max_in_flight_items=0)
        calls = vectorised_streams(seed=2, iterations=SEQUENCE_LENGTH + PERIOD,
                                   episode_lengths=(20, 20, 20))
        taken = []
        sampler = threading.Timer(0.5, lambda: taken.extend(sampled(server, "one_block", 1)))
        for iteration in range(len(calls[0])):
            if iteration == SEQUENCE_LENGTH + 1:  # The first item is in the queue, confirmed.
                assert client.server_info()["one_block"].current_size == 1
                assert batched.wait_s < 0.5
                sampler.start()
            for lane in range(NUM_LANES):
                feed(batched.lanes[lane], [calls[lane][iteration]])
        # The second item waited for the sampler to take the first.
        assert batched.wait_s >= 0.3
        sampler.join()
        assert len(taken) == 1
        batched.close()
    finally:
        server.stop()
