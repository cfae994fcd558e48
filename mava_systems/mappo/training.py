"""The MAPPO trainer: PPO's clipped surrogate and value loss over GAE advantages, per network.

Each trainer step takes one batch of sequences off the queue, computes every
transition's advantage and value target once (generalized advantage
estimation with the critic as it stands), then makes `num_epochs` passes over
the batch in `num_minibatches` shuffled minibatches of whole sequences.
"""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from acme.adders.reverb import base as reverb_base
from acme.utils import counting, loggers
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf

from mava_systems.training.trainer_loop import TrainerLoop
from mava_systems.madqn.networks import variables_as_numpy
from mava_systems.mappo.config import MAPPOConfig
from mava_systems.mappo.execution import AGENTS, CRITIC_STATE, POLICY_STATE
from mava_systems.mappo.networks import MAPPONetworks

# The extra (and variable name) holding the trainer step of the policy that acted.
POLICY_VERSION = "policy_version"


def generalized_advantages(rewards: tf.Tensor, discounts: tf.Tensor, values: tf.Tensor,
                           is_transition: tf.Tensor, lambda_: float) -> tf.Tensor:
    """GAE(lambda) advantages of time-major sequences that may hold several episodes.

    Args:
      rewards: [T - 1, ...] the reward after each step's action.
      discounts: [T - 1, ...] the discount (already times gamma) after each step's action.
      values: [T, ...] the value of each step's observation (the last is the bootstrap).
      is_transition: [T - 1, ...] False where a step holds an episode's final
        observation (the next step starts an episode): no action was taken there.
      lambda_: the GAE lambda.

    Returns:
      [T - 1, ...]: A_t = delta_t + discount_t lambda A_{t+1}, with
      delta_t = r_t + discount_t V_{t+1} - V_t; the sum stops at an episode's end
      and at the sequence's end; 0 where `is_transition` is False.
    """
    transition = tf.cast(is_transition, tf.float32)
    deltas = rewards + discounts * values[1:] - values[:-1]
    # Whether step t + 1's advantage continues step t's sum.
    continues = tf.concat([transition[1:], tf.zeros_like(transition[:1])], axis=0)

    def accumulate(next_advantage, step):
        delta, discount, next_continues = step
        return delta + discount * lambda_ * next_continues * next_advantage

    advantages = tf.scan(accumulate, (deltas, discounts, continues),
                         initializer=tf.zeros_like(deltas[0]), reverse=True)
    return advantages * transition


def masked_mean(values: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """The mean of `values` where `mask` (broadcast to them) is True; 0 if nowhere."""
    mask = tf.broadcast_to(mask, tf.shape(values))
    total = tf.reduce_sum(tf.where(mask, values, 0.0))
    return total / tf.maximum(tf.reduce_sum(tf.cast(mask, tf.float32)), 1.0)


class RunningMeanStd(snt.Module):
    """The running mean and variance of every value it was updated with (checkpointed with
    the trainer); standardises values and undoes it."""

    def __init__(self, epsilon: float = 1e-5, name: str = "running_mean_std"):
        super().__init__(name=name)
        self._epsilon = epsilon
        self.mean = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="mean")
        self.variance = tf.Variable(1.0, dtype=tf.float64, trainable=False, name="variance")
        self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="count")

    def update(self, values: tf.Tensor, mask: tf.Tensor) -> None:
        """Adds the values where `mask` is True (Chan et al.'s parallel update)."""
        values = tf.cast(tf.boolean_mask(values, tf.broadcast_to(mask, tf.shape(values))),
                         tf.float64)
        count = tf.cast(tf.size(values), tf.float64)
        if count > 0:
            mean = tf.reduce_mean(values)
            variance = tf.reduce_mean(tf.square(values - mean))
            total = self.count + count
            delta = mean - self.mean
            first = tf.cast(self.count == 0, tf.float64)  # The prior variance counts for nothing.
            new_variance = ((1 - first) * self.variance * self.count + variance * count
                            + tf.square(delta) * self.count * count / total) / total
            self.mean.assign_add(delta * count / total)
            self.variance.assign(new_variance)
            self.count.assign(total)

    def _std(self) -> tf.Tensor:
        return tf.cast(tf.sqrt(self.variance + self._epsilon), tf.float32)

    def normalize(self, values: tf.Tensor) -> tf.Tensor:
        """(values - mean) / std."""
        return (values - tf.cast(self.mean, tf.float32)) / self._std()

    def denormalize(self, values: tf.Tensor) -> tf.Tensor:
        """values * std + mean: undoes `normalize`."""
        return values * self._std() + tf.cast(self.mean, tf.float32)


def merge_leading(tensor: tf.Tensor, dims: int) -> tf.Tensor:
    """Merges the leading `dims` axes into one: [d1, ..., dk, ...] -> [d1 * ... * dk, ...]."""
    shape = tf.shape(tensor)
    return tf.reshape(tensor, tf.concat([[-1], shape[dims:]], axis=0))


def apply_rows(module: Callable[[tf.Tensor], Any], inputs: tf.Tensor, dims: int) -> Any:
    """`module` on `inputs` [d1..dk, ...] as one batch of rows; outputs reshaped to [d1..dk, ...]."""
    leading = tf.shape(inputs)[:dims]
    outputs = module(merge_leading(inputs, dims))
    return tf.nest.map_structure(
        lambda output: tf.reshape(output, tf.concat([leading, tf.shape(output)[1:]], axis=0)),
        outputs)


def flatten_trailing(tensor: tf.Tensor, dims: int) -> tf.Tensor:
    """Keeps the leading `dims` axes and flattens the rest: [d1..dk, ...] -> [d1..dk, n] float32."""
    shape = tf.shape(tensor)
    return tf.reshape(tf.cast(tensor, tf.float32), tf.concat([shape[:dims], [-1]], axis=0))


class MAPPOTrainer(TrainerLoop):
    """Trains every policy and critic from batches of sequences taken off the queue.

    Agents sharing networks are trained as one batch. Sequences overlap by one
    step and may cross episode boundaries; the step holding an episode's final
    observation is only a bootstrap value. Sequences acted on more than
    `max_policy_lag` trainer steps before are dropped and counted
    (`dropped_sequences`).
    """

    def __init__(
        self,
        networks: MAPPONetworks,
        dataset: Iterator[reverb.ReplaySample],
        config: MAPPOConfig,
        state_from_observations: bool = False,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        steps_per_call: int = 1,
    ):
        self._networks = networks
        self._config = config
        self._centralised = config.critic == "centralised"
        self._state_from_observations = state_from_observations
        self._discount = tf.constant(config.discount, tf.float32)
        self._max_abs_reward = (float("inf") if config.max_abs_reward is None
                                else config.max_abs_reward)
        if config.separate_optimizers:
            self._optimizers = {
                **{f"policy/{key}": snt.optimizers.Adam(config.learning_rate)
                   for key in networks.policies},
                **{f"critic/{key}": snt.optimizers.Adam(config.critic_learning_rate)
                   for key in networks.critics}}
        else:
            self._optimizers = {key: snt.optimizers.Adam(config.learning_rate)
                                for key in networks.policies}
        self._normalisers = ({key: RunningMeanStd() for key in networks.critics}
                             if config.normalize_values else {})
        self._create_optimizer_slots()
        self._generator = tf.random.Generator.from_seed(config.seed)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._dropped_sequences = tf.Variable(0, dtype=tf.int64, trainable=False)
        super().__init__(dataset, counter, logger, make_checkpointing,
                         steps_per_call=steps_per_call, jit_compile=config.jit_compile)  # Restores `state`.

    def optimizer_variables(self, name: str) -> List[tf.Variable]:
        """The variables optimizer `name` updates (`policy/<key>`, `critic/<key>` or `<key>`)."""
        kind, _, key = name.rpartition("/")
        if kind == "policy":
            return list(self._networks.policies[key].trainable_variables)
        if kind == "critic":
            return list(self._networks.critics[key].trainable_variables)
        return (list(self._networks.policies[key].trainable_variables)
                + list(self._networks.critics[key].trainable_variables))

    def _create_optimizer_slots(self) -> None:
        # A zero update (no parameter moves: Adam's moments are zero) creates every slot now,
        # outside the compiled step, whose updates are conditional (see `_apply`).
        for name, optimizer in self._optimizers.items():
            variables = self.optimizer_variables(name)
            optimizer.apply([tf.zeros_like(variable) for variable in variables], variables)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps,
                                 "dropped_sequences": self._dropped_sequences}
        state.update(self._networks.trained_modules())
        state.update({f"optimizer/{key}": optimizer for key, optimizer in self._optimizers.items()})
        state.update({f"value_normaliser/{key}": normaliser
                      for key, normaliser in self._normalisers.items()})
        return state

    @property
    def networks(self) -> MAPPONetworks:
        """The policies and critics this trainer trains, and each policy's action head."""
        return self._networks

    @property
    def config(self) -> MAPPOConfig:
        """The hyper-parameters this trainer trains with."""
        return self._config

    @property
    def dropped_sequences(self) -> int:
        """Sequences dropped for being older than `max_policy_lag`, restored runs' included."""
        return int(self._dropped_sequences.numpy())

    def values(self, key: str, critic_inputs: tf.Tensor, dims: int) -> tf.Tensor:
        """The critic's values of network `key` in return units (denormalised): [d1..dk]."""
        return self.denormalised(key, apply_rows(self._networks.critics[key], critic_inputs, dims))

    def denormalised(self, key: str, values: tf.Tensor) -> tf.Tensor:
        """Values of network `key`'s critic in return units."""
        if key in self._normalisers:
            return self._normalisers[key].denormalize(values)
        return values

    def sequence_values(self, key: str, steps: reverb_base.Step,
                        critic_inputs: tf.Tensor) -> tf.Tensor:
        """The critic's values (in return units) at every step of the batch's sequences [B, T, A]."""
        del steps
        return self.values(key, critic_inputs, 3)

    def policy_outputs(self, key: str, batch: Dict[str, Any]) -> Any:
        """Network `key`'s policy outputs on a minibatch's observations: [B, T, A, ...]."""
        return apply_rows(self._networks.policies[key], batch["observation"], 3)

    def critic_values(self, key: str, batch: Dict[str, Any]) -> tf.Tensor:
        """Network `key`'s critic values (in its units) on a minibatch: [B, T, A]."""
        return apply_rows(self._networks.critics[key], batch["critic_inputs"], 3)

    def critic_inputs(self, key: str, steps: reverb_base.Step) -> tf.Tensor:
        """What network `key`'s critic sees, [B, T, A, C]: each agent's flattened observation,
        after the global state when centralised."""
        own = flatten_trailing(steps.observation[AGENTS][key].observation, 3)
        if not self._centralised:
            return own
        num_agents = tf.shape(own)[2]
        state = tf.tile(self.global_states(steps)[:, :, None], tf.stack([1, 1, num_agents, 1]))
        return tf.concat([state, own], axis=-1)

    def global_states(self, steps: reverb_base.Step) -> tf.Tensor:
        """The global state at every step, [B, T, S]: the environment's `env_state`, or every
        agent's flattened observation concatenated (networks in sorted order) when it has none."""
        if self._state_from_observations:
            return tf.concat([flatten_trailing(observation.observation, 2)
                              for _, observation in sorted(steps.observation[AGENTS].items())],
                             axis=-1)
        return flatten_trailing(steps.observation["env_state"], 2)

    def prepare(self, key: str, steps: reverb_base.Step, fresh: tf.Tensor) -> Dict[str, tf.Tensor]:
        """Network `key`'s training data of a batch, [B, T - 1, A, ...]: `policy_data`'s and
        `value_data`'s (of its critic, on its agents' rewards and discounts).

        `fresh` [B] says which sequences are recent enough to train on.
        """
        batch = self.value_data(key, steps, self.critic_inputs(key, steps),
                                steps.reward[key][:, :-1], steps.discount[key][:, :-1], fresh)
        batch.update(self.policy_data(key, steps))
        return batch

    def policy_data(self, key: str, steps: reverb_base.Step) -> Dict[str, tf.Tensor]:
        """Network `key`'s acting data of a batch, [B, T - 1, A, ...]: observations, legal
        actions, actions and their behaviour log-probabilities."""
        observation = steps.observation[AGENTS][key]
        return {"observation": observation.observation[:, :-1],
                "legal_actions": observation.legal_actions[:, :-1],
                "action": steps.action[key][:, :-1],
                "behaviour_log_prob": steps.extras["log_prob"][key][:, :-1]}

    def value_data(self, key: str, steps: reverb_base.Step, critic_inputs: tf.Tensor,
                   rewards: tf.Tensor, discounts: tf.Tensor, fresh: tf.Tensor
                   ) -> Dict[str, tf.Tensor]:
        """Critic `key`'s data of a batch, [B, T - 1, A, ...]: its inputs, the (normalised)
        advantages, value targets and old values (in the critic's units), and which entries are
        transitions to train on.

        Args:
          key: the critic (and value normaliser) to use.
          steps: the batch's sequences [B, T, ...].
          critic_inputs: [B, T, A, C] what the critic sees at every step.
          rewards: [B, T - 1, A] after each step's action (not yet clipped).
          discounts: [B, T - 1, A] after each step's action (not yet times the config's
            discount).
          fresh: [B] which sequences are recent enough to train on.
        """
        old_values = self.sequence_values(key, steps, critic_inputs)  # [B, T, A]
        num_agents = tf.shape(old_values)[2]
        starts = tf.tile(steps.start_of_episode[:, 1:, None], tf.stack([1, 1, num_agents]))
        is_transition = tf.logical_and(tf.logical_not(starts), fresh[:, None, None])
        rewards = tf.clip_by_value(tf.cast(rewards, tf.float32),
                                   -self._max_abs_reward, self._max_abs_reward)
        discounts = self._discount * tf.cast(discounts, tf.float32)

        def time_major(tensor: tf.Tensor) -> tf.Tensor:
            return tf.transpose(tensor, [1, 0, 2])

        advantages = time_major(generalized_advantages(
            time_major(rewards), time_major(discounts), time_major(old_values),
            time_major(is_transition), self._config.gae_lambda))
        returns = advantages + old_values[:, :-1]
        old_values = old_values[:, :-1]
        if key in self._normalisers:
            normaliser = self._normalisers[key]
            normaliser.update(returns, is_transition)
            returns, old_values = normaliser.normalize(returns), normaliser.normalize(old_values)
        if self._config.normalize_advantages:
            mean = masked_mean(advantages, is_transition)
            std = tf.sqrt(masked_mean(tf.square(advantages - mean), is_transition))
            advantages = (advantages - mean) / (std + 1e-8)
        return {"critic_inputs": critic_inputs[:, :-1], "advantages": advantages,
                "value_targets": returns, "old_values": old_values,
                "is_transition": is_transition}

    def policy_loss(self, key: str, batch: Dict[str, tf.Tensor]
                    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The clipped surrogate loss (minus the entropy bonus) on a minibatch, and statistics."""
        head = self._networks.heads[key]
        mask = batch["is_transition"]
        outputs = self.policy_outputs(key, batch)
        log_prob = head.log_prob(outputs, batch["legal_actions"], batch["action"])
        # Zeroed off transitions before exp(): their stored log-probabilities are padding.
        log_ratio = tf.where(mask, log_prob - batch["behaviour_log_prob"], 0.0)
        ratio = tf.exp(log_ratio)
        epsilon = self._config.clip_epsilon
        advantages = batch["advantages"]
        surrogate = tf.minimum(ratio * advantages,
                               tf.clip_by_value(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages)
        entropy = masked_mean(head.entropy(outputs, batch["legal_actions"]), mask)
        loss = -masked_mean(surrogate, mask) - self._config.entropy_cost * entropy
        return loss, {
            "policy_loss": loss, "entropy": entropy,
            "clip_fraction": masked_mean(tf.cast(tf.abs(ratio - 1.0) > epsilon, tf.float32), mask),
            "approx_kl": masked_mean(ratio - 1.0 - log_ratio, mask)}

    def value_loss(self, key: str, batch: Dict[str, tf.Tensor]
                   ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """The (optionally clipped) squared value error in the critic's units, weighted by
        `baseline_cost`, on a minibatch."""
        values = self.critic_values(key, batch)
        targets = batch["value_targets"]
        error = 0.5 * tf.square(values - targets)
        clip = self._config.value_clip_epsilon
        if clip is not None:
            old = batch["old_values"]
            clipped = old + tf.clip_by_value(values - old, -clip, clip)
            error = tf.maximum(error, 0.5 * tf.square(clipped - targets))
        loss = self._config.baseline_cost * masked_mean(error, batch["is_transition"])
        return loss, {"value_loss": loss}

    def minibatch_step(self, key: str, batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """One clipped gradient step of network `key`'s policy and critic on a minibatch."""
        if self._config.separate_optimizers:
            fetches = {**self.policy_step(key, batch), **self.critic_step(key, batch)}
        else:
            with tf.GradientTape() as tape:
                policy_loss, fetches = self.policy_loss(key, batch)
                value_loss, value_fetches = self.value_loss(key, batch)
            fetches.update(value_fetches)
            fetches["gradient_norm"] = self._apply(tape, policy_loss + value_loss, key,
                                                   tf.reduce_any(batch["is_transition"]))
        self.check_fetches(fetches)
        return fetches

    def policy_step(self, key: str, batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """One clipped step of policy `key`'s optimizer on `policy_loss` (separate optimizers):
        the loss's statistics and `policy_gradient_norm`."""
        with tf.GradientTape() as tape:
            loss, fetches = self.policy_loss(key, batch)
        fetches["policy_gradient_norm"] = self._apply(tape, loss, f"policy/{key}",
                                                      tf.reduce_any(batch["is_transition"]))
        return fetches

    def critic_step(self, key: str, batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """One clipped step of critic `key`'s optimizer on `value_loss` (separate optimizers):
        the loss's statistics and `critic_gradient_norm`."""
        with tf.GradientTape() as tape:
            loss, fetches = self.value_loss(key, batch)
        fetches["critic_gradient_norm"] = self._apply(tape, loss, f"critic/{key}",
                                                      tf.reduce_any(batch["is_transition"]))
        return fetches

    def check_fetches(self, fetches: Mapping[str, Any],
                      expected: Optional[Sequence[str]] = None) -> None:
        """Checks (when the step is traced, before any training) that a minibatch step returns
        exactly the statistics `expected` (None: all `fetch_names` lists): the losses' and the
        gradient norms.

        Raises:
          ValueError: naming the missing or unlisted statistics and what to override.
        """
        expected = set(self.fetch_names() if expected is None else expected)
        returned = set(fetches)
        if expected != returned:
            name = type(self).__name__
            raise ValueError(
                f"{name}: policy_loss and value_loss must return, with the gradient norms, every "
                f"statistic fetch_names() lists and no other; missing "
                f"{sorted(expected - returned)}, not listed {sorted(returned - expected)}: "
                f"return them from the losses, or override {name}.fetch_names")

    def _apply(self, tape: tf.GradientTape, loss: tf.Tensor, optimizer: str,
               has_data: tf.Tensor) -> tf.Tensor:
        """A clipped step of `optimizer` on `loss` (none without data: Adam's momentum would
        still move the variables); returns the gradients' norm before clipping."""
        variables = self.optimizer_variables(optimizer)
        gradients = tape.gradient(loss, variables)
        gradients, norm = tf.clip_by_global_norm(gradients, self._config.max_gradient_norm)
        if has_data:
            self._optimizers[optimizer].apply(gradients, variables)
        return norm

    def fetch_names(self) -> List[str]:
        """The statistics `minibatch_step` returns (averaged over the minibatches, logged as
        `<name>/<network>`): the names `policy_loss` and `value_loss` return, and the gradient
        norms. A subclass whose losses return other statistics lists them here."""
        norms = (["policy_gradient_norm", "critic_gradient_norm"]
                 if self._config.separate_optimizers else ["gradient_norm"])
        return ["policy_loss", "entropy", "clip_fraction", "approx_kl", "value_loss"] + norms

    def train_network(self, key: str, steps: reverb_base.Step, fresh: tf.Tensor
                      ) -> Dict[str, tf.Tensor]:
        """`num_epochs` passes of minibatch steps over network `key`'s data; mean statistics."""
        batch = self.prepare(key, steps, fresh)
        fetches = self.run_epochs(batch, lambda minibatch: self.minibatch_step(key, minibatch),
                                  self.fetch_names())
        fetches["value_target"] = masked_mean(batch["value_targets"], batch["is_transition"])
        return fetches

    def run_epochs(self, batch: Dict[str, Any],
                   step: Callable[[Dict[str, Any]], Mapping[str, tf.Tensor]],
                   names: Sequence[str]) -> Dict[str, tf.Tensor]:
        """`num_epochs` passes of `step` over `batch` (its leading axis: sequences or chunks) in
        `num_minibatches` shuffled minibatches each; the mean of each of `names` over the steps.

        The passes are one graph loop (not unrolled): tracing takes the same time
        for any number of epochs and minibatches.
        """
        num_epochs, num_minibatches = self._config.num_epochs, self._config.num_minibatches
        batch_size = tf.shape(batch["is_transition"])[0]
        minibatch_size = batch_size // num_minibatches
        # One shuffled order of the sequences per epoch.
        orders = tf.argsort(self._generator.uniform(tf.stack([num_epochs, batch_size])), axis=-1)

        def update(index: tf.Tensor, totals: Dict[str, tf.Tensor]):
            start = (index % num_minibatches) * minibatch_size
            rows = orders[index // num_minibatches, start:start + minibatch_size]
            minibatch = tf.nest.map_structure(lambda value: tf.gather(value, rows), batch)
            fetches = step(minibatch)
            return index + 1, {name: totals[name] + fetches[name] for name in totals}

        updates = num_epochs * num_minibatches
        _, totals = tf.while_loop(
            lambda index, totals: index < updates, update,
            (tf.constant(0), {name: tf.constant(0.0) for name in names}))
        return {name: total / updates for name, total in totals.items()}

    def policy_lag(self, steps: reverb_base.Step) -> tf.Tensor:
        """[B] trainer steps since the oldest policy that acted in each sequence.

        Only steps that took an action count: Acme zero-fills the extras of the
        step holding an episode's final observation.
        """
        versions = steps.extras[POLICY_VERSION][:, :-1]
        acted = tf.logical_not(steps.start_of_episode[:, 1:])
        oldest = tf.reduce_min(tf.where(acted, versions, versions.dtype.max), axis=1)
        oldest = tf.where(tf.reduce_any(acted, axis=1), oldest, self._num_steps)
        return self._num_steps - oldest

    def fresh_sequences(self, steps: reverb_base.Step) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """Which sequences [B] are recent enough to train on (see `max_policy_lag`), counting
        the others as dropped, and the policy-lag statistics to log."""
        lag = self.policy_lag(steps)
        if self._config.max_policy_lag is None:
            fresh = tf.ones_like(lag, tf.bool)
        else:
            fresh = lag <= self._config.max_policy_lag
        self._dropped_sequences.assign_add(
            tf.reduce_sum(tf.cast(tf.logical_not(fresh), tf.int64)))
        return fresh, {"policy_lag": tf.reduce_mean(tf.cast(lag, tf.float32)),
                       "policy_lag_max": tf.cast(tf.reduce_max(lag), tf.float32),
                       "dropped_sequences": tf.cast(self._dropped_sequences, tf.float32)}

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """PPO epochs on a batch of sequences for every network; returns the scalars to log."""
        steps = sample.data
        fresh, fetches = self.fresh_sequences(steps)
        for key in self._networks.policies:
            fetches.update({f"{name}/{key}": value
                            for name, value in self.train_network(key, steps, fresh).items()})
        self.count_step(after=fetches)
        return fetches

    def get_variables(self, names: Sequence[str]) -> List[List[Any]]:
        """The current variables of the named policies (and, for `policy_version`, the trainer
        step they are from): what executors act with."""
        return [[self._num_steps.numpy()] if name == POLICY_VERSION
                else variables_as_numpy(self._networks.critics, [name[len("critic/"):]])[0]
                if name.startswith("critic/")
                else variables_as_numpy(self._networks.policies, [name])[0] for name in names]


def unroll(core: Any, inputs: tf.Tensor, stored_states: Any, resets: tf.Tensor,
           present: tf.Tensor) -> Any:
    """A recurrent core over sequences of stacked agents, as executors step it: [B, T, A, ...].

    The state at step 0, and at every step whose `resets` [B, T] is set (an
    episode start), is the one stored there (`stored_states`, a nest of
    [B, T, A, ...]); elsewhere it is the one the previous step left, except
    for agents not `present` ([B, T, A] 0/1: they have left) whose state stays.
    A core with an `unroll_from_stored` method (the reference cores') unrolls
    itself (only its GRU stepped); any other is stepped whole at each step.
    """
    length = inputs.shape[1]
    batch_size, num_agents = tf.shape(inputs)[0], tf.shape(inputs)[2]

    def time_major_rows(tensor: tf.Tensor) -> tf.Tensor:  # [B, T, A, ...] -> [T, B * A, ...]
        perm = [1, 0] + list(range(2, len(tensor.shape)))
        return tf.reshape(tf.transpose(tensor, perm),
                          tf.concat([[length, -1], tf.shape(tensor)[3:]], 0))

    inputs = time_major_rows(inputs)
    stored = tf.nest.map_structure(time_major_rows, stored_states)
    resets = time_major_rows(tf.tile(resets[:, :, None], tf.stack([1, 1, num_agents])))
    present = time_major_rows(present) > 0
    own_unroll = getattr(core, "unroll_from_stored", None)
    if callable(own_unroll):
        outputs = own_unroll(inputs, stored, resets, present)
    else:
        outputs = step_unroll(core, inputs, stored, resets, present)
    leading = tf.stack([batch_size, num_agents])
    return tf.nest.map_structure(
        lambda output: tf.transpose(
            tf.reshape(output, tf.concat([[length], leading, tf.shape(output)[2:]], 0)),
            [1, 0, 2] + list(range(3, len(output.shape) + 1))),
        outputs)


def step_unroll(core: Any, inputs: tf.Tensor, stored: Any, resets: tf.Tensor,
                present: tf.Tensor) -> Any:
    """`unroll` of any core over time-major rows ([T, N, ...]; `resets` and `present` [T, N]
    bool), stepped in a Python loop: outputs [T, N, ...]."""

    def where(condition: tf.Tensor, new: Any, old: Any) -> Any:
        return tf.nest.map_structure(
            lambda n, o: tf.where(tf.reshape(condition, [-1] + [1] * (len(n.shape) - 1)), n, o),
            new, old)

    state = tf.nest.map_structure(lambda states: states[0], stored)
    outputs = []
    for t in range(inputs.shape[0]):
        if t > 0:
            state = where(resets[t], tf.nest.map_structure(lambda states: states[t], stored),
                          state)
        output, new_state = core(inputs[t], state)
        state = where(present[t], new_state, state)
        outputs.append(output)
    return tf.nest.map_structure(lambda *steps: tf.stack(steps), *outputs)


def chunked(batch: Any, length: int) -> Any:
    """Every tensor of `batch` [B, T, ...] cut into chunks of `length` steps (`length` divides
    T): [B * T / length, length, ...], each sequence's chunks in order."""

    def chunks(value: tf.Tensor) -> tf.Tensor:
        cut = tf.reshape(value, tf.concat([[-1, length], tf.shape(value)[2:]], 0))
        cut.set_shape([None, length] + value.shape[2:].as_list())
        return cut

    return tf.nest.map_structure(chunks, batch)


class RecurrentMAPPOTrainer(MAPPOTrainer):
    """MAPPO's trainer for recurrent policies (and critics): chunks unrolled from stored states.

    Advantages and value targets are computed over each whole sequence as the
    feedforward trainer computes them, a recurrent critic unrolled from the
    state stored at the sequence's first step. The sequence's steps (all but its
    bootstrap step) are then cut into chunks of `config.steps_per_chunk` steps
    (the MAPPO paper's data chunks); minibatches hold whole chunks, and the
    policy (and a recurrent critic) is unrolled over each chunk from the states
    stored at its first step (see `unroll`: episode starts within a chunk take
    their stored, initial, state); an MLP critic values each step as the
    feedforward trainer's does. Steps that are not transitions (final
    observations, dropped sequences) are masked out of every loss, as in the
    feedforward trainer.
    """

    def sequence_values(self, key: str, steps: reverb_base.Step,
                        critic_inputs: tf.Tensor) -> tf.Tensor:
        """The critic unrolled over each sequence from its stored state (an MLP critic: on
        each step), in return units."""
        if not self._networks.recurrent_critics:
            return super().sequence_values(key, steps, critic_inputs)
        observation = steps.observation
        return self.denormalised(key, unroll(
            self._networks.critics[key], critic_inputs, observation[CRITIC_STATE][key],
            steps.start_of_episode, 1.0 - tf.cast(observation[AGENTS][key].terminal, tf.float32)))

    def prepare(self, key: str, steps: reverb_base.Step, fresh: tf.Tensor) -> Dict[str, Any]:
        """`MAPPOTrainer.prepare`'s data with each step's stored states, which steps start an
        episode and which agents are present, cut into chunks: [B * chunks, chunk_length, A, ...]."""
        batch = super().prepare(key, steps, fresh)
        observation = steps.observation
        stored = {POLICY_STATE: observation[POLICY_STATE][key]}
        if self._networks.recurrent_critics:
            stored[CRITIC_STATE] = observation[CRITIC_STATE][key]
        batch.update({
            **tf.nest.map_structure(lambda state: state[:, :-1], stored),
            "resets": steps.start_of_episode[:, :-1],
            "present": 1.0 - tf.cast(observation[AGENTS][key].terminal[:, :-1], tf.float32)})
        return chunked(batch, self._config.steps_per_chunk)

    def policy_outputs(self, key: str, batch: Dict[str, Any]) -> Any:
        """The policy unrolled over each chunk from its stored state."""
        return unroll(self._networks.policies[key], batch["observation"], batch[POLICY_STATE],
                      batch["resets"], batch["present"])

    def critic_values(self, key: str, batch: Dict[str, Any]) -> tf.Tensor:
        """The critic unrolled over each chunk from its stored state (an MLP critic: on each
        step), in its units."""
        if not self._networks.recurrent_critics:
            return super().critic_values(key, batch)
        return unroll(self._networks.critics[key], batch["critic_inputs"], batch[CRITIC_STATE],
                      batch["resets"], batch["present"])
