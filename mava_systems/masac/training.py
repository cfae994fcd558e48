"""The MASAC trainer: soft actor-critic per agent, with twin soft Q critics and temperatures
tuned to a target entropy, from n-step replay."""

from typing import Any, Dict, Mapping, Sequence, Tuple

from acme import types as acme_types
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.maddpg.training import MADDPGTrainer, masked_mean
from mava_systems.madqn.networks import observation_to_input
from mava_systems.madqn.training import merge_agents, split_agents


class MASACTrainer(MADDPGTrainer):
    """MADDPG's trainer loop with SAC's losses. For every agent i (its networks are its network
    key's), with critic inputs x of the config's architecture (`maddpg.CriticInputs`):

      - critics: both twins regress towards R_i + D_i * discount * (min(Q'_1, Q'_2)(x', a')
        - alpha_i * log pi_i(a'_i | o'_i)), every agent's next action a' sampled from its
        current policy, the targets those of the target critics;
      - policy: minimises alpha_i * log pi_i(a_i | o_i) - min(Q_1, Q_2)(x, a), agent i's
        action a_i sampled from its current policy (reparameterised) and the others' from
        replay;
      - temperature: log alpha_i descends -log alpha_i * (log pi_i(a_i | o_i) + target
        entropy), one per network key.
    Log-probabilities are of the squashed actions in [-1, 1] (`masac.squashed_log_prob`).
    Target critics move by Polyak averaging (`target_update_rate`) or copies; target policies
    are not used.

    Args (beyond MADDPG's):
      target_entropy: per network key, the entropy its temperature is tuned towards.
      initial_temperature: every temperature's starting value.
      temperature_learning_rate: the temperatures' Adam step size.
    """

    def __init__(self, *args: Any, target_entropy: Mapping[str, float],
                 initial_temperature: float = 1.0, temperature_learning_rate: float = 3e-4,
                 **kwargs: Any):
        self._target_entropy = {key: tf.constant(value, tf.float32)
                                for key, value in target_entropy.items()}
        self._log_temperatures = {key: tf.Variable(np.log(initial_temperature), dtype=tf.float32,
                                                   name=f"log_temperature_{key}")
                                  for key in target_entropy}
        self._temperature_optimizer = snt.optimizers.Adam(temperature_learning_rate)
        super().__init__(*args, **kwargs)

    @property
    def state(self) -> Dict[str, Any]:
        """MADDPG's checkpointed state, the temperatures and their optimizer."""
        return {**super().state, "temperature_optimizer": self._temperature_optimizer,
                **{f"log_temperature/{key}": variable
                   for key, variable in self._log_temperatures.items()}}

    def temperature(self, key: str) -> tf.Tensor:
        """Network `key`'s current temperature (alpha)."""
        return tf.exp(self._log_temperatures[key])

    def sampled_actions(self, key: str, observations: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """Actions drawn from network `key`'s policy for its stacked agents' `observations`
        ([B, A, ...]): the actions [B, A, ...] and their log-probabilities [B, A]."""
        num_agents = observations.shape[1]
        actions, log_probs = self._networks.policies[key].sample(
            observation_to_input(merge_agents(observations)))
        return split_agents(actions, num_agents), split_agents(log_probs, num_agents)

    def _evaluate(self, critic: snt.Module, inputs: tf.Tensor) -> tf.Tensor:
        """Both twins' values, rows merged batch-major: [B * A, 2]."""
        return critic.pair(merge_agents(inputs))

    def losses(self, transitions: acme_types.Transition) -> Tuple[tf.Tensor, tf.Tensor,
                                                                   Dict[str, tf.Tensor]]:
        """The critics' and policies' soft losses on a batch, and scalars to log (with the
        temperatures' loss, which `extra_updates` descends)."""
        networks = self._networks
        keys = list(networks.policies)
        observations, next_observations, actions, states, next_states = self.batch(transitions)
        next_sampled = {key: self.sampled_actions(key, next_observations[key]) for key in keys}
        sampled = {key: self.sampled_actions(key, observations[key]) for key in keys}
        inputs = self._critic_inputs(observations, actions, states)
        next_inputs = self._critic_inputs(
            next_observations, {key: next_sampled[key][0] for key in keys}, next_states)
        policy_inputs = self._critic_inputs(observations, actions, states,
                                            {key: sampled[key][0] for key in keys})

        critic_loss = policy_loss = temperature_loss = 0.0
        q_values, entropies, temperatures = [], [], []
        for key in keys:
            present, r_t, d_t = self.agent_rows(transitions, key)
            alpha = tf.stop_gradient(self.temperature(key))
            next_log_probs = merge_agents(next_sampled[key][1])
            log_probs = merge_agents(sampled[key][1])
            soft_next = (tf.reduce_min(self._evaluate(networks.target_critics[key],
                                                      next_inputs[key]), axis=-1)
                         - alpha * next_log_probs)
            target = tf.stop_gradient(r_t + d_t * soft_next)
            q_tm1 = self._evaluate(networks.critics[key], inputs[key])
            critic_loss += masked_mean(
                0.5 * tf.reduce_sum(tf.square(target[:, None] - q_tm1), axis=-1), present)
            policy_q = tf.reduce_min(self._evaluate(networks.critics[key], policy_inputs[key]),
                                     axis=-1)
            policy_loss += masked_mean(alpha * log_probs - policy_q, present)
            temperature_loss += masked_mean(-self._log_temperatures[key] * tf.stop_gradient(
                log_probs + self._target_entropy[key]), present)
            q_values.append(masked_mean(q_tm1[:, 0], present))
            entropies.append(-masked_mean(log_probs, present))
            temperatures.append(alpha)
        return critic_loss, policy_loss, {
            "q_value": tf.reduce_mean(tf.stack(q_values)),
            "entropy": tf.reduce_mean(tf.stack(entropies)),
            "temperature": tf.reduce_mean(tf.stack(temperatures)),
            "temperature_loss": temperature_loss}

    def extra_updates(self, tape: tf.GradientTape, fetches: Dict[str, tf.Tensor]
                      ) -> Dict[str, tf.Tensor]:
        """One Adam step of the log-temperatures on `fetches["temperature_loss"]`."""
        variables = list(self._log_temperatures.values())
        self._temperature_optimizer.apply(tape.gradient(fetches["temperature_loss"], variables),
                                          variables)
        return {}

    def target_pairs(self) -> Sequence[Tuple[Mapping[str, snt.Module], Mapping[str, snt.Module]]]:
        """The critics alone: SAC's targets use the current policies."""
        return ((self._networks.target_critics, self._networks.critics),)
