"""The MADQN trainer against a local Reverb server filled by an executor.

One replay server and one trainer are shared by the module (tracing the trainer's
step takes several seconds); each test takes the trainer's step count as it finds it.
"""

import contextlib
import dataclasses
import gc
import glob
import os
import threading
import time
from typing import Any, Dict, List

from acme.utils import counting
import numpy as np
import pytest
import reverb
import tensorflow as tf

from mava_systems import madqn, registry
from mava_systems.nodes import lifecycle, replay
from mava_systems.training import trainer_loop
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.nodes.replay import ReplayIterator
from mava_systems.training.trainer_loop import TrainerLoop
from mava_systems.madqn.builder import REPLAY_TABLE
import wrappers

TARGET_UPDATE_PERIOD = 3
NETWORK = "agent"  # line_world's agents agent_0, agent_1 share one network by type.


class RecordingTrainer(madqn.MADQNTrainer):
    """MADQN's trainer, remembering the last sample it was given after a step (its info)."""

    last_sample = None

    def after_train_step(self, sample, fetches):
        self.last_sample = sample
        super().after_train_step(sample, fetches)


class RecordingClient:
    """A reverb.Client that remembers every priority update sent through it."""

    def __init__(self, client: reverb.Client):
        self._client = client
        self.updates: List[Dict[int, float]] = []

    def mutate_priorities(self, table, updates=None, deletes=None):
        self.updates.append(dict(updates or {}))
        return self._client.mutate_priorities(table, updates=updates, deletes=deletes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("trainer") / "run")
    config = madqn.MADQNConfig(
        min_replay_size=50, max_replay_size=10_000, batch_size=16, samples_per_insert=None,
        prioritized_replay=True, target_update_period=TARGET_UPDATE_PERIOD,
        prefetch_size=0, dataset_parallel_calls=1, transitions_per_item=1)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=run_dir)
    server = reverb.Server(system.replay())
    client = reverb.Client(f"localhost:{server.port}")
    builder = system.builder

    # Fill replay with a random executor.
    executor_networks = builder.make_networks()
    adder = builder.make_adder(client)
    executor = builder.make_executor(executor_networks, ConstantEpsilon(1.0), adder=adder, seed=1)
    environment = system._environment_factory(evaluation=False, seed=1)
    loop = EnvironmentLoop(environment, executor)
    steps_played = sum(loop.run_episode()["episode_length"] for _ in range(8))
    adder.flush()
    assert client.server_info()[REPLAY_TABLE].current_size >= config.min_replay_size

    networks = builder.make_networks()
    builder.trainer_class = RecordingTrainer
    dataset = builder.make_dataset_iterator(client)
    recording_client = RecordingClient(client)
    trainer = builder.make_trainer(networks, dataset, replay_client=recording_client,
                                   counter=counting.Counter(prefix="trainer"), checkpoint=True)
    state = {"system": system, "server": server, "client": client,
             "recording_client": recording_client, "networks": networks, "dataset": dataset,
             "trainer": trainer, "config": config, "steps_played": steps_played}
    yield state
    # Close every stream before stopping the server: with the executor's writer stream open the
    # server's shutdown waits ~5 s. (Freeing the trainer's Reverb dataset iterator can itself
    # take from 0.3 to ~5 s; it is done here, while the server is still up.)
    environment.close()
    adder._writer.close()  # pylint: disable=protected-access
    state.clear()
    del trainer, dataset, recording_client
    gc.collect()
    server.stop()


def numpy_variables(module) -> List[np.ndarray]:
    return [variable.numpy() for variable in module.variables]


def all_equal(a: List[np.ndarray], b: List[np.ndarray]) -> bool:
    assert len(a) == len(b)
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))


def online(ctx) -> List[np.ndarray]:
    return numpy_variables(ctx["networks"].q_networks[NETWORK])


def target(ctx) -> List[np.ndarray]:
    return numpy_variables(ctx["networks"].target_q_networks[NETWORK])


def step_until_remainder(trainer, remainder: int) -> None:
    while trainer.num_steps % TARGET_UPDATE_PERIOD != remainder:
        trainer.step()


def test_replay_holds_n_step_transitions(ctx):
    info = ctx["client"].server_info()[REPLAY_TABLE]
    # One item per step played (the table's own episode count is not kept: the adder does not
    # end the writer's episodes, which would wait for their items).
    assert info.current_size == ctx["steps_played"] >= 50


def test_steps_increase_num_steps(ctx):
    trainer = ctx["trainer"]
    before = trainer.num_steps
    result = trainer.step()
    assert trainer.num_steps == before + 1
    for key in (f"loss/{NETWORK}", f"q_value/{NETWORK}", f"gradient_norm/{NETWORK}"):
        assert np.isfinite(result[key]), key
    assert result["trainer_steps"] == before + 1  # The trainer's counter counts its steps.
    trainer.step()
    trainer.step()
    assert trainer.num_steps == before + 3


def test_a_trainer_reads_a_plain_iterator_of_samples_in_python(ctx):
    builder = ctx["system"].builder
    networks = builder.make_networks()
    samples = [next(ctx["dataset"]) for _ in range(2)]  # Packed, as replay stores them.
    trainer = builder.make_trainer(networks, iter(samples), checkpoint=False)
    before = numpy_variables(networks.q_networks[NETWORK])
    results = [trainer.step(), trainer.step()]
    assert [result["trainer_steps"] for result in results] == [1, 2]
    assert all(result["replay_size"] >= 50 for result in results)
    assert not all_equal(before, numpy_variables(networks.q_networks[NETWORK]))
    with pytest.raises(StopIteration):
        trainer.step()


@contextlib.contextmanager
def line_world_replay(tmp_path, **config_kwargs):
    """(system, client, loop): a MADQN system on line_world (batch 16, no rate limit, no
    prefetching; `config_kwargs` on top), its own Reverb server, and the loop of a random
    executor writing to it. The server stops and the environment closes on exit."""
    config = madqn.MADQNConfig(min_replay_size=50, batch_size=16, samples_per_insert=None,
                               prefetch_size=0, dataset_parallel_calls=1, **config_kwargs)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=str(tmp_path / "run"))
    server = reverb.Server(system.replay())
    environment = system._environment_factory(evaluation=False, seed=1)
    try:
        client = reverb.Client(f"localhost:{server.port}")
        builder = system.builder
        executor = builder.make_executor(builder.make_networks(), ConstantEpsilon(1.0),
                                         adder=builder.make_adder(client), seed=1)
        yield system, client, EnvironmentLoop(environment, executor)
    finally:
        environment.close()
        server.stop()


def test_a_step_waiting_for_its_batch_changes_nothing_until_it_arrives(tmp_path):
    """A compiled step blocked on replay (through sampling timeouts and retries) has not
    counted itself, nor copied a target network, until its batch arrives."""
    with line_world_replay(tmp_path, target_update_period=1) as (system, client, loop):
        builder = system.builder

        def fill_replay():
            for _ in range(8):
                loop.run_episode()

        fill_replay()
        networks = builder.make_networks()
        counter = counting.Counter(prefix="trainer")
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       counter=counter, checkpoint=False)
        trainer.step()  # Traced.
        client.reset(REPLAY_TABLE)
        # The first steps may still take batches the dataset had drawn before the reset.
        for _ in range(5):
            steps_before = trainer.num_steps
            for variable in networks.q_networks[NETWORK].variables:
                variable.assign_add(tf.ones_like(variable))  # Online and target now differ.
            targets_before = numpy_variables(networks.target_q_networks[NETWORK])
            result = {}
            waiting = threading.Thread(target=lambda: result.update(trainer.step()),
                                       daemon=True)
            waiting.start()
            waiting.join(timeout=2.5)  # Two sampling timeouts of replay's empty table.
            if waiting.is_alive():
                break
        assert waiting.is_alive()
        assert trainer.num_steps == steps_before
        assert all_equal(numpy_variables(networks.target_q_networks[NETWORK]), targets_before)

        fill_replay()
        waiting.join(timeout=60)
        assert not waiting.is_alive()
        assert trainer.num_steps == result["trainer_steps"] == steps_before + 1
        assert counter.get_counts()["trainer_steps"] == steps_before + 1
        assert not all_equal(numpy_variables(networks.target_q_networks[NETWORK]),
                             targets_before)  # Copied once the batch came.
        del trainer
        gc.collect()


def test_stop_training_ends_the_steps_though_replay_could_feed_more(tmp_path, monkeypatch):
    """At the step limit the trainer takes no further step, even with batches still to sample
    (as IMPALA's queue has after its executors stopped): the weights the evaluator's final
    round plays are those the checkpoint at the stop saves."""
    stop = threading.Event()
    for module in (trainer_loop, replay, lifecycle):
        monkeypatch.setattr(module, "program_stop_event", lambda: stop)
    with line_world_replay(tmp_path) as (system, client, loop):
        builder = system.builder
        for _ in range(8):
            loop.run_episode()
        networks = builder.make_networks()
        trainer = builder.make_trainer(networks, builder.make_dataset_iterator(client),
                                       counter=counting.Counter(prefix="trainer"),
                                       checkpoint=True)
        running = threading.Thread(target=trainer.run, daemon=True)
        running.start()
        deadline = time.monotonic() + 120
        while trainer.num_steps < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert trainer.num_steps >= 3  # Replay, never emptied by sampling, feeds every step.

        stopped_at = trainer.stop_training(timeout_s=60)
        weights = online({"networks": networks})
        time.sleep(1.5)
        assert trainer.num_steps == stopped_at
        assert all_equal(online({"networks": networks}), weights)
        assert running.is_alive()  # Serving its variables until the program stops.

        stop.set()
        running.join(timeout=60)
        assert not running.is_alive()
        restored = builder.make_trainer(builder.make_networks(),
                                        iter(()), counter=counting.Counter(), checkpoint=True)
        assert restored.num_steps == stopped_at
        del trainer, restored
        gc.collect()


def test_a_step_changes_the_online_network(ctx):
    trainer = ctx["trainer"]
    previous = online(ctx)
    trainer.step()
    assert not all_equal(previous, online(ctx))


def test_target_network_is_copied_every_target_update_period(ctx):
    trainer = ctx["trainer"]
    step_until_remainder(trainer, 0)
    assert all_equal(target(ctx), online(ctx))
    copied = target(ctx)
    for _ in range(TARGET_UPDATE_PERIOD - 1):
        trainer.step()
        assert trainer.num_steps % TARGET_UPDATE_PERIOD != 0
        assert not all_equal(target(ctx), online(ctx))
        assert all_equal(target(ctx), copied)  # The target stays put in between.
    trainer.step()
    assert trainer.num_steps % TARGET_UPDATE_PERIOD == 0
    assert all_equal(target(ctx), online(ctx))
    assert not all_equal(target(ctx), copied)


def test_fresh_networks_start_with_target_equal_to_online(ctx):
    networks = ctx["system"].builder.make_networks()
    for key in networks.q_networks:
        assert all_equal(numpy_variables(networks.q_networks[key]),
                         numpy_variables(networks.target_q_networks[key]))


def test_get_variables_returns_the_online_variables(ctx):
    trainer = ctx["trainer"]
    step_until_remainder(trainer, 1)  # Online and target differ now.
    variables = trainer.get_variables([NETWORK])
    assert isinstance(variables, list) and len(variables) == 1
    served = variables[0]
    assert all(isinstance(v, np.ndarray) for v in served)
    network = ctx["networks"].q_networks[NETWORK]
    assert [v.shape for v in served] == [tuple(v.shape) for v in network.variables]
    assert all_equal(served, online(ctx))
    assert not all_equal(served, target(ctx))
    # A copy, not a view of the live variables.
    trainer.step()
    assert not all_equal(served, online(ctx))
    # The executor side can load them (what a VariableClient does).
    executor_networks = ctx["system"].builder.make_networks()
    for variable, value in zip(executor_networks.q_networks[NETWORK].variables,
                               trainer.get_variables([NETWORK])[0]):
        variable.assign(value)
    assert all_equal(numpy_variables(executor_networks.q_networks[NETWORK]), online(ctx))


def test_get_variables_of_unknown_network_raises(ctx):
    with pytest.raises(KeyError):
        ctx["trainer"].get_variables(["no_such_network"])


def table_priorities(client: reverb.Client, num_samples: int = 3000) -> Dict[int, float]:
    """Key -> priority of the items seen in `num_samples` samples of the table."""
    priorities = {}
    for sample in client.sample(REPLAY_TABLE, num_samples=num_samples, emit_timesteps=False):
        priorities[int(sample.info.key)] = float(sample.info.priority)
    return priorities


def test_prioritized_replay_priorities_change_after_a_step(ctx):
    trainer, recording_client = ctx["trainer"], ctx["recording_client"]
    trainer.step()
    last_update = recording_client.updates[-1]
    sampled_keys = {int(key) for key in trainer.last_sample.info.key.numpy()}
    assert set(last_update) == sampled_keys  # One update per sampled item.
    values = np.array(list(last_update.values()))
    assert np.all(np.isfinite(values)) and np.all(values >= 0)
    assert np.any(values != 1.0)  # Items are inserted with priority 1.

    # The table holds, for every item, the last priority the trainer sent (1 if none).
    latest: Dict[int, float] = {}
    for update in recording_client.updates:
        latest.update(update)
    observed = table_priorities(ctx["client"])
    for key, priority in observed.items():
        assert priority == pytest.approx(latest.get(key, 1.0), rel=1e-6), key
    seen_updated = sampled_keys & set(observed)
    assert len(seen_updated) >= len(sampled_keys) // 2, (len(seen_updated), len(sampled_keys))
    assert any(observed[key] != 1.0 for key in seen_updated)


def test_importance_weights_are_used_with_prioritized_replay(ctx):
    assert ctx["trainer"]._importance_sampling_exponent == pytest.approx(
        ctx["config"].importance_sampling_exponent)


def test_checkpoint_restores_everything_into_a_fresh_trainer(ctx):
    trainer, system = ctx["trainer"], ctx["system"]
    step_until_remainder(trainer, 1)  # Online != target, so each is checked on its own.
    assert not all_equal(online(ctx), target(ctx))
    assert trainer._checkpointing is not None
    assert trainer._checkpointing.restored_from is None  # The run started fresh.
    assert trainer._checkpointing.save(force=True)
    directory = os.path.join(system.run_dir, "checkpoints", "trainer")
    assert os.path.isdir(directory) and any(name.startswith("ckpt-") for name in os.listdir(directory))

    fresh_networks = system.builder.make_networks()
    # Freshly initialised networks differ from the trained ones...
    assert not all_equal(numpy_variables(fresh_networks.q_networks[NETWORK]), online(ctx))
    restored = system.builder.make_trainer(fresh_networks, iter(()), checkpoint=True)
    # ...until the new trainer restores the checkpoint, which it says it did.
    assert restored._checkpointing.restored_from is not None
    assert restored._checkpointing.restored_from.startswith(directory)
    assert restored.num_steps == trainer.num_steps
    for key in ctx["networks"].q_networks:
        assert all_equal(numpy_variables(fresh_networks.q_networks[key]),
                         numpy_variables(ctx["networks"].q_networks[key]))
        assert all_equal(numpy_variables(fresh_networks.target_q_networks[key]),
                         numpy_variables(ctx["networks"].target_q_networks[key]))
        # Optimizer state: Adam's step count now, its slots as soon as they are created
        # (Sonnet creates them lazily on the first update; restoration is deferred until then).
        old, new = trainer._optimizers[key], restored._optimizers[key]
        assert int(new.step.numpy()) == int(old.step.numpy()) == trainer.num_steps
        new._initialize(fresh_networks.q_networks[key].trainable_variables)
        assert len(new.m) == len(old.m) > 0 and len(new.v) == len(old.v)
        assert all_equal([v.numpy() for v in new.m], [v.numpy() for v in old.m])
        assert all_equal([v.numpy() for v in new.v], [v.numpy() for v in old.v])
        assert any(np.any(v.numpy() != 0) for v in new.m)
    assert restored.get_variables([NETWORK])[0][0].shape == online(ctx)[0].shape


def test_trainer_without_checkpointing_does_not_restore(ctx):
    system = ctx["system"]
    assert os.listdir(os.path.join(system.run_dir, "checkpoints", "trainer"))  # A checkpoint exists...
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(()), checkpoint=False)
    assert trainer._checkpointing is None
    assert trainer.num_steps == 0  # ...but is not restored without checkpointing.


# --------------------------------------------------------------------------- replay tables (no server)


@pytest.mark.parametrize("transitions_per_item", [1, 4])
@pytest.mark.parametrize("prioritized", [False, True])
def test_replay_table_and_trainer_follow_prioritized_replay(tmp_run_dir, prioritized,
                                                            transitions_per_item):
    config = madqn.MADQNConfig(prioritized_replay=prioritized, samples_per_insert=8.0,
                               min_replay_size=100, max_replay_size=5000, batch_size=32,
                               transitions_per_item=transitions_per_item)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=tmp_run_dir)
    (table,) = system.replay()
    info = table.info
    assert table.name == REPLAY_TABLE
    # Sizes in items of `transitions_per_item` transitions.
    assert info.max_size == 5000 // transitions_per_item
    assert info.remover_options.fifo
    if prioritized:
        assert info.sampler_options.prioritized.priority_exponent == pytest.approx(0.6)
    else:
        assert info.sampler_options.uniform
    # Rate limited to 8 sampled items per inserted one (so 8 samples per transition) once 100
    # transitions are in, with a +-10% buffer.
    items = 100 // transitions_per_item
    limiter = info.rate_limiter_info
    assert limiter.samples_per_insert == 8.0
    assert limiter.min_size_to_sample == items
    assert (limiter.min_diff, limiter.max_diff) == pytest.approx((0.9 * 8 * items, 1.1 * 8 * items))
    assert system.builder.batch_size == 32 // transitions_per_item
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(()), checkpoint=False)
    expected = config.importance_sampling_exponent if prioritized else None
    assert trainer._importance_sampling_exponent == expected  # Uniform replay: no priority updates.


def test_no_samples_per_insert_means_only_a_minimum_size(tmp_run_dir):
    config = madqn.MADQNConfig(samples_per_insert=None, min_replay_size=10, transitions_per_item=4)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=tmp_run_dir)
    limiter = system.replay()[0].info.rate_limiter_info
    assert limiter.min_size_to_sample == 3  # Items of 4 transitions holding at least 10.
    assert limiter.samples_per_insert == 1.0  # reverb's MinSize limiter.


# --------------------------------------------------------------------------- several steps per call

STEPS_PER_CALL = 3  # = TARGET_UPDATE_PERIOD: one call of fresh trainers crosses a target update.


def system_with_steps_per_call(ctx, run_dir: str, steps_per_call: int = STEPS_PER_CALL):
    """The fixture's system (same config) taking `steps_per_call` trainer steps per call."""
    config = dataclasses.replace(ctx["config"], trainer_steps_per_call=steps_per_call)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=run_dir)
    system.builder.trainer_class = RecordingTrainer
    return system


def repeated(samples: List[Any]) -> tf.data.Dataset:
    """A dataset of `samples` in turn, then again."""
    dataset = tf.data.Dataset.from_tensors(samples[0])
    for sample in samples[1:]:
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(sample))
    return dataset.repeat()


def fixed_batches(samples: List[Any]) -> ReplayIterator:
    """A replay iterator giving `samples` in turn, then again (compiled as replay's is)."""
    return ReplayIterator(lambda _: repeated(samples), stop_event=threading.Event())


def test_one_call_takes_steps_per_call_steps_counted_as_trainer_steps(ctx, tmp_path):
    system = system_with_steps_per_call(ctx, str(tmp_path / "run"))
    recording_client = RecordingClient(ctx["client"])
    counter = counting.Counter(prefix="trainer")
    trainer = system.builder.make_trainer(
        system.builder.make_networks(), system.builder.make_dataset_iterator(ctx["client"]),
        replay_client=recording_client, counter=counter, checkpoint=False)
    assert trainer.steps_per_call == STEPS_PER_CALL
    for call in (1, 2):
        result = trainer.step()
        assert trainer.num_steps == result["trainer_steps"] == call * STEPS_PER_CALL
        assert counter.get_counts()["trainer_steps"] == call * STEPS_PER_CALL
        assert np.isfinite(result[f"loss/{NETWORK}"])
        assert result["replay_size"] >= 50
    # Every batch's priorities are sent: the K batches' keys, concatenated.
    keys = trainer.last_sample.info.key.numpy()
    assert keys.shape == (STEPS_PER_CALL * ctx["config"].batch_size,)
    assert set(recording_client.updates[-1]) == {int(key) for key in keys}


def test_steps_per_call_train_as_as_many_sequential_steps(ctx, tmp_path):
    samples = [next(ctx["dataset"]) for _ in range(STEPS_PER_CALL)]
    one = system_with_steps_per_call(ctx, str(tmp_path / "one"), steps_per_call=1).builder
    several = system_with_steps_per_call(ctx, str(tmp_path / "several")).builder
    networks_one, networks_several = one.make_networks(), several.make_networks()
    for source, destination in ((networks_one.q_networks, networks_several.q_networks),
                                (networks_one.target_q_networks,
                                 networks_several.target_q_networks)):
        for variable, value in zip(destination[NETWORK].variables, source[NETWORK].variables):
            variable.assign(value)
    trainer_one = one.make_trainer(networks_one, fixed_batches(samples), checkpoint=False)
    trainer_several = several.make_trainer(networks_several, fixed_batches(samples),
                                           checkpoint=False)
    results = [trainer_one.step() for _ in range(STEPS_PER_CALL)]
    result = trainer_several.step()
    assert trainer_one.num_steps == trainer_several.num_steps == STEPS_PER_CALL
    for a, b in ((networks_one.q_networks, networks_several.q_networks),
                 (networks_one.target_q_networks, networks_several.target_q_networks)):
        for x, y in zip(numpy_variables(a[NETWORK]), numpy_variables(b[NETWORK])):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    # The target update at step K happened inside the call.
    assert all_equal(numpy_variables(networks_several.target_q_networks[NETWORK]),
                     numpy_variables(networks_several.q_networks[NETWORK]))
    # The row logged per call holds its last step's scalars.
    for key in (f"loss/{NETWORK}", f"q_value/{NETWORK}", f"gradient_norm/{NETWORK}"):
        assert result[key] == pytest.approx(results[-1][key], rel=1e-5), key


def test_a_resumed_trainer_with_steps_per_call_continues_the_counts(ctx, tmp_path):
    system = system_with_steps_per_call(ctx, str(tmp_path / "run"))
    first = system.builder.make_trainer(
        system.builder.make_networks(), system.builder.make_dataset_iterator(ctx["client"]),
        checkpoint=True)
    first.step()
    assert first._checkpointing.save(force=True)
    counter = counting.Counter(prefix="trainer")
    resumed = system.builder.make_trainer(
        system.builder.make_networks(), system.builder.make_dataset_iterator(ctx["client"]),
        counter=counter, checkpoint=True)
    assert resumed.num_steps == STEPS_PER_CALL
    assert resumed.step()["trainer_steps"] == 2 * STEPS_PER_CALL
    # The counter is given the steps this trainer took, not the restored ones.
    assert counter.get_counts()["trainer_steps"] == STEPS_PER_CALL


def test_steps_per_call_read_from_a_plain_iterator_in_python(ctx, tmp_path):
    system = system_with_steps_per_call(ctx, str(tmp_path / "run"), steps_per_call=2)
    samples = [next(ctx["dataset"]) for _ in range(5)]
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(samples),
                                          checkpoint=False)
    assert [trainer.step()["trainer_steps"] for _ in range(2)] == [2, 4]
    assert trainer.last_sample.info.key.shape == (2 * ctx["config"].batch_size,)
    with pytest.raises(StopIteration):  # One sample left: not enough for a call.
        trainer.step()


class StatisticsTrainer(TrainerLoop):
    """A trainer logging a statistic of shape [1] (as MPO's per-dimension duals on a
    one-dimensional action) and a priority per item, both its step count."""

    def __init__(self, dataset: Any, steps_per_call: int):
        self._state = {"num_steps": tf.Variable(0, dtype=tf.int64)}
        super().__init__(dataset, steps_per_call=steps_per_call)

    @property
    def state(self) -> Dict[str, Any]:
        return self._state

    def train_step(self, sample: Any) -> Dict[str, tf.Tensor]:
        self._state["num_steps"].assign_add(1)
        step = tf.cast(self._state["num_steps"], tf.float32)
        return {"temperature": tf.fill([1], step), "loss": step,
                "priorities": tf.fill(tf.shape(sample.info.key), step)}

    def after_train_step(self, sample: Any, fetches: Dict[str, tf.Tensor]) -> None:
        self.sent_priorities = fetches.pop("priorities").numpy()


@pytest.mark.parametrize("compiled", [True, False], ids=["replay_iterator", "plain_iterator"])
def test_several_steps_per_call_log_the_last_steps_statistics_whatever_their_shape(ctx,
                                                                                    compiled):
    samples = [next(ctx["dataset"]) for _ in range(4)]
    trainer = StatisticsTrainer(fixed_batches(samples) if compiled else iter(samples),
                                steps_per_call=2)
    sample, fetches = trainer.sample_and_train()
    assert fetches["temperature"].numpy().tolist() == [2.0] and float(fetches["loss"]) == 2.0
    # Per-item values and the batches' info cover both steps' batches.
    batch_size = ctx["config"].batch_size
    assert fetches["priorities"].numpy().tolist() == [1.0] * batch_size + [2.0] * batch_size
    assert sample.info.key.shape == (2 * batch_size,)
    row = trainer.step()
    assert row["temperature"] == 4.0 and row["loss"] == 4.0 and row["trainer_steps"] == 4
    assert trainer.sent_priorities.tolist() == [3.0] * batch_size + [4.0] * batch_size


@pytest.mark.parametrize("steps_per_call", [0, -1, 2.5, True])
def test_steps_per_call_must_be_a_positive_integer(ctx, steps_per_call):
    builder = ctx["system"].builder
    with pytest.raises(ValueError, match="steps_per_call"):
        madqn.MADQNTrainer(builder.make_networks(), iter(()), discount=0.9, learning_rate=1e-3,
                           max_gradient_norm=1.0, target_update_period=1,
                           steps_per_call=steps_per_call)


SYSTEM_ENVS = [("madqn", "debug/line_world_v0"), ("vdn", "debug/line_world_v0"),
               ("qmix", "debug/line_world_v0"), ("mappo", "debug/line_world_v0"),
               ("happo", "debug/line_world_v0"),
               ("maddpg", "debug/reach_v0"), ("mad4pg", "debug/reach_v0"), ("matd3", "debug/reach_v0"),
               ("masac", "debug/reach_v0"), ("isac", "debug/reach_v0"),
               ("dqn", "gymnasium/CartPole-v1"), ("r2d2", "gymnasium/CartPole-v1"),
               ("impala", "gymnasium/CartPole-v1"), ("dmpo", "gymnasium/Pendulum-v1")]


@pytest.mark.parametrize("system_name,env", SYSTEM_ENVS, ids=[name for name, _ in SYSTEM_ENVS])
def test_every_systems_trainer_takes_the_configs_steps_per_call(tmp_path, system_name, env):
    system_class = registry.system_class(system_name)
    system = system_class(wrappers.make_environment_factory(env),
                          config=system_class.config_class(trainer_steps_per_call=2),
                          run_dir=str(tmp_path / "run"))
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(()),
                                          checkpoint=False)
    assert trainer.steps_per_call == 2


class SlowlyBuiltTrainer(TrainerLoop):
    """A trainer whose first step, while traced, makes a variable and takes `build_s` more
    (as an optimizer making its slots does, on a busy machine)."""

    def __init__(self, dataset: Any, build_s: float, make_checkpointing: Any):
        self._state = {"num_steps": tf.Variable(0, dtype=tf.int64)}
        self.tracing = threading.Event()
        self.traced_at = None
        self._build_s = build_s
        self._slot = None
        super().__init__(dataset, make_checkpointing=make_checkpointing)

    @property
    def state(self) -> Dict[str, Any]:
        return self._state

    @tf.function
    def train_step(self, sample: Any) -> Dict[str, tf.Tensor]:
        if self._slot is None:  # Python, run while traced.
            self.tracing.set()
            self._slot = tf.Variable(0.0)
            time.sleep(self._build_s)
            self.traced_at = time.monotonic()
        self._slot.assign_add(1.0)
        return {"loss": self._slot.read_value() + 0.0 * tf.reduce_sum(
            tf.cast(sample.info.key, tf.float32)), "num_steps": self.count_step(after=self._slot)}


class RecordingCheckpointing:
    """Records when it was asked to save."""

    def __init__(self):
        self.saved_at: List[float] = []

    def save(self, force: bool = False) -> None:
        self.saved_at.append(time.monotonic())


@pytest.mark.parametrize("compiled", [True, False], ids=["replay_iterator", "plain_iterator"])
def test_the_checkpoint_at_the_stop_waits_for_a_first_step_being_built(ctx, compiled):
    """Else it could save the step's new variables without their values (a run stopped while
    its trainer traced its first step could not be resumed: 'Key ... not found in checkpoint')."""
    samples = [next(ctx["dataset"]) for _ in range(2)]
    checkpointing = RecordingCheckpointing()
    trainer = SlowlyBuiltTrainer(fixed_batches(samples) if compiled else iter(samples),
                                 build_s=1.5, make_checkpointing=lambda state: checkpointing)
    errors = []

    def step():
        try:
            trainer.sample_and_train()
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)
            trainer.tracing.set()

    stepping = threading.Thread(target=step, daemon=True)
    stepping.start()
    assert trainer.tracing.wait(60) and not errors, errors
    trainer.save_at_stop()
    stepping.join(60)
    assert not errors, errors
    assert trainer.traced_at is not None and len(checkpointing.saved_at) == 1
    assert checkpointing.saved_at[0] >= trainer.traced_at
    trainer.save_at_stop()  # Once built, nothing is waited for.
    assert len(checkpointing.saved_at) == 2


def test_a_fresh_trainer_saves_its_initial_state_and_a_restored_one_does_not(ctx, tmp_path):
    """So that a run stopped while its first step is being built (when the checkpoint at the
    stop is skipped) still has a complete trainer checkpoint to resume from."""
    samples = [next(ctx["dataset"]) for _ in range(2)]
    replay_requests = []

    def make_checkpointing(state):
        return Checkpointing(state, str(tmp_path), "trainer",
                             before_save=lambda: replay_requests.append(1) or {})

    fresh = SlowlyBuiltTrainer(iter(samples), build_s=0.0, make_checkpointing=make_checkpointing)
    fresh.save_initial_state()
    checkpoints = glob.glob(str(tmp_path / "checkpoints" / "trainer" / "ckpt-*.index"))
    assert len(checkpoints) == 1 and not replay_requests  # Replay is not asked to save.
    fresh.sample_and_train()
    assert fresh.num_steps == 1

    restored = SlowlyBuiltTrainer(iter(samples), build_s=0.0, make_checkpointing=make_checkpointing)
    assert restored.num_steps == 0  # The initial state: the step after it was not saved.
    restored.save_initial_state()
    assert len(glob.glob(str(tmp_path / "checkpoints" / "trainer" / "ckpt-*.index"))) == 1
    restored.sample_and_train()  # The first step is built on the restored state.
    assert restored.num_steps == 1


def slowly(samples: List[Any], delay_s: float) -> ReplayIterator:
    """`fixed_batches(samples)`, each batch arriving `delay_s` after it is asked for."""
    def make_dataset(_: int) -> tf.data.Dataset:
        def wait(index):
            time.sleep(delay_s)
            return index
        delays = tf.data.Dataset.range(1).repeat().map(
            lambda index: tf.py_function(wait, [index], tf.int64))
        return tf.data.Dataset.zip((delays, repeated(samples))).map(lambda _, sample: sample)
    return ReplayIterator(make_dataset, stop_event=threading.Event())


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_the_trainer_logs_how_long_its_steps_waited_for_batches(ctx, tmp_path, compiled):
    """`batch_wait_s`: the seconds the steps waited for sampled batches, all K of a call."""
    system = system_with_steps_per_call(ctx, str(tmp_path / "run"), steps_per_call=2)
    samples = [next(ctx["dataset"]) for _ in range(2)]
    delay_s = 0.3

    def delayed():
        while True:
            for sample in samples:
                time.sleep(delay_s)
                yield sample

    trainer = system.builder.make_trainer(system.builder.make_networks(),
                                          slowly(samples, delay_s) if compiled else delayed(),
                                          checkpoint=False)
    trainer.step()  # Built (traced) with its first batches.
    waited_before = trainer.batch_wait_s
    result = trainer.step()
    waited = result["batch_wait_s"] - waited_before
    assert result["batch_wait_s"] == trainer.batch_wait_s
    assert 2 * delay_s * 0.9 <= waited <= result["step_time_s"]


def test_items_of_several_transitions_are_weighted_and_prioritised_per_item(tmp_run_dir):
    """Each item's importance weight applies to each of its transitions, and its new priority
    is the highest of theirs."""
    config = madqn.MADQNConfig(prioritized_replay=True, transitions_per_item=2, batch_size=4,
                               importance_sampling_exponent=1.0)
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         config=config, run_dir=tmp_run_dir)
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(()),
                                          checkpoint=False)
    assert trainer.transitions_per_item == 2
    info = reverb.SampleInfo(*[tf.constant([1, 2], tf.uint64) if name == "key" else
                               tf.constant([0.5, 0.25], tf.float64) if name == "probability"
                               else tf.constant([0, 0]) for name in reverb.SampleInfo._fields])
    weights = trainer.importance_weights(reverb.ReplaySample(info=info, data=()))
    np.testing.assert_allclose(weights.numpy(), [0.5, 0.5, 1.0, 1.0])
    priorities = trainer.item_priorities(tf.constant([1.0, 3.0, 2.0, 0.5]))
    np.testing.assert_allclose(priorities.numpy(), [3.0, 2.0])
