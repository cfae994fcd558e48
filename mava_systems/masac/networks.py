"""MASAC's networks: a squashed Gaussian policy per network key, and twin soft Q critics
(`matd3.TwinCritic`) of MADDPG's critic inputs (`maddpg.CriticInputs`)."""

from typing import Mapping, Optional, Sequence, Tuple

from dm_env import specs
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.matd3.networks import TwinCritic, make_twin_networks

# The policy's log standard deviations are squashed into this range (SAC's usual bounds).
LOG_STD_RANGE = (-5.0, 2.0)


def squashed_log_prob(mean: tf.Tensor, log_std: tf.Tensor, pre_tanh: tf.Tensor) -> tf.Tensor:
    """Per row, the log-density of tanh(pre_tanh) in [-1, 1]^d, pre_tanh ~ N(mean, exp(log_std)):
    the Gaussian's log-density minus log(1 - tanh(u)^2) per dimension, in a stable form."""
    gaussian = -0.5 * (tf.square((pre_tanh - mean) * tf.exp(-log_std)) + np.log(2.0 * np.pi)) \
        - log_std
    log_det = 2.0 * (np.log(2.0) - pre_tanh - tf.nn.softplus(-2.0 * pre_tanh))
    return tf.reduce_sum(gaussian - log_det, axis=-1)


class SquashedGaussianPolicy(snt.Module):
    """A stochastic policy: an MLP gives a Gaussian's mean and log standard deviation per action
    dimension; actions are tanh of its draws, scaled to the action spec's bounds.

    Calling it gives the greedy action (the squashed mean, [B, *action]); `sample` draws
    actions with their log-probabilities; `parameters` gives the Gaussian's (mean, log_std).
    """

    def __init__(self, action_spec: specs.BoundedArray, hidden_sizes: Sequence[int],
                 name: str = "squashed_gaussian_policy"):
        super().__init__(name=name)
        self._shape = tuple(action_spec.shape)
        size = int(np.prod(self._shape))
        self._low = tf.constant(np.broadcast_to(action_spec.minimum, self._shape), tf.float32)
        self._high = tf.constant(np.broadcast_to(action_spec.maximum, self._shape), tf.float32)
        self._torso = snt.Sequential([snt.Flatten(),
                                      snt.nets.MLP(list(hidden_sizes), activate_final=True)])
        self._head = snt.Linear(2 * size)

    def parameters(self, observations: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """The Gaussian's mean and log standard deviation before the squash: [B, d] each."""
        mean, raw = tf.split(self._head(self._torso(observations)), 2, axis=-1)
        low, high = LOG_STD_RANGE
        return mean, low + 0.5 * (high - low) * (tf.tanh(raw) + 1.0)

    def to_bounds(self, squashed: tf.Tensor) -> tf.Tensor:
        """Actions in [-1, 1] ([B, d]) scaled to the spec's bounds and shape ([B, *action])."""
        squashed = tf.reshape(squashed, [-1] + list(self._shape))
        return self._low + (squashed + 1.0) * (self._high - self._low) / 2.0

    def sample(self, observations: tf.Tensor, noise: Optional[tf.Tensor] = None
               ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Actions drawn from the policy ([B, *action]) and their log-probabilities ([B], of the
        squashed actions in [-1, 1]); `noise`: the standard normal draws (None: fresh ones)."""
        mean, log_std = self.parameters(observations)
        if noise is None:
            noise = tf.random.normal(tf.shape(mean))
        pre_tanh = mean + tf.exp(log_std) * noise
        return self.to_bounds(tf.tanh(pre_tanh)), squashed_log_prob(mean, log_std, pre_tanh)

    def __call__(self, observations: tf.Tensor) -> tf.Tensor:
        return self.to_bounds(tf.tanh(self.parameters(observations)[0]))


def make_sac_networks(observation_spec: specs.Array, action_spec: specs.BoundedArray,
                      policy_hidden_sizes: Sequence[int] = (256, 256),
                      critic_hidden_sizes: Sequence[int] = (256, 256)
                      ) -> Tuple[SquashedGaussianPolicy, TwinCritic]:
    """MASAC's networks: a `SquashedGaussianPolicy` and MATD3's `TwinCritic` of two of
    MADDPG's ReLU MLP critics."""
    # MATD3's deterministic policy is dropped unused (no variables until called).
    _, critic = make_twin_networks(observation_spec, action_spec, policy_hidden_sizes,
                                   critic_hidden_sizes)
    return SquashedGaussianPolicy(action_spec, policy_hidden_sizes), critic


def check_stochastic_policies(policies: Mapping[str, snt.Module], system: str) -> None:
    """Raises ValueError unless every policy has `sample(observations) -> (actions, log_probs)`
    and `parameters(observations) -> (mean, log_std)`, as `SquashedGaussianPolicy`."""
    for key, policy in policies.items():
        if not all(callable(getattr(policy, name, None)) for name in ("sample", "parameters",
                                                                       "to_bounds")):
            raise ValueError(f"{system}: network {key!r}'s policy is a {type(policy).__name__}; "
                             f"{system} needs stochastic policies with sample, parameters and "
                             "to_bounds (masac.SquashedGaussianPolicy, as "
                             "masac.make_sac_networks builds)")
