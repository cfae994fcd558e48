"""The HAPPO trainer: MAPPO's clipped surrogate per agent, the agents updated one after another
in a random order, each on the team's advantage weighted by the M factor."""

from typing import Any, Callable, Dict, List, Mapping, Tuple

from acme.adders.reverb import base as reverb_base
import reverb
import tensorflow as tf

from mava_systems.mappo.execution import AGENTS, CRITIC_STATE, POLICY_STATE
from mava_systems.mappo.training import (MAPPOTrainer, RecurrentMAPPOTrainer, chunked,
                                         masked_mean, unroll)

# The key of the team's critic (and of its optimizer `critic/team` and value normaliser).
TEAM = "team"


class HAPPOTrainer(MAPPOTrainer):
    """Trains one policy per agent and one centralised critic of the global state.

    Each trainer step takes a batch of sequences and:

      1. computes the team's advantages A and value targets once, by GAE over
         the agents' summed rewards (the team's reward when they split it, as
         MaMuJoCo's wrapper does) with the team critic V(s) (`team_data`);
      2. draws a random order of the agents (`update_order`; seeded by
         `config.seed`, a new one every step);
      3. updates the agents' policies in that order (`train_policies`), each
         with `num_epochs` x `num_minibatches` steps of MAPPO's clipped
         surrogate (`policy_loss`) on the advantage M * A, where the M factor
         is the product of the new/old probability ratios, at each step, of
         the agents updated before it in this step (each ratio its policy after
         its update over its policy before, a constant: no gradient flows
         through it); the first agent's M is 1;
      4. trains the critic on the value targets (`value_loss`, its own optimizer).

    Logged per agent: MAPPO's policy statistics and `m_factor` (the mean M its
    update used); per `team`: `value_loss`, `critic_gradient_norm` and `value_target`.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._agent_order = tf.Variable(tf.range(len(self._networks.policies)), trainable=False,
                                        name="agent_order")

    @property
    def agent_order(self) -> List[str]:
        """The network keys (one per agent) in the order the last step updated them."""
        keys = list(self._networks.policies)
        return [keys[index] for index in self._agent_order.numpy()]

    def critic_fetch_names(self) -> List[str]:
        """The statistics of a critic step (`critic_step`): the value loss's and its norm."""
        return ["value_loss", "critic_gradient_norm"]

    def policy_fetch_names(self) -> List[str]:
        """The statistics of a policy step (`policy_step`): the other names `fetch_names` lists."""
        critic = set(self.critic_fetch_names())
        return [name for name in self.fetch_names() if name not in critic]

    def team_inputs(self, steps: reverb_base.Step) -> tf.Tensor:
        """What the team critic sees, [B, T, 1, S]: the global state (see `global_states`)."""
        return self.global_states(steps)[:, :, None]

    def team_rewards(self, steps: reverb_base.Step) -> tf.Tensor:
        """The team's reward after each step's action, [B, T - 1, 1]: the agents' summed."""
        rewards = [tf.cast(reward[:, :-1], tf.float32) for reward in steps.reward.values()]
        return tf.reduce_sum(tf.concat(rewards, axis=-1), axis=-1, keepdims=True)

    def team_discounts(self, steps: reverb_base.Step) -> tf.Tensor:
        """The team's discount after each step's action, [B, T - 1, 1]: the largest of the
        agents' (0 only once every agent has ended)."""
        discounts = [tf.cast(discount[:, :-1], tf.float32) for discount in steps.discount.values()]
        return tf.reduce_max(tf.concat(discounts, axis=-1), axis=-1, keepdims=True)

    def team_data(self, steps: reverb_base.Step, fresh: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The team critic's training data of a batch, [B, T - 1, 1, ...] (see `value_data`)."""
        return self.value_data(TEAM, steps, self.team_inputs(steps), self.team_rewards(steps),
                               self.team_discounts(steps), fresh)

    def agent_batch(self, key: str, steps: reverb_base.Step, team: Mapping[str, tf.Tensor]
                    ) -> Dict[str, tf.Tensor]:
        """Agent `key`'s policy training data, [B, T - 1, 1, ...]: its acting data (see
        `policy_data`) with the team's advantages and transitions (`team`, see `team_data`)."""
        return {**self.policy_data(key, steps), "advantages": team["advantages"],
                "is_transition": team["is_transition"]}

    def critic_batch(self, steps: reverb_base.Step, team: Dict[str, tf.Tensor]
                     ) -> Dict[str, tf.Tensor]:
        """The team critic's training data: `team` (see `team_data`)."""
        del steps
        return team

    def update_order(self) -> tf.Tensor:
        """A random permutation of the agents' indices (in `networks.policies`' order): [N]."""
        return tf.argsort(self._generator.uniform([len(self._networks.policies)]))

    def batch_log_probs(self, key: str, batch: Mapping[str, tf.Tensor]) -> tf.Tensor:
        """log pi_key(action | observation) of every entry of `batch` with the policy as it is:
        [B, T - 1, 1]."""
        outputs = self.policy_outputs(key, batch)
        return self._networks.heads[key].log_prob(outputs, batch["legal_actions"],
                                                  batch["action"])

    def train_agent(self, key: str, batch: Mapping[str, tf.Tensor], factor: tf.Tensor
                    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """Updates agent `key`'s policy on its `batch` with the advantages weighted by the M
        `factor` [B, T - 1, 1]; returns the factor times its new/old ratio (1 off transitions;
        held constant) and the update's mean statistics (with `m_factor`, the mean factor used)."""
        mask = batch["is_transition"]
        factor = tf.stop_gradient(factor)
        batch = {**batch, "advantages": batch["advantages"] * factor}
        before = self.batch_log_probs(key, batch)
        fetches = self.run_epochs(batch, lambda minibatch: self.checked_policy_step(key, minibatch),
                                  self.policy_fetch_names())
        after = self.batch_log_probs(key, batch)
        ratio = tf.exp(tf.where(mask, after - before, 0.0))
        fetches["m_factor"] = masked_mean(factor, mask)
        return tf.stop_gradient(factor * ratio), fetches

    def checked_policy_step(self, key: str, batch: Mapping[str, tf.Tensor]
                            ) -> Dict[str, tf.Tensor]:
        """`policy_step`, its statistics checked against `policy_fetch_names`."""
        fetches = self.policy_step(key, dict(batch))
        self.check_fetches(fetches, self.policy_fetch_names())
        return fetches

    def train_policies(self, order: tf.Tensor, batches: Mapping[str, Mapping[str, tf.Tensor]]
                       ) -> Dict[str, tf.Tensor]:
        """Updates every agent's policy, one after another in `order` ([N] indices into
        `networks.policies`), each on its batch with the M factor of those before it (see
        `train_agent`); `{"<statistic>/<key>": mean}`.

        One graph loop over the positions, choosing the agent by its index (each agent's update
        is traced once, whatever the order).
        """
        keys = list(self._networks.policies)
        names = self.policy_fetch_names() + ["m_factor"]

        def branch(key: str) -> Callable[[tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]:
            def update(factor: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
                factor, fetches = self.train_agent(key, batches[key], factor)
                return factor, tf.stack([fetches[name] for name in names])
            return update

        branches = [branch(key) for key in keys]

        def body(position: tf.Tensor, factor: tf.Tensor, statistics: tf.Tensor):
            index = order[position]
            factor, row = tf.switch_case(index, [lambda update=update: update(factor)
                                                 for update in branches])
            return position + 1, factor, tf.tensor_scatter_nd_update(statistics, [[index]], [row])

        first = batches[keys[0]]["advantages"]
        _, _, statistics = tf.while_loop(
            lambda position, factor, statistics: position < len(keys), body,
            (tf.constant(0), tf.ones_like(first), tf.zeros([len(keys), len(names)])),
            shape_invariants=(tf.TensorShape([]), first.shape, tf.TensorShape([len(keys),
                                                                             len(names)])))
        return {f"{name}/{key}": statistics[row, column]
                for row, key in enumerate(keys) for column, name in enumerate(names)}

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One HAPPO update on a batch of sequences (see the class); returns the scalars to log."""
        steps = sample.data
        fresh, fetches = self.fresh_sequences(steps)
        team = self.team_data(steps, fresh)
        batches = {key: self.agent_batch(key, steps, team) for key in self._networks.policies}
        order = self.update_order()
        self._agent_order.assign(order)
        fetches.update(self.train_policies(order, batches))
        critic = self.run_epochs(self.critic_batch(steps, team),
                                 lambda minibatch: self.critic_step(TEAM, minibatch),
                                 self.critic_fetch_names())
        critic["value_target"] = masked_mean(team["value_targets"], team["is_transition"])
        fetches.update({f"{name}/{TEAM}": value for name, value in critic.items()})
        self.count_step(after=fetches)
        return fetches


class RecurrentHAPPOTrainer(HAPPOTrainer, RecurrentMAPPOTrainer):
    """HAPPO's trainer for recurrent policies and a recurrent team critic: each agent's update,
    and the M factor it passes on, on chunks unrolled from the states stored with them.

    As `RecurrentMAPPOTrainer`: the team's advantages and value targets are
    computed over each whole sequence, the team critic unrolled from the state
    stored at its first step; then every agent's data, and the critic's, is cut
    into chunks of `config.steps_per_chunk` steps, each unrolled from the states
    stored at its first step (episode starts within a chunk take their stored,
    initial, state). An agent's new/old ratios, and so the next agents' M
    factor, are those of its policy unrolled over the chunks.
    """

    def sequence_values(self, key: str, steps: reverb_base.Step,
                        critic_inputs: tf.Tensor) -> tf.Tensor:
        """The team critic unrolled over each sequence from its stored state, in return units
        (its one state row advances at every step, as the executors step it)."""
        return self.denormalised(key, unroll(
            self._networks.critics[key], critic_inputs, steps.observation[CRITIC_STATE][key],
            steps.start_of_episode, tf.ones(tf.shape(critic_inputs)[:3])))

    def agent_batch(self, key: str, steps: reverb_base.Step, team: Mapping[str, tf.Tensor]
                    ) -> Dict[str, tf.Tensor]:
        """`HAPPOTrainer.agent_batch`'s data with the policy states stored at each step, which
        steps start an episode and whether the agent is present, cut into chunks:
        [B * chunks, chunk_length, 1, ...]."""
        observation = steps.observation
        batch = {**super().agent_batch(key, steps, team),
                 POLICY_STATE: tf.nest.map_structure(lambda state: state[:, :-1],
                                                     observation[POLICY_STATE][key]),
                 "resets": steps.start_of_episode[:, :-1],
                 "present": 1.0 - tf.cast(observation[AGENTS][key].terminal[:, :-1],
                                          tf.float32)}
        return chunked(batch, self._config.steps_per_chunk)

    def critic_batch(self, steps: reverb_base.Step, team: Dict[str, tf.Tensor]
                     ) -> Dict[str, tf.Tensor]:
        """`team` with the team critic's state stored at each step and which steps start an
        episode, cut into chunks: [B * chunks, chunk_length, 1, ...]."""
        batch = {**team,
                 CRITIC_STATE: tf.nest.map_structure(lambda state: state[:, :-1],
                                                     steps.observation[CRITIC_STATE][TEAM]),
                 "resets": steps.start_of_episode[:, :-1],
                 "present": tf.ones_like(team["advantages"])}
        return chunked(batch, self._config.steps_per_chunk)
