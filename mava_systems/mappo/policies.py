"""Action distributions of MAPPO's policies: categorical over legal actions, squashed Gaussian.

Each head turns a policy network's output into actions, log-probabilities and
entropies. Executors and the trainer compute log-probabilities with the same
head from the action actually sent to the environment, so the behaviour and
target log-probabilities of a step always refer to the same action. Executors
acting in NumPy use each head's NumPy twin (`head.numpy()`): the same actions
for the same noise, and the same log-probabilities.
"""

import math
from typing import Any, Tuple

from dm_env import specs
import numpy as np
import tensorflow as tf

from mava_systems.impala.execution import sample_action
from mava_systems.madqn.networks import mask_illegal, numpy_mask_illegal

# Squashed actions are kept this far inside (-1, 1) before atanh, so the log-probability of an
# action on a bound stays finite.
_SQUASH_EPSILON = 1e-6

# Gauss-Hermite quadrature under a standard normal z: E[f(z)] ~ sum_k weight_k f(point_k).
_HERMITE_POINTS, _HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(64)
_HERMITE_WEIGHTS = _HERMITE_WEIGHTS / math.sqrt(2.0 * math.pi)


class CategoricalHead:
    """A categorical policy over `num_actions` logits with zero probability on illegal actions
    (a row with no legal action allows every action, see `mask_illegal`)."""

    discrete = True

    def __init__(self, action_spec: specs.DiscreteArray):
        self.action_spec = action_spec

    def log_probs(self, logits: tf.Tensor, legal_actions: tf.Tensor) -> tf.Tensor:
        """log pi(. | o) [..., num_actions]: about -3.4e38 on illegal actions."""
        return tf.nn.log_softmax(mask_illegal(logits, legal_actions), axis=-1)

    def log_prob(self, logits: tf.Tensor, legal_actions: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """log pi(action | o) per row: [...]."""
        log_probs = self.log_probs(logits, legal_actions)
        action = tf.cast(action, tf.int32)
        return tf.gather(log_probs, action, batch_dims=len(action.shape))

    def entropy(self, logits: tf.Tensor, legal_actions: tf.Tensor) -> tf.Tensor:
        """The entropy of each row's distribution over its legal actions: [...]."""
        log_probs = self.log_probs(logits, legal_actions)
        probabilities = tf.exp(log_probs)  # Exactly 0 on illegal actions.
        return -tf.reduce_sum(tf.where(probabilities > 0, probabilities * log_probs, 0.0), axis=-1)

    def sample(self, logits: tf.Tensor, legal_actions: tf.Tensor,
               generator: tf.random.Generator) -> Tuple[tf.Tensor, tf.Tensor]:
        """(action [B] int32, its log-probability [B]), drawn among legal actions."""
        action = sample_action(mask_illegal(logits, legal_actions), generator)
        return action, self.log_prob(logits, legal_actions, action)

    def greedy(self, logits: tf.Tensor, legal_actions: tf.Tensor) -> tf.Tensor:
        """The most likely legal action of each row: [B] int32."""
        return tf.argmax(mask_illegal(logits, legal_actions), axis=-1, output_type=tf.int32)

    def numpy(self) -> "NumpyCategoricalHead":
        """This head's NumPy twin, for acting."""
        return NumpyCategoricalHead()


class NumpyCategoricalHead:
    """`CategoricalHead`'s acting methods in NumPy, on float32 logits [B, num_actions]."""

    def log_prob(self, logits: np.ndarray, legal_actions: np.ndarray,
                 action: np.ndarray) -> np.ndarray:
        """log pi(action | o) per row: [B] (a log-softmax over the legal actions)."""
        return self._log_prob_masked(numpy_mask_illegal(logits, legal_actions), action)

    @staticmethod
    def _log_prob_masked(masked: np.ndarray, action: np.ndarray) -> np.ndarray:
        """The log-softmax of masked logits [B, num_actions] at each row's `action` [B]."""
        shifted = masked - masked.max(axis=-1, keepdims=True)
        chosen = shifted[np.arange(shifted.shape[0]), action]
        return chosen - np.log(np.exp(shifted).sum(axis=-1))

    def sample(self, logits: np.ndarray, legal_actions: np.ndarray,
               rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        """(action [B] int32, its log-probability [B]), drawn among legal actions by the
        Gumbel-max trick, as `sample_action` draws them."""
        # As `generator.uniform(minval=1e-20, maxval=1.0)`: [0, 1) draws, kept above 0.
        uniform = rng.random(logits.shape, dtype=np.float32) + np.float32(1e-20)
        masked = numpy_mask_illegal(logits, legal_actions)
        action = np.argmax(masked - np.log(-np.log(uniform)), axis=-1).astype(np.int32)
        return action, self._log_prob_masked(masked, action)

    def greedy(self, logits: np.ndarray, legal_actions: np.ndarray) -> np.ndarray:
        """The most likely legal action of each row: [B] int32."""
        return np.argmax(numpy_mask_illegal(logits, legal_actions), axis=-1).astype(np.int32)


class SquashedGaussianHead:
    """A diagonal Gaussian on an unbounded variable u, squashed into the spec's bounds:
    action = low + (tanh(u) + 1) (high - low) / 2.

    The policy network outputs (mean, log_std) of u. The log-probability of an
    action is the density of the squashed distribution at that action (the
    Gaussian's at atanh of it, with the change-of-variables terms). The entropy
    reported and maximised is the squashed distribution's too, the entropy of
    the actions sent to the environment: it is bounded (most for a spread close to
    uniform over the bounds), where the Gaussian's grows without limit with its
    standard deviation, so an entropy bonus on it would push actions onto the bounds.
    """

    discrete = False

    def __init__(self, action_spec: specs.BoundedArray):
        self.action_spec = action_spec
        ones = np.ones(action_spec.shape, np.float32)
        # The bounds as float32 arrays of the action's shape.
        self.low = np.asarray(action_spec.minimum, np.float32) * ones
        self.high = np.asarray(action_spec.maximum, np.float32) * ones
        self._low, self._high = tf.constant(self.low), tf.constant(self.high)
        self._half_range = (self._high - self._low) / 2.0

    def squash(self, unbounded: tf.Tensor) -> tf.Tensor:
        """Maps u to an action within the bounds (clipped: float rounding may leave them)."""
        action = self._low + (tf.tanh(unbounded) + 1.0) * self._half_range
        return tf.clip_by_value(action, self._low, self._high)

    def log_prob(self, outputs: Tuple[tf.Tensor, tf.Tensor], legal_actions: Any,
                 action: tf.Tensor) -> tf.Tensor:
        """log pi(action | o) per row, summed over the action's dimensions: [...]."""
        del legal_actions  # Every action within the bounds is legal.
        mean, log_std = outputs
        squashed = tf.clip_by_value((tf.cast(action, tf.float32) - self._low) / self._half_range - 1.0,
                                    -1.0 + _SQUASH_EPSILON, 1.0 - _SQUASH_EPSILON)
        unbounded = tf.atanh(squashed)
        gaussian = (-0.5 * tf.square((unbounded - mean) / tf.exp(log_std)) - log_std
                    - 0.5 * math.log(2.0 * math.pi))
        jacobian = tf.math.log(1.0 - tf.square(squashed)) + tf.math.log(self._half_range)
        return tf.reduce_sum(gaussian - jacobian, axis=-1)

    def entropy(self, outputs: Tuple[tf.Tensor, tf.Tensor], legal_actions: Any) -> tf.Tensor:
        """The differential entropy of the squashed distribution (of the actions), summed over
        dimensions: [...].

        It is the Gaussian's entropy plus E[log |d action / du|], the expectation taken by
        64-point Gauss-Hermite quadrature (deterministic, and differentiable in mean and log_std).
        """
        del legal_actions
        mean, log_std = outputs
        points = tf.constant(_HERMITE_POINTS, tf.float32)
        weights = tf.constant(_HERMITE_WEIGHTS, tf.float32)
        unbounded = mean[..., None] + tf.exp(log_std)[..., None] * points
        # log(1 - tanh(u)^2), written so it stays finite for large |u|.
        log_sech_squared = 2.0 * (math.log(2.0) - unbounded - tf.nn.softplus(-2.0 * unbounded))
        expected_log_jacobian = (tf.reduce_sum(log_sech_squared * weights, axis=-1)
                                 + tf.math.log(self._half_range))
        gaussian = log_std + 0.5 * math.log(2.0 * math.pi * math.e)
        return tf.reduce_sum(gaussian + expected_log_jacobian, axis=-1)

    def sample(self, outputs: Tuple[tf.Tensor, tf.Tensor], legal_actions: Any,
               generator: tf.random.Generator) -> Tuple[tf.Tensor, tf.Tensor]:
        """(action [B, D] within the bounds, its log-probability [B])."""
        mean, log_std = outputs
        action = self.squash(mean + tf.exp(log_std) * generator.normal(tf.shape(mean)))
        return action, self.log_prob(outputs, legal_actions, action)

    def greedy(self, outputs: Tuple[tf.Tensor, tf.Tensor], legal_actions: Any) -> tf.Tensor:
        """The squashed mean: [B, D]."""
        del legal_actions
        return self.squash(outputs[0])

    def numpy(self) -> "NumpySquashedGaussianHead":
        """This head's NumPy twin, for acting."""
        return NumpySquashedGaussianHead(self.low, self.high)


class NumpySquashedGaussianHead:
    """`SquashedGaussianHead`'s acting methods in NumPy, on float32 (mean, log_std) [B, D] each,
    computed as the TensorFlow head computes them."""

    def __init__(self, low: np.ndarray, high: np.ndarray):
        self._low, self._high = low, high
        self._half_range = (high - low) / np.float32(2.0)

    def squash(self, unbounded: np.ndarray) -> np.ndarray:
        """Maps u to an action within the bounds."""
        action = self._low + (np.tanh(unbounded) + np.float32(1.0)) * self._half_range
        return np.clip(action, self._low, self._high)

    def log_prob(self, outputs: Tuple[np.ndarray, np.ndarray], legal_actions: Any,
                 action: np.ndarray) -> np.ndarray:
        """log pi(action | o) per row, summed over the action's dimensions: [B]."""
        del legal_actions
        mean, log_std = outputs
        squashed = np.clip((np.asarray(action, np.float32) - self._low) / self._half_range
                           - np.float32(1.0),
                           np.float32(-1.0 + _SQUASH_EPSILON), np.float32(1.0 - _SQUASH_EPSILON))
        unbounded = np.arctanh(squashed)
        gaussian = (np.float32(-0.5) * np.square((unbounded - mean) / np.exp(log_std)) - log_std
                    - np.float32(0.5 * math.log(2.0 * math.pi)))
        jacobian = np.log(np.float32(1.0) - np.square(squashed)) + np.log(self._half_range)
        return np.sum(gaussian - jacobian, axis=-1)

    def sample(self, outputs: Tuple[np.ndarray, np.ndarray], legal_actions: Any,
               rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        """(action [B, D] within the bounds, its log-probability [B])."""
        mean, log_std = outputs
        action = self.squash(mean + np.exp(log_std) * rng.standard_normal(mean.shape, np.float32))
        return action, self.log_prob(outputs, legal_actions, action)

    def greedy(self, outputs: Tuple[np.ndarray, np.ndarray], legal_actions: Any) -> np.ndarray:
        """The squashed mean: [B, D]."""
        del legal_actions
        return self.squash(outputs[0])


def make_head(action_spec: specs.Array) -> Any:
    """The policy head of an action spec: categorical for discrete, squashed Gaussian for
    bounded float vectors.

    Raises:
      ValueError: for any other action spec (e.g. unbounded floats).
    """
    if isinstance(action_spec, specs.DiscreteArray):
        return CategoricalHead(action_spec)
    if (isinstance(action_spec, specs.BoundedArray) and len(action_spec.shape) == 1
            and np.all(np.isfinite(action_spec.minimum)) and np.all(np.isfinite(action_spec.maximum))
            and np.all(np.asarray(action_spec.maximum) > np.asarray(action_spec.minimum))):
        return SquashedGaussianHead(action_spec)
    raise ValueError(f"MAPPO needs discrete actions or a bounded float vector with finite bounds, "
                     f"got {action_spec}")
