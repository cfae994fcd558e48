"""IMPALA executors: sample from the policy over legal actions and record its logits."""

from typing import Any, Dict, Optional

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf

from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.impala.networks import IMPALANetworks
from mava_systems.madqn.execution import MADQNExecutor
from mava_systems.madqn.networks import mask_illegal, observation_to_input
from wrappers import OLT


def sample_action(logits: tf.Tensor, generator: tf.random.Generator) -> tf.Tensor:
    """One action per row, drawn from softmax(logits) (by the Gumbel-max trick)."""
    uniform = generator.uniform(tf.shape(logits), minval=1e-20, maxval=1.0)
    return tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1, output_type=tf.int32)


class IMPALAExecutor(MADQNExecutor):
    """Acts with the policy (greedily when evaluating); replay receives the behaviour logits.

    The stacking, replay writing and variable fetching are MADQN's executor's;
    only the policy and the extras written with each step differ.
    """

    def __init__(
        self,
        networks: IMPALANetworks,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
        greedy: bool = False,
    ):
        super().__init__(networks, ConstantEpsilon(0.0), adder, variable_client, seed)
        self._greedy = greedy
        self._logits: Dict[str, np.ndarray] = {}

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor):
        del epsilon  # The policy explores by sampling.
        outputs = {}
        for key, observation in observations.items():
            logits, _ = self._networks.networks[key](observation_to_input(observation.observation))
            logits = mask_illegal(logits, observation.legal_actions)
            action = (tf.argmax(logits, axis=-1, output_type=tf.int32) if self._greedy
                      else sample_action(logits, self._generator))
            outputs[key] = (action, logits)
        return outputs

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action; keeps the logits for `observe`."""
        stacked = self._stack_observation(observations)
        outputs = self.run_policy(stacked)
        self._logits = {key: logits.numpy() for key, (_, logits) in outputs.items()}
        return self._stacker.unstack({key: action.numpy() for key, (action, _) in outputs.items()})

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None:
        """Records a step and the logits it was chosen with."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(self._stacker.stack(actions), self._stack_timestep(next_timestep),
                            extras={"logits": self._logits})
