"""The value-decomposition trainer: one team loss through a mixer, for VDN and QMIX."""

from typing import Any, Tuple

from acme import types as acme_types
import tensorflow as tf

from mava_systems.madqn.training import (JointLoss, MADQNTrainer, agent_q_values, chosen_q_values,
                                         double_q_values)

MIXER = "mixer"  # The name of the mixer among the trainer's modules (checkpointed as module/mixer).


class VDNTrainer(MADQNTrainer):
    """Trains every agent network and the mixer (trainer module `mixer`) with one team loss.

    Per item, for the N agents (grouped by network, in `agents_by_network`
    order; the mixer sees them in this order):
      - Q_tot = mixer(Q_i(o_i, a_i) for the agents in the episode at its start,
        0 for the others; global state s_t);
      - target = team n-step return + discount * team discount * target mixer
        (each agent's target-network Q at the legal action its online network
        ranks highest, 0 for an agent whose own discount is 0; s_{t+n});
      - loss = Huber (or squared, without `huber_loss_parameter`) of the difference.
    The team reward is the mean or sum (`team_reward`) of the agents' n-step
    returns; the team discount is the largest agent's (the team's episode ends
    when every agent's has). The global state is the replay item's `env_state`
    extras when it has them, else the concatenation of all agents' observations.
    """

    def __init__(self, *args: Any, team_reward: str = "mean", **kwargs: Any):
        self._team_reward = {"mean": tf.reduce_mean, "sum": tf.reduce_sum}[team_reward]
        super().__init__(*args, **kwargs)
        if MIXER not in self.modules:
            raise ValueError(f"{type(self).__name__} needs a trainer module named {MIXER!r}")

    def global_states(self, transitions: acme_types.Transition) -> Tuple[tf.Tensor, tf.Tensor]:
        """The global state at both ends of each item ([B, S] each): its `env_state` extras, or
        all agents' observations flattened and concatenated (in the mixer's agent order)."""
        extras = transitions.extras
        if isinstance(extras, dict) and "env_state" in extras:
            return (tf.cast(extras["env_state"], tf.float32),
                    tf.cast(extras["next_env_state"], tf.float32))
        return (self._concatenated(transitions.observation),
                self._concatenated(transitions.next_observation))

    def _concatenated(self, observations: Any) -> tf.Tensor:
        columns = []
        for key in self.networks.agents_by_network:
            observation = tf.cast(observations[key].observation, tf.float32)
            columns.append(tf.reshape(observation, [tf.shape(observation)[0], -1]))
        return tf.concat(columns, axis=1)

    def joint_loss(self, transitions: acme_types.Transition, weights: tf.Tensor) -> JointLoss:
        """The team loss described in the class docstring; priorities are |TD error| per item."""
        q_taken, next_q, present, rewards, discounts = [], [], [], [], []
        networks = self.networks
        for key in networks.agents_by_network:
            online = networks.q_networks[key]
            observation = transitions.observation[key]
            q_taken.append(chosen_q_values(agent_q_values(online, observation.observation),
                                           transitions.action[key]))
            next_q.append(double_q_values(online, networks.target_q_networks[key],
                                          transitions.next_observation[key]))
            # An agent that has left (or ended) by the item's start takes no action in it.
            present.append(1.0 - tf.cast(observation.terminal, tf.float32))
            rewards.append(tf.cast(transitions.reward[key], tf.float32))
            discounts.append(tf.cast(transitions.discount[key], tf.float32))
        q_taken, next_q, present, rewards, discounts = (
            tf.concat(values, axis=1) for values in (q_taken, next_q, present, rewards, discounts))
        states, next_states = self.global_states(transitions)
        mixer = self.modules[MIXER]
        target_mixer = mixer.target if mixer.target is not None else mixer.online

        q_total = mixer.online(q_taken * present, states)
        next_alive = tf.cast(discounts > 0.0, tf.float32)
        next_q_total = target_mixer(next_q * next_alive, next_states)
        team_discount = tf.reduce_max(discounts, axis=1)
        target = tf.stop_gradient(self._team_reward(rewards, axis=1)
                                  + self.discount * team_discount * next_q_total)
        td_error = target - q_total
        loss = tf.reduce_mean(self.td_loss(td_error) * weights)
        return JointLoss(loss, tf.abs(td_error), {"q_value": tf.reduce_mean(q_total)})
