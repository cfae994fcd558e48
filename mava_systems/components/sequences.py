"""Sequence batches from replay: agent-stacked [batch, time, agents, ...] to time-major columns."""

import tensorflow as tf


def time_major(stacked: tf.Tensor) -> tf.Tensor:
    """[B, T, A, ...] (batch, time, agents) -> [T, B * A, ...], each (sequence, agent) a column."""
    shape = tf.shape(stacked)
    rank = len(stacked.shape)
    transposed = tf.transpose(stacked, [1, 0, 2] + list(range(3, rank)))
    return tf.reshape(transposed, tf.concat([[shape[1], shape[0] * shape[2]], shape[3:]], axis=0))


def merge_batch_and_agents(stacked: tf.Tensor) -> tf.Tensor:
    """[B, A, ...] -> [B * A, ...], batch-major (the column order of `time_major`)."""
    shape = tf.shape(stacked)
    return tf.reshape(stacked, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))
