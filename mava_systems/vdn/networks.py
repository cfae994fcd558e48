"""Mixers: modules turning every agent's chosen Q-value into the team's, and how to build them.

A mixer maps `(agent_q_values [B, N], states [B, S]) -> team Q [B]` for N
agents in the trainer's agent order (see `VDNTrainer`). The trainer zeroes the
Q-value of every agent that is not in the episode before mixing.
"""

from typing import Callable, List

from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

# mixer_factory(num_agents, state_spec) -> a mixer module.
MixerFactory = Callable[[int, specs.Array], snt.Module]


@snt.allow_empty_variables
class SumMixer(snt.Module):
    """VDN's mixer: the team Q is the sum of the agents' Q-values (no parameters, no state)."""

    def __init__(self, name: str = "sum_mixer"):
        super().__init__(name=name)

    def __call__(self, agent_q_values: tf.Tensor, states: tf.Tensor) -> tf.Tensor:
        del states
        return tf.reduce_sum(agent_q_values, axis=-1)


def make_sum_mixer(num_agents: int, state_spec: specs.Array) -> snt.Module:
    """VDN's `SumMixer` (a `MixerFactory`)."""
    del num_agents, state_spec
    return SumMixer()


def module_variables(module: snt.Module) -> List[tf.Variable]:
    """`module.variables`, or [] for a Sonnet module with none (Sonnet raises then)."""
    try:
        return list(module.variables)
    except ValueError:
        return []


def build_mixer(mixer_factory: MixerFactory, num_agents: int, state_spec: specs.Array,
                name: str = "mixer_factory") -> snt.Module:
    """A mixer from `mixer_factory`, its variables created and its output shape checked.

    Raises:
      ValueError: naming `name`, if the mixer does not map Q-values [B, N] and
        states [B, *state shape] to one team value per row, [B].
    """
    mixer = mixer_factory(num_agents, state_spec)
    batch = 2
    states = tf.zeros((batch,) + tuple(state_spec.shape), tf.float32)
    try:
        output = mixer(tf.zeros([batch, num_agents], tf.float32), states)
    except Exception as error:  # A factory's module may fail in any way; say whose it is.
        raise ValueError(f"{name}'s mixer fails on Q-values of shape {(batch, num_agents)} and "
                         f"states of shape {tuple(states.shape)}: {error}") from error
    if tuple(np.shape(output)) != (batch,):
        raise ValueError(
            f"{name}'s mixer returns shape {tuple(np.shape(output))} for Q-values of shape "
            f"{(batch, num_agents)}: expected one team value per row, shape ({batch},)")
    return mixer


def copy_variables(target: snt.Module, source: snt.Module) -> None:
    """Assigns `source`'s variables to `target`'s (same structure)."""
    for target_variable, source_variable in zip(module_variables(target), module_variables(source)):
        target_variable.assign(source_variable)
