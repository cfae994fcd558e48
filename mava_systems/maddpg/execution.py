"""MADDPG executors: each agent's deterministic policy plus clipped Gaussian exploration noise."""

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from acme.adders import base as adders_base
from acme.tf import variable_utils
import numpy as np
import tensorflow as tf

from mava_systems.madqn.execution import ExplorationSchedule, MADQNExecutor
from mava_systems.madqn.networks import observation_to_input
from mava_systems.maddpg.networks import MADDPGNetworks
from wrappers import OLT


class MADDPGExecutor(MADQNExecutor):
    """Acts with the policies; stacking, replay writing and variable fetching are MADQN's.

    The exploration schedule gives the noise scale at each step (the role
    epsilon plays for MADQN): Gaussian noise with standard deviation scale x half
    the action range is added to the policy's action, and the result clipped to
    the action bounds. A scale of 0 acts with the policy alone (evaluation).
    With the default policies it acts in NumPy (see `MADQNExecutor`).

    Args:
      action_bounds: per network key, the (minimum, maximum) arrays of its action spec.
    """

    def __init__(
        self,
        networks: MADDPGNetworks,
        action_bounds: Mapping[str, Tuple[np.ndarray, np.ndarray]],
        exploration_schedule: ExplorationSchedule,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
    ):
        super().__init__(networks, exploration_schedule, adder, variable_client, seed)
        self._action_bounds = {key: (np.asarray(low, np.float32), np.asarray(high, np.float32))
                               for key, (low, high) in action_bounds.items()}

    def acting_modules(self) -> Mapping[str, Any]:
        """The policies, by network key."""
        return self._networks.policies

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor
                        ) -> Dict[str, tf.Tensor]:
        actions = {key: self._networks.policies[key](observation_to_input(observation.observation))
                   for key, observation in observations.items()}
        return self._explore(actions, epsilon,
                             lambda action: self._generator.normal(tf.shape(action)),
                             tf.clip_by_value)

    def _numpy_policy(self, observations: Dict[str, OLT], epsilon: float
                      ) -> Dict[str, np.ndarray]:
        actions = {key: self._numpy_networks[key](observation.observation)
                   for key, observation in observations.items()}
        return self._explore(actions, np.float32(epsilon),
                             lambda action: self._rng.standard_normal(action.shape, np.float32),
                             np.clip)

    def _explore(self, actions: Dict[str, Any], epsilon: Any, normal: Callable[[Any], Any],
                 clip: Callable[..., Any]) -> Dict[str, Any]:
        """The policies' `actions` plus noise of scale `epsilon` (drawn by `normal`, TensorFlow's
        or NumPy's as `clip`), clipped to the bounds."""
        noisy = {}
        for key, action in actions.items():
            low, high = self._action_bounds[key]
            noisy[key] = clip(action + normal(action) * epsilon * (high - low) / 2.0, low, high)
        return noisy
