"""Sequence batches from replay: time-major views, n-step targets within a sequence, priorities."""

import tensorflow as tf


def time_major(stacked: tf.Tensor) -> tf.Tensor:
    """[B, T, A, ...] (batch, time, agents) -> [T, B * A, ...], each (sequence, agent) a column."""
    shape = tf.shape(stacked)
    rank = len(stacked.shape)
    transposed = tf.transpose(stacked, [1, 0, 2] + list(range(3, rank)))
    return tf.reshape(transposed, tf.concat([[shape[1], shape[0] * shape[2]], shape[3:]], axis=0))


def swap_batch_and_time(batch_major: tf.Tensor) -> tf.Tensor:
    """[B, T, ...] -> [T, B, ...]."""
    rank = len(batch_major.shape)
    return tf.transpose(batch_major, [1, 0] + list(range(2, rank)))


def merge_batch_and_agents(stacked: tf.Tensor) -> tf.Tensor:
    """[B, A, ...] -> [B * A, ...], batch-major (the column order of `time_major`)."""
    shape = tf.shape(stacked)
    return tf.reshape(stacked, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))


def sequence_priorities(abs_errors: tf.Tensor, max_weight: float) -> tf.Tensor:
    """R2D2's priority per column of |TD errors| [T, N]: w * max + (1 - w) * mean over time."""
    return (max_weight * tf.reduce_max(abs_errors, axis=0)
            + (1.0 - max_weight) * tf.reduce_mean(abs_errors, axis=0))


def n_step_targets(rewards: tf.Tensor, discounts: tf.Tensor, values: tf.Tensor,
                   step_mask: tf.Tensor, n_step: int, discount: float) -> tf.Tensor:
    """n-step targets of steps 0..T-2 of time-major sequences: [T, N] inputs -> [T - 1, N].

    For step t: r_t + g d_t r_{t+1} + ... + (g^k d_t ... d_{t+k-1}) values_{t+k}, with
    g = `discount`, k = `n_step`, shortened to bootstrap from the first later step
    without an action (`step_mask` 0: an episode's final observation) and from the
    sequence's last step. `rewards[t]` and `discounts[t]` are those of the action at
    step t; `values[t]` is the bootstrap value of the observation at step t. Targets
    of steps without an action are meaningless (mask them out).
    """
    length = rewards.shape[0]
    if length is None or length < 2:
        raise ValueError(f"n-step targets need sequences of at least 2 steps, got {length}")
    trained = length - 1
    pad = tf.zeros(tf.concat([[n_step], tf.shape(rewards)[1:]], axis=0), rewards.dtype)
    rewards = tf.concat([rewards[:trained], pad], axis=0)
    discounts = tf.concat([discounts[:trained], pad], axis=0)
    next_values = tf.concat([values[1:], pad], axis=0)
    # Whether the return may go on past step s + 1: that step has an action and is not the last.
    goes_on = tf.concat([step_mask[1:trained], tf.zeros_like(pad), tf.zeros_like(rewards[:1])],
                        axis=0)
    targets = tf.zeros_like(rewards[:trained])
    scale = tf.ones_like(targets)
    alive = tf.ones_like(targets)
    for k in range(n_step):
        window = slice(k, k + trained)
        targets += alive * scale * rewards[window]
        scale *= discount * discounts[window]
        ends = tf.ones_like(targets) if k == n_step - 1 else 1.0 - goes_on[window]
        targets += alive * ends * scale * next_values[window]
        alive *= 1.0 - ends
    return targets
