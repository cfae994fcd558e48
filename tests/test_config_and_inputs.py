"""MADQNConfig validation and bad inputs to MADQN, all caught before any process starts."""

import dataclasses
import math
import os
import re

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

import wrappers
from mava_systems import madqn, registry
from mava_systems.madqn import MADQNConfig

RANGED_FIELDS = [field for field in dataclasses.fields(MADQNConfig) if "low" in field.metadata]


def is_int_field(field: dataclasses.Field) -> bool:
    """An integer field: its default is an integer, or (an optional one) it says so."""
    return field.metadata.get("integer") or (isinstance(field.default, int)
                                             and not isinstance(field.default, bool))


def outside_values(field: dataclasses.Field):
    """Values just outside the field's range, on each bounded side."""
    meta = field.metadata
    values = []
    if meta["low"] is not None:
        low = meta["low"]
        if not meta["low_inclusive"]:
            values.append(int(low) if is_int_field(field) else float(low))
        else:
            values.append(int(low) - 1 if is_int_field(field) else math.nextafter(float(low), -math.inf))
    if meta["high"] is not None:
        high = meta["high"]
        if not meta["high_inclusive"]:
            values.append(int(high) if is_int_field(field) else float(high))
        else:
            values.append(int(high) + 1 if is_int_field(field) else math.nextafter(float(high), math.inf))
    return values


def boundary_values(field: dataclasses.Field):
    """The inclusive bounds, which must be accepted."""
    meta = field.metadata
    values = []
    for bound, inclusive in ((meta["low"], meta["low_inclusive"]), (meta["high"], meta["high_inclusive"])):
        if bound is not None and inclusive:
            values.append(int(bound) if is_int_field(field) else float(bound))
    return values


def with_value(name, value):
    """Config kwargs setting `name`, plus whatever keeps the other cross-field checks happy."""
    kwargs = {name: value}
    if name == "max_replay_size":
        kwargs["min_replay_size"] = 1
    if name == "sequence_length":
        kwargs["burn_in_length"] = 0
    if name == "batch_size":
        kwargs["transitions_per_item"] = 1  # A batch is whole items.
    if name == "transitions_per_item":
        # A valid batch for a valid value (an invalid one must be named itself).
        kwargs["batch_size"] = value if type(value) is int and value > 0 else 256
    return kwargs


def test_a_batch_must_be_whole_replay_items():
    with pytest.raises(ValueError, match=r"batch_size \(250\) must be a multiple of "
                                         r"transitions_per_item \(4\)"):
        MADQNConfig(batch_size=250, transitions_per_item=4)
    assert MADQNConfig(batch_size=250, transitions_per_item=5).transitions_per_item == 5
    # Recurrent agents store sequences: the transitions per item play no part.
    assert MADQNConfig(recurrent=True, batch_size=250, transitions_per_item=4).recurrent


def test_default_config_is_valid():
    config = MADQNConfig()
    assert config.hidden_sizes == (64, 64)
    assert config.samples_per_insert == 32.0


def test_every_ranged_field_is_covered():
    """The range metadata exists where expected (guards the parametrisation below)."""
    names = {field.name for field in RANGED_FIELDS}
    assert {"discount", "n_step", "batch_size", "learning_rate", "max_gradient_norm",
            "target_update_period", "min_replay_size", "max_replay_size", "samples_per_insert",
            "priority_exponent", "importance_sampling_exponent", "prefetch_size",
            "dataset_parallel_calls", "variable_update_period", "evaluation_interval_s",
            "evaluation_episodes", "checkpoint_interval_s", "max_checkpoints_to_keep",
            "terminal_log_interval_s", "trainer_steps_per_call", "seed"} <= names
    for field in RANGED_FIELDS:
        assert outside_values(field), field.name  # Every ranged field has at least one bound.
        # And the default lies in its range.
        getattr(MADQNConfig(), field.name)


def test_every_field_of_every_shipped_config_has_help_text():
    """Each field's `doc` is its command-line flag's help (`launch.define_config_flags`)."""
    registry.load_builtin_systems()
    config_classes = {registry.system_class(name).config_class
                      for name in registry.system_names()}
    assert MADQNConfig in config_classes and len(config_classes) >= 10
    undocumented = sorted(f"{config_class.__name__}.{field.name}"
                          for config_class in config_classes
                          for field in dataclasses.fields(config_class)
                          if not field.metadata.get("doc", "").strip())
    assert undocumented == []


@pytest.mark.parametrize("field", RANGED_FIELDS, ids=lambda f: f.name)
def test_values_just_outside_the_range_raise_naming_the_field(field):
    for value in outside_values(field):
        with pytest.raises(ValueError, match=rf"\b{field.name}\b") as error:
            MADQNConfig(**with_value(field.name, value))
        assert "MADQNConfig" in str(error.value)


@pytest.mark.parametrize("field", RANGED_FIELDS, ids=lambda f: f.name)
def test_inclusive_bounds_are_accepted(field):
    for value in boundary_values(field):
        config = MADQNConfig(**with_value(field.name, value))
        assert getattr(config, field.name) == value


@pytest.mark.parametrize("field", [f for f in RANGED_FIELDS if not is_int_field(f)], ids=lambda f: f.name)
def test_nan_is_rejected(field):
    with pytest.raises(ValueError, match=rf"\b{field.name}\b"):
        MADQNConfig(**{field.name: float("nan")})


@pytest.mark.parametrize("field", [f for f in RANGED_FIELDS if is_int_field(f)], ids=lambda f: f.name)
def test_float_for_an_int_field_raises(field):
    default = field.default if field.default is not None else int(field.metadata["low"])
    for value in (float(default), default + 0.5):
        with pytest.raises(ValueError, match=rf"\b{field.name}\b"):
            MADQNConfig(**with_value(field.name, value))


@pytest.mark.parametrize("field", RANGED_FIELDS, ids=lambda f: f.name)
def test_non_numbers_raise(field):
    for value in (str(field.default), "abc", True, [field.default]):
        with pytest.raises(ValueError, match=rf"\b{field.name}\b"):
            MADQNConfig(**with_value(field.name, value))


@pytest.mark.parametrize("field", [f for f in RANGED_FIELDS if not f.metadata["optional"]],
                         ids=lambda f: f.name)
def test_none_is_rejected_unless_optional(field):
    with pytest.raises(ValueError, match=rf"\b{field.name}\b"):
        MADQNConfig(**{field.name: None})


def test_samples_per_insert_may_be_none():
    assert MADQNConfig(samples_per_insert=None).samples_per_insert is None


def test_ints_are_accepted_for_float_fields():
    config = MADQNConfig(discount=1, learning_rate=1, checkpoint_interval_s=60)
    assert config.discount == 1 and config.learning_rate == 1


def test_numpy_integers_are_accepted_for_int_fields():
    assert MADQNConfig(n_step=np.int64(3)).n_step == 3


def test_max_replay_size_below_min_replay_size_raises():
    with pytest.raises(ValueError, match="max_replay_size.*min_replay_size"):
        MADQNConfig(min_replay_size=100, max_replay_size=99)
    with pytest.raises(ValueError, match="max_replay_size"):
        MADQNConfig(max_replay_size=999)  # Below the default min_replay_size of 1000.
    assert MADQNConfig(min_replay_size=100, max_replay_size=100).max_replay_size == 100


@pytest.mark.parametrize("hidden_sizes", [(), [], (0,), (-1, 64), (64, 0), (64.0,), ("64",), (64, None),
                                          None, "64"])
def test_bad_hidden_sizes_raise(hidden_sizes):
    with pytest.raises(ValueError, match="hidden_sizes"):
        MADQNConfig(hidden_sizes=hidden_sizes)


def test_int_hidden_sizes_raise_value_error():
    with pytest.raises(ValueError, match="hidden_sizes"):
        MADQNConfig(hidden_sizes=64)


def test_bool_hidden_sizes_raise():
    with pytest.raises(ValueError, match="hidden_sizes"):
        MADQNConfig(hidden_sizes=(True, 64))


def test_hidden_sizes_list_becomes_a_tuple():
    assert MADQNConfig(hidden_sizes=[32, 16]).hidden_sizes == (32, 16)


# --------------------------------------------------------------------------- MADQN inputs


@pytest.mark.parametrize("name, listed", [
    ("mpe/nope", ["simple_spread_v3", "simple_v3", "simple_reference_v3"]),
    ("debug/nope", ["line_world_v0"]),
    ("nope/x", ["mpe", "sisl", "butterfly", "classic", "debug"]),
    ("simple_spread_v3", ["mpe", "classic"]),
    ("", ["mpe"]),
])
def test_unknown_environment_names_raise_listing_what_exists(name, listed):
    with pytest.raises(ValueError) as error:
        wrappers.make_environment_factory(name)
    message = str(error.value)
    assert repr(name) in message or name in message
    for available in listed:
        assert available in message, (available, message)


@pytest.mark.parametrize("kwargs, field", [
    ({"num_executors": 0}, "num_executors"),
    ({"num_executors": -1}, "num_executors"),
    ({"num_executors": 1.5}, "num_executors"),
    ({"num_executors": True}, "num_executors"),
    ({"num_executors": "2"}, "num_executors"),
    ({"num_caches": -1}, "num_caches"),
    ({"num_caches": 0.5}, "num_caches"),
    ({"max_executor_steps": -5}, "max_executor_steps"),
    ({"max_executor_steps": 0}, "max_executor_steps"),
    ({"max_executor_steps": 10.0}, "max_executor_steps"),
])
def test_bad_counts_raise_before_anything_starts(line_world_factory, tmp_run_dir, kwargs, field):
    with pytest.raises(ValueError, match=field):
        madqn.MADQN(line_world_factory, run_dir=tmp_run_dir, **kwargs)
    assert not os.path.exists(tmp_run_dir)


def test_valid_counts_are_accepted(line_world_factory, tmp_run_dir):
    system = madqn.MADQN(line_world_factory, num_executors=2, num_caches=0,
                         max_executor_steps=None, run_dir=tmp_run_dir)
    assert system.num_executors == 2


def test_non_callable_environment_factory_raises(tmp_run_dir):
    with pytest.raises(ValueError, match="environment_factory"):
        madqn.MADQN("debug/line_world_v0", run_dir=tmp_run_dir)


def test_continuous_actions_are_rejected(tmp_run_dir):
    factory = wrappers.make_environment_factory("mpe/simple_spread_v3", continuous_actions=True)
    with pytest.raises(ValueError, match="discrete"):
        madqn.MADQN(factory, run_dir=tmp_run_dir)


class ConstantOutput(snt.Module):
    """A network with a bias of the given shape, broadcast over the batch."""

    def __init__(self, output_shape):
        super().__init__()
        self._bias = tf.Variable(tf.zeros(output_shape))

    def __call__(self, observation):
        batch = tf.shape(observation)[0]
        return tf.broadcast_to(self._bias, tf.concat([[batch], tf.shape(self._bias)], 0))


@pytest.mark.parametrize("output_shape", [(4,), (2,), (1,), (3, 1)])
def test_network_with_wrong_output_size_raises(line_world_factory, tmp_run_dir, output_shape):
    # line_world has 3 actions.
    with pytest.raises(ValueError, match=re.escape("(3,)")) as error:
        madqn.MADQN(line_world_factory, network_factory=lambda o, a: ConstantOutput(output_shape),
                    run_dir=tmp_run_dir)
    assert "3 actions" in str(error.value)


def test_network_with_right_output_size_is_accepted(line_world_factory, tmp_run_dir):
    system = madqn.MADQN(line_world_factory, network_factory=lambda o, a: ConstantOutput((3,)),
                         run_dir=tmp_run_dir)
    networks = system.builder.make_networks()
    assert set(networks.q_networks) == {"agent"}  # Shared weights by agent type.


def test_unshared_weights_give_one_network_per_agent(line_world_factory, tmp_run_dir):
    system = madqn.MADQN(line_world_factory, config=MADQNConfig(shared_weights=False),
                         run_dir=tmp_run_dir)
    networks = system.builder.make_networks()
    assert set(networks.q_networks) == {"agent_0", "agent_1"}


@pytest.mark.parametrize("recurrent", [False, True])
@pytest.mark.parametrize("samples_per_insert", [0.5, 32.0, 200.0])
def test_any_valid_replay_setting_gives_a_rate_limiter_reverb_accepts(
        line_world_factory, tmp_run_dir, recurrent, samples_per_insert):
    """A small replay minimum with a high samples_per_insert (with recurrent agents: one
    sequence, a batch of 2) once failed with Reverb's own error about `error_buffer`, which no
    config field names; every setting the config accepts must build its table."""
    config = MADQNConfig(recurrent=recurrent, min_replay_size=1, batch_size=4,
                         sequence_batch_size=2, samples_per_insert=samples_per_insert)
    system = madqn.MADQN(line_world_factory, config=config, run_dir=tmp_run_dir)
    limiter = system.builder.make_rate_limiter()
    [table] = system.builder.make_replay_tables()
    info = table.info.rate_limiter_info
    assert info.samples_per_insert == samples_per_insert and info.min_size_to_sample == 1
    assert info.max_diff - info.min_diff >= 2 * max(1.0, samples_per_insert)
    assert limiter is not None
