"""`jit_compile` (every system's config): the trainer step compiled with XLA computes what
TensorFlow's graph computes, for every trainer family, and a network XLA cannot compile fails
with an error naming the switch.

One trainer per family takes the same step from the same state twice, once in TensorFlow's
graph (`train_step`) and once as the trainer runs it with `jit_compile=True`
(`compiled_train_step`), on one fixed batch of replay; small networks keep XLA's compiles short.
"""

import dataclasses
import gc
import inspect
import threading
from typing import Any, Dict, List

import numpy as np
import pytest
import reverb
import sonnet as snt
import tensorflow as tf

from mava_systems import registry
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.acting.exploration import ConstantEpsilon
import wrappers

MADQN_SMALL = dict(hidden_sizes=(16,), batch_size=16, min_replay_size=20, samples_per_insert=None,
                   prefetch_size=0)
RECURRENT_SMALL = dict(recurrent=True, sequence_batch_size=8, rnn_hidden_size=8,
                       sequence_length=6, burn_in_length=2, n_step=2)
# A queue with room for every sequence of `fixed_batch`'s random play (it would block).
SEQUENCES_SMALL = dict(hidden_sizes=(16,), batch_size=4, sequence_length=5, max_queue_size=1000)
# One epoch of one minibatch: XLA's random numbers (Philox, as TensorFlow's, but not the same
# stream) shuffle the batch in another order, which then changes nothing.
MAPPO_SMALL = dict(SEQUENCES_SMALL, num_epochs=1, num_minibatches=1)
# (system, environment, config): a system of every trainer family (MADQN's: its per-network
# loss, a joint loss with a mixer, and sequences; MADDPG's with MAD4PG's categorical critic).
CASES = {
    "madqn": ("madqn", "debug/two_step_v0", MADQN_SMALL),
    "qmix": ("qmix", "debug/two_step_v0", dict(MADQN_SMALL, mixing_embed_dim=8,
                                               hypernet_hidden_size=8)),
    "recurrent_qmix": ("qmix", "debug/line_world_v0", dict(MADQN_SMALL, **RECURRENT_SMALL,
                                                          mixing_embed_dim=8,
                                                          hypernet_hidden_size=8)),
    "mad4pg": ("mad4pg", "debug/reach_v0", dict(
        policy_hidden_sizes=(16,), critic_hidden_sizes=(16,), batch_size=16, min_replay_size=20,
        samples_per_insert=None, prefetch_size=0)),
    "mappo": ("mappo", "debug/line_world_v0", MAPPO_SMALL),
    "recurrent_mappo": ("mappo", "debug/line_world_v0", dict(
        MAPPO_SMALL, recurrent=True, rnn_hidden_size=8, chunk_length=2)),
    "impala": ("impala", "gymnasium/CartPole-v1", SEQUENCES_SMALL),
    "dmpo": ("dmpo", "gymnasium/Pendulum-v1", dict(
        policy_hidden_sizes=(16,), critic_hidden_sizes=(16,), batch_size=16, min_replay_size=20,
        samples_per_insert=None, prefetch_size=0, num_samples=4)),
    "r2d2": ("r2d2", "gymnasium/CartPole-v1", dict(
        hidden_sizes=(16,), lstm_size=8, batch_size=4, burn_in_length=2, trace_length=4,
        replay_period=2, n_step=2, min_replay_size=4, samples_per_insert=None, prefetch_size=0)),
}


# DMPO's losses average over actions sampled from its policies: XLA draws other samples (its
# random number generator is not TensorFlow's), so its step is compared by its effect only.
SAMPLES_ACTIONS = ("dmpo",)


def make_system(case: str, run_dir: str, **overrides: Any) -> Any:
    name, environment, config = CASES[case]
    system_class = registry.system_class(name)
    return system_class(wrappers.make_environment_factory(environment),
                        config=system_class.config_class(**{**config, **overrides}),
                        run_dir=run_dir)


# Steps of random play `fixed_batch` plays at least (or 30 episodes).
RANDOM_PLAY_STEPS = 300


def fixed_batch(system: Any, unpacked: bool = True) -> Any:
    """One batch sampled from a replay of random play (unpacked as the trainer unpacks it, or
    as sampled)."""
    builder = system.builder
    server = reverb.Server(system.replay())
    client = reverb.Client(f"localhost:{server.port}")
    adder = builder.make_adder(client)
    try:
        kwargs: Dict[str, Any] = {"adder": adder, "seed": 0}
        if "exploration_schedule" in inspect.signature(builder.make_executor).parameters:
            kwargs["exploration_schedule"] = ConstantEpsilon(1.0)
        executor = builder.make_executor(builder.make_networks(), **kwargs)
        loop = EnvironmentLoop(system.environment_factory(seed=0), executor,
                               stop_event=threading.Event())
        # 30 episodes, or fewer long ones (Pendulum's have 200 steps): enough items for a batch.
        steps = 0
        for _ in range(30):
            steps += loop.run_episode()["episode_length"]
            if steps >= RANDOM_PLAY_STEPS:
                break
        del loop, executor
        sample = next(builder.make_dataset_iterator(client))
        unpack = builder.unpack_replay_items()
        if unpack is None or not unpacked:
            return sample
        return sample._replace(data=unpack(sample.data))
    finally:
        writer = getattr(adder, "_writer", None)
        if writer is not None:
            writer.close()
        del adder
        gc.collect()
        server.stop()


def trainer_variables(trainer: Any) -> List[tf.Variable]:
    """Every variable a trainer step reads or writes: networks, trainer modules, optimiser
    slots, counters and random generators' states, in a fixed order."""
    found: List[tf.Variable] = []
    seen = set()

    def visit(value: Any) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, tf.Variable):
            found.append(value)
        elif isinstance(value, tf.random.Generator):
            found.append(value.state)
        elif isinstance(value, tf.Module):
            for variable in value.variables:
                visit(variable)
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                visit(value[key])
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif dataclasses.is_dataclass(value) or type(value).__module__.startswith("mava_systems"):
            visit(dict(vars(value)) if hasattr(value, "__dict__") else
                  [getattr(value, field) for field in value._fields])

    visit(vars(trainer))
    return found


def run_step(step: Any, batch: Any) -> Dict[str, np.ndarray]:
    return {name: np.asarray(value) for name, value in step(batch).items()}


@pytest.mark.parametrize("case", list(CASES))
def test_the_xla_step_gives_the_graph_steps_losses_and_weights(tmp_path, case):
    system = make_system(case, str(tmp_path), jit_compile=True)
    batch = fixed_batch(system)
    builder = system.builder
    trainer = builder.make_trainer(builder.make_networks(), iter(()), checkpoint=False)
    assert trainer.jit_compile
    # A first step makes every variable (optimiser slots, lazily built modules); the step
    # compared starts from the state it left.
    trainer.train_step(batch)
    variables = trainer_variables(trainer)
    start = [variable.numpy() for variable in variables]
    graph_fetches = run_step(trainer.train_step, batch)
    graph_after = [variable.numpy() for variable in variables]
    for variable, value in zip(variables, start):
        variable.assign(value)
    xla_fetches = run_step(trainer.compiled_train_step, batch)
    xla_after = [variable.numpy() for variable in variables]

    assert len(trainer_variables(trainer)) == len(variables)  # XLA made none of its own.
    assert graph_fetches.keys() == xla_fetches.keys()
    if case in SAMPLES_ACTIONS:
        # XLA's samples differ, and the step's size follows them (up to 10x for a weight's
        # optimiser slots): the XLA step moves exactly the variables the graph step moves.
        assert all(np.isfinite(value).all() for value in xla_fetches.values())
        for variable, graph_value, xla_value, before in zip(variables, graph_after, xla_after,
                                                           start):
            assert np.isfinite(xla_value).all(), variable.name
            assert np.array_equal(graph_value, before) == np.array_equal(xla_value, before), \
                variable.name
        return
    for name, value in graph_fetches.items():
        np.testing.assert_allclose(xla_fetches[name], value, rtol=1e-4,
                                   atol=1e-5, err_msg=name)
    changed = 0
    for index, (graph_value, xla_value, before) in enumerate(zip(graph_after, xla_after, start)):
        np.testing.assert_allclose(xla_value, graph_value, rtol=1e-4, atol=1e-5,
                                   err_msg=variables[index].name)
        changed += int(not np.array_equal(graph_value, before))
    assert changed >= len(variables) // 3, (changed, len(variables))  # The step trained.


class ThroughStrings(snt.Module):
    """A Q-network whose outputs go through strings: an operation XLA has no kernel for."""

    def __init__(self, network: snt.Module):
        super().__init__()
        self._network = network

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        outputs = self._network(inputs)
        text_lengths = tf.strings.length(tf.strings.as_string(outputs))  # Gradients skip it.
        return outputs + 0.0 * tf.cast(text_lengths, tf.float32)


def test_a_network_xla_cannot_compile_fails_naming_jit_compile(tmp_path):
    system = make_system("madqn", str(tmp_path), jit_compile=True)
    batch = fixed_batch(system, unpacked=False)
    builder = system.builder
    networks = builder.make_networks()
    for key in networks.q_networks:
        networks.q_networks[key] = ThroughStrings(networks.q_networks[key])
        networks.target_q_networks[key] = ThroughStrings(networks.target_q_networks[key])
    trainer = builder.make_trainer(networks, iter([batch]), checkpoint=False)
    with pytest.raises(ValueError, match="jit_compile=False") as error:
        trainer.step()
    message = str(error.value)
    assert "XLA" in message and "AsString" in message and len(message) < 600, message
    # The same networks train in TensorFlow's graph.
    builder.config.jit_compile = False
    graph_trainer = builder.make_trainer(networks, iter([batch]), checkpoint=False)
    assert not graph_trainer.jit_compile
    result = graph_trainer.step()
    assert result["trainer_steps"] == 1 and all(
        np.isfinite(value) for name, value in result.items() if name.startswith("loss"))
