"""The MATD3 trainer: MADDPG's, with TD3's clipped double-Q targets, target policy smoothing and
delayed policy and target updates."""

from typing import Any, Mapping, Optional, Sequence, Tuple

from acme import types as acme_types
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.maddpg.training import MADDPGTrainer
from mava_systems.madqn.training import merge_agents


class MATD3Trainer(MADDPGTrainer):
    """MADDPG's trainer with twin critics (`TwinCritic`, see `matd3.networks`):

      - both critics regress towards R + D * discount * min(Q'_1, Q'_2)(x', a'),
        the smaller of the two target critics' values;
      - a' is each target policy's action plus Gaussian noise (standard deviation
        `target_noise`, clipped to +- `target_noise_clip`, both fractions of half
        the action range), clipped to the action bounds;
      - the policies ascend the first critic, and they and every target network
        are updated once every `policy_delay` trainer steps (the critics every step).

    Args (beyond MADDPG's):
      action_bounds: per network key, the (minimum, maximum) arrays of its action spec.
      policy_delay, target_noise, target_noise_clip: see above and `MATD3Config`.
    """

    def __init__(self, *args: Any, action_bounds: Mapping[str, Tuple[np.ndarray, np.ndarray]],
                 policy_delay: int = 2, target_noise: float = 0.2, target_noise_clip: float = 0.5,
                 **kwargs: Any):
        self._action_bounds = {key: (tf.constant(low, tf.float32), tf.constant(high, tf.float32))
                               for key, (low, high) in action_bounds.items()}
        self._policy_delay = policy_delay
        self._target_noise = target_noise
        self._target_noise_clip = target_noise_clip
        super().__init__(*args, **kwargs)

    def _evaluate(self, critic: snt.Module, inputs: tf.Tensor) -> tf.Tensor:
        """Both critics' values, rows merged batch-major: [B * A, 2]."""
        return critic.pair(merge_agents(inputs))

    def critic_loss(self, q_tm1: Any, r_t: tf.Tensor, d_t: tf.Tensor, q_t: Any) -> tf.Tensor:
        """Per row, half the squared TD errors of both critics towards the clipped double-Q target."""
        target = tf.stop_gradient(r_t + d_t * tf.reduce_min(q_t, axis=-1))
        return 0.5 * tf.reduce_sum(tf.square(target[:, None] - q_tm1), axis=-1)

    def values(self, critic_output: Any) -> tf.Tensor:
        """The first critic's value per row."""
        return critic_output[..., 0]

    def policy_values(self, critic: snt.Module, inputs: tf.Tensor) -> tf.Tensor:
        """The first critic's value per row, without evaluating the second."""
        return critic.first(merge_agents(inputs))

    def policy_loss(self, transitions: acme_types.Transition,
                    observations: Mapping[str, tf.Tensor], actions: Mapping[str, tf.Tensor],
                    states: Optional[tf.Tensor]) -> tf.Tensor:
        """MADDPG's policy loss on the steps that update the policies, 0 on the others (whose
        policy gradients would be dropped: neither it nor its gradient is computed there)."""
        return tf.cond(self._policy_update_due(),
                       lambda: super(MATD3Trainer, self).policy_loss(transitions, observations,
                                                                     actions, states),
                       lambda: tf.constant(0.0))

    def target_actions(self, key: str, observations: tf.Tensor) -> tf.Tensor:
        """The target policy's actions with clipped Gaussian smoothing noise, within the bounds."""
        actions = super().target_actions(key, observations)
        low, high = self._action_bounds[key]
        noise = tf.clip_by_value(tf.random.normal(tf.shape(actions)) * self._target_noise,
                                 -self._target_noise_clip, self._target_noise_clip)
        return tf.clip_by_value(actions + noise * (high - low) / 2.0, low, high)

    def _policy_update_due(self) -> tf.Tensor:
        """Whether this step (the counter's next) updates the policies and targets."""
        return tf.equal(tf.math.mod(self._num_steps + 1, self._policy_delay), 0)

    def _apply(self, optimizer: snt.Optimizer, gradients: Sequence[tf.Tensor],
               variables: Sequence[tf.Variable]) -> tf.Tensor:
        if optimizer is not self._policy_optimizer:
            return super()._apply(optimizer, gradients, variables)
        return tf.cond(self._policy_update_due(),
                       lambda: super(MATD3Trainer, self)._apply(optimizer, gradients, variables),
                       lambda: tf.linalg.global_norm(gradients))

    def _update_targets(self) -> None:
        # After the step's count: the step that updated the policies has made the count a multiple.
        if tf.equal(tf.math.mod(self._num_steps, self._policy_delay), 0):
            super()._update_targets()
