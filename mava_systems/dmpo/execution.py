"""DMPO executors: sample the Gaussian policy (its mean when evaluating), clipped to the action bounds."""

from typing import Dict, Mapping, Optional, Tuple

from acme.adders import base as adders_base
from acme.tf import variable_utils
import numpy as np
import tensorflow as tf

from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.dmpo.networks import DMPONetworks
from mava_systems.madqn.execution import MADQNExecutor
from mava_systems.madqn.networks import observation_to_input
from wrappers import OLT


class DMPOExecutor(MADQNExecutor):
    """Acts with the policy network; stacking, replay writing and variable fetching are MADQN's.

    Args:
      action_bounds: per network key, the (minimum, maximum) arrays of its action spec.
      greedy: act with the policy's mean instead of a sample (for evaluation).
    """

    def __init__(
        self,
        networks: DMPONetworks,
        action_bounds: Mapping[str, Tuple[np.ndarray, np.ndarray]],
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
        greedy: bool = False,
    ):
        super().__init__(networks, ConstantEpsilon(0.0), adder, variable_client, seed)
        self._action_bounds = {key: (tf.constant(low, tf.float32), tf.constant(high, tf.float32))
                               for key, (low, high) in action_bounds.items()}
        self._greedy = greedy

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor) -> Dict[str, tf.Tensor]:
        del epsilon  # The policy explores by sampling.
        actions = {}
        for key, observation in observations.items():
            distribution = self._networks.policies[key](observation_to_input(observation.observation))
            action = distribution.mean()
            if not self._greedy:
                action += distribution.stddev() * self._generator.normal(tf.shape(action))
            low, high = self._action_bounds[key]
            actions[key] = tf.clip_by_value(action, low, high)
        return actions
