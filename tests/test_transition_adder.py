"""The n-step transition adder: every step starts one transition with Acme's R and D definitions."""

from acme import specs
from acme.adders import reverb as reverb_adders
import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf
import tree

from mava_systems.data.packing import ArrayPacker
from mava_systems.nodes.replay import StopAwareClient
from mava_systems.data.transition_adder import (NStepTransitionAdder, SharedWriterClient,
                                                transition_extras_spec)

TABLE = "transitions"
AGENTS = 2
DISCOUNT = 0.9


def _spec():
    return specs.EnvironmentSpec(
        observations={"net": specs.Array((AGENTS, 3), np.float32)},
        actions={"net": specs.Array((AGENTS,), np.int32)},
        rewards={"net": specs.Array((AGENTS,), np.float32)},
        discounts={"net": specs.BoundedArray((AGENTS,), np.float32, 0.0, 1.0)})


@pytest.fixture(params=[False, True], ids=["columns", "packed"])
def packer(request):
    """None (one column per field, Acme's layout) or a packer (one byte column)."""
    return ArrayPacker(reverb_adders.NStepTransitionAdder.signature(_spec())) if request.param else None


@pytest.fixture()
def server(packer):
    # FIFO sampling, each item once: samples come back in insertion order.
    signature = (packer.signature() if packer else
                 reverb_adders.NStepTransitionAdder.signature(_spec()))
    table = reverb.Table(TABLE, reverb.selectors.Fifo(), reverb.selectors.Fifo(), 10_000,
                         reverb.rate_limiters.MinSize(1), max_times_sampled=1,
                         signature=signature)
    server = reverb.Server([table])
    yield server
    server.stop()


def _episode(rng, length, terminal_discount):
    """Timesteps of one episode: random observations and rewards, a terminal discount at the end."""
    observations = [rng.normal(size=(AGENTS, 3)).astype(np.float32) for _ in range(length + 1)]
    rewards = [rng.normal(size=AGENTS).astype(np.float32) for _ in range(length)]
    discounts = [np.ones(AGENTS, np.float32) for _ in range(length)]
    discounts[-1] = np.full(AGENTS, terminal_discount, np.float32)
    discounts[length // 2][0] = 0.5  # An agent-specific discount mid-episode.
    timesteps = [dm_env.restart({"net": observations[0]})]
    for step in range(length):
        step_type = dm_env.StepType.LAST if step == length - 1 else dm_env.StepType.MID
        timesteps.append(dm_env.TimeStep(step_type, {"net": rewards[step]},
                                         {"net": discounts[step]}, {"net": observations[step + 1]}))
    return timesteps, observations, rewards, discounts


def _expected(observations, rewards, discounts, n_step):
    """The transitions, from first principles: one per step, shorter at the end."""
    expected = []
    for start in range(len(rewards)):
        steps = min(n_step, len(rewards) - start)
        n_step_return = np.zeros(AGENTS, np.float64)
        weight = np.ones(AGENTS, np.float64)
        for i in range(steps):
            n_step_return += weight * rewards[start + i]
            weight = weight * discounts[start + i] * (DISCOUNT if i < steps - 1 else 1.0)
        expected.append((observations[start], start, n_step_return, weight,
                         observations[start + steps]))
    return expected


def _read_all(server, count, packer):
    client = server.localhost_client()
    assert client.server_info()[TABLE].current_size == count
    items = [sample.data for sample in client.sample(
        TABLE, num_samples=count, emit_timesteps=False, unpack_as_table_signature=True)]
    if packer is None:
        return items
    return [tree.map_structure(lambda leaf: leaf.numpy(), packer.unpack(item)) for item in items]


@pytest.mark.parametrize("n_step, length", [(1, 4), (3, 7), (5, 3)])
def test_each_step_starts_one_n_step_transition(server, packer, n_step, length):
    rng = np.random.default_rng(n_step)
    adder = NStepTransitionAdder(StopAwareClient(server.localhost_client()), TABLE, n_step,
                                 DISCOUNT, packer=packer)
    items = []
    for terminal_discount in (0.0, 1.0):  # A terminated and a truncated episode.
        timesteps, observations, rewards, discounts = _episode(rng, length, terminal_discount)
        adder.add_first(timesteps[0])
        for step, timestep in enumerate(timesteps[1:]):
            adder.add({"net": np.full(AGENTS, step, np.int32)}, timestep)
        items.extend(_expected(observations, rewards, discounts, n_step))

    adder.flush()  # An episode's end does not wait for its own items.
    written = _read_all(server, len(items), packer)
    for item, (observation, action, n_step_return, total_discount, next_observation) in zip(
            written, items):
        np.testing.assert_array_equal(item.observation["net"], observation)
        np.testing.assert_array_equal(item.action["net"], np.full(AGENTS, action))
        np.testing.assert_allclose(item.reward["net"], n_step_return, rtol=1e-5)
        np.testing.assert_allclose(item.discount["net"], total_discount, rtol=1e-6)
        np.testing.assert_array_equal(item.next_observation["net"], next_observation)
        assert item.reward["net"].dtype == np.float32


def test_add_before_add_first_is_an_error(server):
    adder = NStepTransitionAdder(StopAwareClient(server.localhost_client()), TABLE, 3, DISCOUNT)
    timesteps, *_ = _episode(np.random.default_rng(0), 3, 0.0)
    with pytest.raises(ValueError, match="add_first"):
        adder.add({"net": np.zeros(AGENTS, np.int32)}, timesteps[1])
    with pytest.raises(ValueError, match="n_step"):
        NStepTransitionAdder(server.localhost_client(), TABLE, 0, DISCOUNT)


def test_environment_extras_are_stored_at_both_ends_of_each_transition():
    extras_spec = {"env_state": specs.Array((2,), np.float32)}
    packer = ArrayPacker(reverb_adders.NStepTransitionAdder.signature(
        _spec(), transition_extras_spec(extras_spec)))
    table = reverb.Table(TABLE, reverb.selectors.Fifo(), reverb.selectors.Fifo(), 100,
                         reverb.rate_limiters.MinSize(1), max_times_sampled=1,
                         signature=packer.signature())
    server = reverb.Server([table])
    try:
        adder = NStepTransitionAdder(StopAwareClient(server.localhost_client()), TABLE, 2,
                                     DISCOUNT, packer=packer, environment_extras=True)
        length = 4
        timesteps, *_ = _episode(np.random.default_rng(0), length, 0.0)
        states = [np.full(2, step, np.float32) for step in range(length + 1)]
        with pytest.raises(ValueError, match="extras"):
            adder.add_first(timesteps[0])
        adder.add_first(timesteps[0], {"env_state": states[0]})
        for step, timestep in enumerate(timesteps[1:]):
            adder.add({"net": np.zeros(AGENTS, np.int32)}, timestep,
                      next_environment_extras={"env_state": states[step + 1]})
        adder.flush()
        for start, item in enumerate(_read_all(server, length, packer)):
            np.testing.assert_array_equal(item.extras["env_state"], states[start])
            np.testing.assert_array_equal(item.extras["next_env_state"],
                                          states[min(start + 2, length)])
    finally:
        server.stop()


class SlowToAnswerClient:
    """A Reverb client whose first `failures` new writers time out, as a busy server's do."""

    def __init__(self, failures, error="Deadline Exceeded"):
        self.failures = failures
        self.error = error
        self.calls = 0

    def trajectory_writer(self, num_keep_alive_refs):
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError(self.error)
        return object()


def test_a_new_writer_waits_for_a_server_too_busy_to_answer_until_the_program_stops(monkeypatch):
    import threading

    from mava_systems.nodes import replay
    from mava_systems.nodes.lifecycle import ProgramStopping

    monkeypatch.setattr(replay, "POLL_INTERVAL_MS", 10)
    stop = threading.Event()
    # A server restoring a large checkpoint: an executor starting then used to die.
    busy = SlowToAnswerClient(failures=2)
    client = StopAwareClient(busy, stop)
    client.trajectory_writer(1)
    assert busy.calls == 3
    assert client.calls == 3  # Everything else is the wrapped client's.
    # Other errors are not retried.
    with pytest.raises(RuntimeError, match="Table not found"):
        StopAwareClient(SlowToAnswerClient(failures=1, error="Table not found"),
                        stop).trajectory_writer(1)
    # Still no answer when the program stops: the wait ends there.
    stop.set()
    with pytest.raises(ProgramStopping):
        StopAwareClient(SlowToAnswerClient(failures=10 ** 9), stop).trajectory_writer(1)


class RecordingWriter:
    """A trajectory writer that records how each flush was asked to wait."""

    def __init__(self):
        self.flushes = []
        self.history = [None]
        self.items = 0

    def append(self, data):
        del data

    def create_item(self, table, priority, trajectory):
        del table, priority, trajectory
        self.items += 1

    def flush(self, block_until_num_items=0, timeout_ms=None):
        del timeout_ms
        self.flushes.append((self.items, block_until_num_items))

    def end_episode(self, *args, **kwargs):
        raise AssertionError("ending the writer's episode waits for all of its items")


class RecordingWriterClient:
    def __init__(self, writer):
        self._writer = writer

    def trajectory_writer(self, num_keep_alive_refs):
        del num_keep_alive_refs
        return self._writer


def test_an_episode_end_waits_for_earlier_episodes_items_not_its_own():
    writer = RecordingWriter()
    packer = ArrayPacker(reverb_adders.NStepTransitionAdder.signature(_spec()))
    adder = NStepTransitionAdder(RecordingWriterClient(writer), TABLE, 2, DISCOUNT,
                                 max_in_flight_items=64, packer=packer)
    rng = np.random.default_rng(0)
    for length in (3, 5):
        timesteps, *_ = _episode(rng, length, 0.0)
        adder.add_first(timesteps[0])
        for timestep in timesteps[1:]:
            adder.add({"net": np.zeros(AGENTS, np.int32)}, timestep)
        # At the end: at most this episode's own `length` items may still be in flight.
        assert writer.flushes[-1] == (writer.items, length)
    assert writer.items == 8
    # After each item, the writer waits only beyond `max_in_flight_items`.
    assert all(allowed == 64 for _, allowed in writer.flushes[:2])
    adder.flush()
    assert writer.flushes[-1] == (8, 0)  # `flush` waits for every item.


@pytest.mark.parametrize("packed", [False, True], ids=["columns", "packed"])
def test_items_of_several_transitions_hold_consecutive_ones_across_episodes(packed):
    """With k transitions per item, every k transitions of the stream make one item, in order,
    whatever episode each came from; the last transitions short of k make none."""
    per_item, n_step = 3, 3
    transition_signature = reverb_adders.NStepTransitionAdder.signature(_spec())
    packer = ArrayPacker(transition_signature) if packed else None
    single = packer.signature() if packed else transition_signature
    signature = tree.map_structure(
        lambda spec: tf.TensorSpec([per_item, *spec.shape], spec.dtype, spec.name), single)
    table = reverb.Table(TABLE, reverb.selectors.Fifo(), reverb.selectors.Fifo(), 10_000,
                         reverb.rate_limiters.MinSize(1), max_times_sampled=1,
                         signature=signature)
    server = reverb.Server([table])
    try:
        adder = NStepTransitionAdder(StopAwareClient(server.localhost_client()), TABLE, n_step,
                                     DISCOUNT, packer=packer, transitions_per_item=per_item)
        rng = np.random.default_rng(3)
        expected = []
        for length in (7, 4):  # 11 transitions: 3 items, and 2 left out.
            timesteps, observations, rewards, discounts = _episode(rng, length, 0.0)
            adder.add_first(timesteps[0])
            for step, timestep in enumerate(timesteps[1:]):
                adder.add({"net": np.full(AGENTS, step, np.int32)}, timestep)
            expected.extend(_expected(observations, rewards, discounts, n_step))
        adder.flush()
        client = server.localhost_client()
        assert client.server_info()[TABLE].current_size == 3
        items = [sample.data for sample in client.sample(
            TABLE, num_samples=3, emit_timesteps=False, unpack_as_table_signature=True)]
        if packed:
            items = [tree.map_structure(lambda leaf: leaf.numpy(), packer.unpack(item))
                     for item in items]
        for index, item in enumerate(items):
            for row in range(per_item):
                observation, action, n_step_return, total_discount, next_observation = (
                    expected[index * per_item + row])
                np.testing.assert_array_equal(item.observation["net"][row], observation)
                np.testing.assert_array_equal(item.action["net"][row], np.full(AGENTS, action))
                np.testing.assert_allclose(item.reward["net"][row], n_step_return, rtol=1e-5)
                np.testing.assert_allclose(item.discount["net"][row], total_discount, rtol=1e-6)
                np.testing.assert_array_equal(item.next_observation["net"][row], next_observation)
        # The third item holds the first episode's last transition and the second's first two.
        np.testing.assert_array_equal(items[2].action["net"][:, 0], [6, 0, 1])
    finally:
        server.stop()


def test_transitions_per_item_must_be_positive(server):
    with pytest.raises(ValueError, match="transitions_per_item must be at least 1, got 0"):
        NStepTransitionAdder(server.localhost_client(), TABLE, 3, DISCOUNT, transitions_per_item=0)


def test_adders_sharing_a_writer_write_one_stream_and_wait_for_all_lanes_items():
    """`SharedWriterClient`: the adders of several environments append to one writer, each
    still making its own items, and each wait allows every lane its items in flight."""
    writer = RecordingWriter()
    packer = ArrayPacker(reverb_adders.NStepTransitionAdder.signature(_spec()))
    shared = SharedWriterClient(RecordingWriterClient(writer), num_lanes=3)
    adders = [NStepTransitionAdder(shared, TABLE, 2, DISCOUNT, max_in_flight_items=64,
                                   packer=packer) for _ in range(3)]
    rng = np.random.default_rng(1)
    timesteps, *_ = _episode(rng, 4, 0.0)
    for adder in adders:
        adder.add_first(timesteps[0])
    for timestep in timesteps[1:]:
        for adder in adders:
            adder.add({"net": np.zeros(AGENTS, np.int32)}, timestep)
    assert writer.items == 3 * 4  # Every lane's transitions, each its own item.
    assert {allowed for _, allowed in writer.flushes[:3]} == {3 * 64}
    assert writer.flushes[-1] == (12, 3 * 4)  # An episode's end: 4 items per lane in flight.
