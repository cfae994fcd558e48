"""The value-decomposition trainer: one team loss through a mixer, for VDN and QMIX."""

from typing import Any, NamedTuple, Tuple

from acme import types as acme_types
import tensorflow as tf

from mava_systems.data.sequences import swap_batch_and_time, time_major
from mava_systems.madqn.training import (JointLoss, MADQNTrainer, SequenceLearning, agent_q_values,
                                         chosen_q_values, double_q_values)

MIXER = "mixer"  # The name of the mixer among the trainer's modules (checkpointed as module/mixer).


class AgentValues(NamedTuple):
    """What the team loss needs of each agent, per replay item ([B, N] each, N agents in the
    mixer's order: grouped by network, in `agents_by_network` order)."""

    chosen: tf.Tensor  # Q_i(o_i, a_i): the online network's Q-value of the action taken.
    bootstrap: tf.Tensor  # The target network's Q at the legal action the online one ranks
    # highest at the item's end (double Q).
    present: tf.Tensor  # 1 for an agent in the episode at the item's start, else 0.
    rewards: tf.Tensor  # Each agent's n-step return.
    discounts: tf.Tensor  # Each agent's n-step discount (0 once it has left or ended).


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

    A new loss overrides one of its public hooks (listed in docs/api.md):
    `team_reward`, `team_discount`, `agent_values` (every agent's chosen and
    bootstrap Q-values), `global_states`, `team_target` (the target
    computation) or `team_td_losses` (the loss of each TD error); `joint_loss`
    composes them. `RecurrentVDNTrainer` calls the same `team_reward`,
    `team_discount` and `team_td_losses`, so a mixin overriding them serves both.
    """

    def __init__(self, *args: Any, team_reward: str = "mean", **kwargs: Any):
        self._team_reduce = {"mean": tf.reduce_mean, "sum": tf.reduce_sum}[team_reward]
        super().__init__(*args, **kwargs)
        if MIXER not in self.modules:
            raise ValueError(f"{type(self).__name__} needs a trainer module named {MIXER!r}")

    def team_reward(self, rewards: tf.Tensor) -> tf.Tensor:
        """The team's reward from the agents' ([..., N] -> [...]): their mean or sum
        (`team_reward`); an agent that has left counts as 0."""
        return self._team_reduce(rewards, axis=-1)

    def team_discount(self, discounts: tf.Tensor) -> tf.Tensor:
        """The team's discount from the agents' ([..., N] -> [...]): the largest, so the team's
        episode ends when every agent's has."""
        return tf.reduce_max(discounts, axis=-1)

    def team_target(self, team_reward: tf.Tensor, team_discount: tf.Tensor,
                    next_q_total: tf.Tensor) -> tf.Tensor:
        """The team's n-step target per item ([B]): reward + discount * team discount * the
        target mixer's value at the item's end; no gradient flows through it."""
        return tf.stop_gradient(team_reward + self.discount * team_discount * next_q_total)

    def team_td_losses(self, td_error: tf.Tensor) -> tf.Tensor:
        """The loss of each team TD error (target - Q_tot, any shape; masked steps are 0):
        Huber, or squared without `huber_loss_parameter` (see `td_loss`)."""
        return self.td_loss(td_error)

    def agent_values(self, transitions: acme_types.Transition) -> AgentValues:
        """Every agent's chosen and bootstrap Q-values, presence, rewards and discounts ([B, N]
        each, see `AgentValues`)."""
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
        return AgentValues(*(tf.concat(values, axis=1)
                             for values in (q_taken, next_q, present, rewards, discounts)))

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
        """The team loss described in the class docstring, from the public hooks; priorities
        are |TD error| per item."""
        values = self.agent_values(transitions)
        states, next_states = self.global_states(transitions)
        mixer = self.modules[MIXER]
        target_mixer = mixer.target if mixer.target is not None else mixer.online

        q_total = mixer.online(values.chosen * values.present, states)
        next_alive = tf.cast(values.discounts > 0.0, tf.float32)
        next_q_total = target_mixer(values.bootstrap * next_alive, next_states)
        target = self.team_target(self.team_reward(values.rewards),
                                  self.team_discount(values.discounts), next_q_total)
        td_error = target - q_total
        loss = tf.reduce_mean(self.team_td_losses(td_error) * weights)
        return JointLoss(loss, tf.abs(td_error), {"q_value": tf.reduce_mean(q_total)})


class RecurrentVDNTrainer(SequenceLearning, VDNTrainer):
    """VDN's (and QMIX's) team loss for recurrent Q-networks, on stored sequences.

    Every network is unrolled over each sequence as `SequenceLearning` says;
    the mixer runs at every step t with that step's global state s_t:
      - Q_tot(t) = mixer(Q_i(o_t, a_t) of the agents present at t, 0 for the others; s_t);
      - V_tot(t) = target mixer(each present agent's target-network Q at the legal action
        its online network ranks highest; s_t);
      - target(t) = the team's n-step return from t, bootstrapped with V_tot (see
        `n_step_targets`; team reward and discount as in `VDNTrainer`);
    the loss is the mean over the batch's trained steps (padding, final
    observations and burn-in masked out) of the Huber (or squared) TD error.
    """

    def sequence_global_states(self, steps: Any) -> tf.Tensor:
        """[T, B, S]: each step's `env_state` extras, or all agents' observations concatenated."""
        extras = steps.extras
        if "env_state" in extras:
            return tf.cast(swap_batch_and_time(extras["env_state"]), tf.float32)
        columns = []
        for key in self.networks.agents_by_network:
            observation = tf.cast(swap_batch_and_time(steps.observation[key].observation),
                                  tf.float32)
            shape = tf.shape(observation)
            columns.append(tf.reshape(observation, [shape[0], shape[1], -1]))
        return tf.concat(columns, axis=2)

    def joint_loss(self, steps: Any, weights: tf.Tensor) -> JointLoss:
        """The team loss described in the class docstring; priorities are max |TD| per item."""
        batch_size = tf.shape(weights)[0]

        def per_agent(values: tf.Tensor) -> tf.Tensor:  # [T, B * A] -> [T, B, A]
            return tf.reshape(values, [values.shape[0], batch_size, -1])

        chosen, bootstrap, present, rewards, discounts = [], [], [], [], []
        for key in self.networks.agents_by_network:
            values = self.sequence_q_values(key, steps)
            chosen.append(per_agent(values.chosen))
            bootstrap.append(per_agent(values.bootstrap))
            present.append(per_agent(values.present))
            rewards.append(per_agent(tf.cast(time_major(steps.reward[key]), tf.float32)))
            discounts.append(per_agent(tf.cast(time_major(steps.discount[key]), tf.float32)))
        # Which steps have an action, and which are trained on: the same for every agent.
        acted, trained = (per_agent(mask)[:, :, 0] for mask in (values.acted, values.trained))
        chosen, bootstrap, present, rewards, discounts = (
            tf.concat(values, axis=2) for values in (chosen, bootstrap, present, rewards,
                                                     discounts))
        states = self.sequence_global_states(steps)
        length = states.shape[0]
        mixer = self.modules[MIXER]
        target_mixer = mixer.target if mixer.target is not None else mixer.online

        def mix(module: Any, agent_values: tf.Tensor) -> tf.Tensor:  # [T, B, N] -> [T, B]
            flat = module(tf.reshape(agent_values, [-1, agent_values.shape[2]]),
                          tf.reshape(states, [-1, states.shape[2]]))
            return tf.reshape(flat, [length, batch_size])

        q_total = mix(mixer.online, chosen * present)
        bootstrap_total = tf.stop_gradient(mix(target_mixer, bootstrap * present))
        targets = self.sequence_targets(self.team_reward(rewards), self.team_discount(discounts),
                                        bootstrap_total, acted)
        mask = trained[:-1]
        td_error = (targets - q_total[:-1]) * mask
        per_item = self.masked_loss(self.team_td_losses(td_error), mask)
        loss = tf.reduce_mean(per_item * weights)
        mean_q = tf.reduce_sum(q_total * trained) / tf.maximum(tf.reduce_sum(trained), 1.0)
        return JointLoss(loss, tf.reduce_max(tf.abs(td_error), axis=0), {"q_value": mean_q})
