"""MASAC executors: each agent's squashed Gaussian policy, sampled while exploring."""

from typing import Dict

import tensorflow as tf

from mava_systems.maddpg.execution import MADDPGExecutor
from mava_systems.madqn.networks import observation_to_input
from wrappers import OLT


class MASACExecutor(MADDPGExecutor):
    """Acts with stochastic policies (`masac.SquashedGaussianPolicy`): the exploration schedule's
    scale multiplies each policy's standard deviation before the squash, so 1 samples from the
    policy (training) and 0 acts with its squashed mean (greedy, evaluation). Acts in
    TensorFlow (the policies are not plain MLPs); the rest is MADDPG's executor."""

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor
                        ) -> Dict[str, tf.Tensor]:
        actions = {}
        for key, observation in observations.items():
            policy = self._networks.policies[key]
            mean, log_std = policy.parameters(observation_to_input(observation.observation))
            noise = self._generator.normal(tf.shape(mean))
            actions[key] = policy.to_bounds(tf.tanh(mean + epsilon * tf.exp(log_std) * noise))
        return actions
