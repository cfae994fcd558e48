"""MAPPO executors: sample each agent's action from its policy; replay gets the behaviour
log-probabilities, the policy's version and (for a centralised critic) the global state."""

from typing import Any, Dict, Mapping, Optional, Tuple

from acme.adders import base as adders_base
from acme.tf import variable_utils
import dm_env
import numpy as np
import tensorflow as tf

from mava_systems.components.exploration import ConstantEpsilon
from mava_systems.madqn.execution import MADQNExecutor
from mava_systems.mappo.networks import MAPPONetworks
from wrappers import OLT

# Keys of the observation nest replay stores at each step (see `MAPPOExecutor`).
AGENTS = "agents"


class MAPPOExecutor(MADQNExecutor):
    """Acts with the policies (greedily when evaluating) and writes sequences to replay.

    Each stored step's observation is `{"agents": per-network stacked OLTs}`,
    plus the environment's extras (e.g. `"env_state"`) when `stores_state`
    (replay needs them at every step, the bootstrap step included, so they go
    with the observation rather than with the per-action extras). The extras
    of each step are the log-probability of every agent's action and
    `policy_version`, the trainer step of the variables it acted with.

    With the default policies it acts in NumPy (see `MADQNExecutor`), through
    the NumPy twins of the policies and of their heads.
    """

    def __init__(
        self,
        networks: MAPPONetworks,
        adder: Optional[adders_base.Adder] = None,
        variable_client: Optional[variable_utils.VariableClient] = None,
        seed: int = 0,
        greedy: bool = False,
        stores_state: bool = False,
    ):
        super().__init__(networks, ConstantEpsilon(0.0), adder, variable_client, seed)
        self._greedy = greedy
        self._stores_state = stores_state and adder is not None
        self._log_probs: Dict[str, np.ndarray] = {}
        self._acting_version = 0  # The policy version the last actions were chosen with.
        self._environment_extras: Mapping[str, Any] = {}
        self._numpy_heads = {key: head.numpy() for key, head in networks.heads.items()}
        self._numpy_policy_version = self._read_policy_version()

    def acting_modules(self) -> Mapping[str, Any]:
        """The policies, by network key."""
        return self._networks.policies

    def _batched_policy(self, observations: Dict[str, OLT], epsilon: tf.Tensor):
        del epsilon  # The policy explores by sampling.
        return self._policy_with(observations, self._networks.policies, self._networks.heads,
                                 self._generator)

    def _numpy_policy(self, observations: Dict[str, OLT], epsilon: float):
        del epsilon
        return self._policy_with(observations, self._numpy_networks, self._numpy_heads,
                                 self._rng)

    def _policy_with(self, observations: Dict[str, OLT], policies: Mapping[str, Any],
                     heads: Mapping[str, Any], random: Any) -> Dict[str, Tuple[Any, Any]]:
        """{key: (action, its log-probability)} with these policies and heads (TensorFlow's or
        their NumPy twins), drawing from `random` (their generator)."""
        outputs = {}
        for key, observation in observations.items():
            head, legal_actions = heads[key], observation.legal_actions
            policy_outputs = policies[key](observation.observation)
            if self._greedy:
                action = head.greedy(policy_outputs, legal_actions)
                outputs[key] = (action, head.log_prob(policy_outputs, legal_actions, action))
            else:
                outputs[key] = head.sample(policy_outputs, legal_actions, random)
        return outputs

    def select_actions(self, observations: Dict[str, OLT]) -> Dict[str, np.ndarray]:
        """Maps each agent's `OLT` observation to an action; keeps the log-probabilities."""
        return self.actions_from_outputs(self.policy_outputs(self._stack_observation(observations)))

    def actions_from_outputs(self, outputs: Any, actor: Optional["MAPPOExecutor"] = None
                             ) -> Dict[str, np.ndarray]:
        """The actions in the policy's outputs; keeps their log-probabilities and the version of
        the policy (`actor`'s, if another executor acted) for `observe`."""
        self._log_probs = {key: log_prob for key, (_, log_prob) in outputs.items()}
        self._acting_version = (actor or self).policy_version
        return self._stacker.unstack({key: action for key, (action, _) in outputs.items()})

    @property
    def policy_version(self) -> int:
        """The trainer step of the policy variables this executor acts with."""
        if self.acts_in_numpy:  # Read with the NumPy weights.
            return self._numpy_policy_version
        return self._read_policy_version()

    def _read_policy_version(self) -> int:
        return int(self._networks.policy_version.numpy())

    def _weights_refreshed(self) -> None:
        self._numpy_policy_version = self._read_policy_version()

    @property
    def observes_extras(self) -> bool:
        """Whether the loop passes the environment's extras: when replay stores the state."""
        return self._stores_state

    def observe_first(self, timestep: dm_env.TimeStep,
                      extras: Optional[Mapping[str, Any]] = None) -> None:
        """Starts an episode in replay."""
        self._sync_numpy_weights(new_episode=True)
        if self._adder is not None:
            self._adder.add_first(self._stored_timestep(timestep, extras))

    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                extras: Optional[Mapping[str, Any]] = None) -> None:
        """Records a step with the log-probabilities and policy version it was chosen with."""
        self.num_steps += 1
        if self._adder is not None:
            self._adder.add(self._stacker.stack(actions),
                            self._stored_timestep(next_timestep, extras),
                            extras={"log_prob": self._log_probs,
                                    "policy_version": np.int64(self._acting_version)})

    def _stored_timestep(self, timestep: dm_env.TimeStep,
                         extras: Optional[Mapping[str, Any]]) -> dm_env.TimeStep:
        stacked = self._stack_timestep(timestep)
        observation = {AGENTS: stacked.observation}
        if self._stores_state:
            if extras is None:
                raise ValueError("this executor stores the environment's extras; got none")
            observation.update(extras)
        return stacked._replace(observation=observation)
