"""The R2D2 trainer: n-step double Q-learning with value rescaling over burnt-in LSTM unrolls."""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from acme.adders.reverb import base as reverb_base
from acme.tf import losses as acme_losses
from acme.utils import counting, loggers
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
import tree

from mava_systems.components.sequences import merge_batch_and_agents, time_major
from mava_systems.components.trainer_loop import TrainerLoop
from mava_systems.madqn.networks import mask_illegal, variables_as_numpy
from mava_systems.r2d2.networks import R2D2Networks, unroll


def sequence_priorities(abs_errors: tf.Tensor, max_weight: float) -> tf.Tensor:
    """R2D2's priority per column of |TD errors| [T, N]: w * max + (1 - w) * mean over time."""
    return (max_weight * tf.reduce_max(abs_errors, axis=0)
            + (1.0 - max_weight) * tf.reduce_mean(abs_errors, axis=0))


class R2D2Trainer(TrainerLoop):
    """Trains every recurrent Q-network from prioritised sequences.

    Each sequence's stored LSTM state starts an unroll over the burn-in steps
    (no gradient), then the rest is trained with Acme's value-rescaled n-step
    double-Q loss; importance weights correct the prioritised sampling and the
    sequences' priorities are updated with R2D2's max/mean |TD| mix.
    """

    def __init__(
        self,
        networks: R2D2Networks,
        dataset: Iterator[reverb.ReplaySample],
        discount: float,
        n_step: int,
        burn_in_length: int,
        learning_rate: float,
        max_gradient_norm: float,
        target_update_period: int,
        importance_sampling_exponent: float,
        max_priority_weight: float,
        replay_client: Optional[reverb.Client] = None,
        replay_table: str = "priority_table",
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
    ):
        self._networks = networks
        self._discount = discount
        self._n_step = n_step
        self._burn_in_length = burn_in_length
        self._max_gradient_norm = max_gradient_norm
        self._target_update_period = target_update_period
        self._importance_sampling_exponent = importance_sampling_exponent
        self._max_priority_weight = max_priority_weight
        self._replay_client = replay_client
        self._replay_table = replay_table
        self._optimizers = {key: snt.optimizers.Adam(learning_rate) for key in networks.q_networks}
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        super().__init__(dataset, counter, logger, make_checkpointing)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps}
        for key in self._networks.q_networks:
            state[f"q_network/{key}"] = self._networks.q_networks[key]
            state[f"target_q_network/{key}"] = self._networks.target_q_networks[key]
            state[f"optimizer/{key}"] = self._optimizers[key]
        return state

    def network_loss(self, key: str, steps: reverb_base.Step):
        """Per-column loss [B * A] and TD errors [T, B * A] of network `key` (agents stacked)."""
        observation = steps.observation[key]
        observations = time_major(observation.observation)
        legal_actions = time_major(observation.legal_actions)
        actions = tf.cast(time_major(steps.action[key]), tf.int32)
        rewards = tf.cast(time_major(steps.reward[key]), tf.float32)
        discounts = tf.cast(time_major(steps.discount[key]), tf.float32)
        start_state = tree.map_structure(lambda state: merge_batch_and_agents(state[:, 0]),
                                         steps.extras["core_state"][key])
        network = self._networks.q_networks[key]
        target_network = self._networks.target_q_networks[key]
        state, target_state = start_state, start_state
        burn_in = self._burn_in_length
        if burn_in:
            _, state = unroll(network, observations[:burn_in], state)
            _, target_state = unroll(target_network, observations[:burn_in], target_state)
            state = tree.map_structure(tf.stop_gradient, state)
        observations, legal_actions, actions, rewards, discounts = (
            value[burn_in:] for value in (observations, legal_actions, actions, rewards, discounts))

        q_values, _ = unroll(network, observations, state)
        target_q_values, _ = unroll(target_network, observations, target_state)
        greedy = tf.argmax(mask_illegal(q_values, legal_actions), axis=-1, output_type=tf.int32)
        loss, extra = acme_losses.transformed_n_step_loss(
            qs=q_values, targnet_qs=target_q_values, actions=actions, rewards=rewards[:-1],
            pcontinues=self._discount * discounts[:-1],
            target_policy_probs=tf.one_hot(greedy, q_values.shape[-1], dtype=q_values.dtype),
            bootstrap_n=self._n_step)
        return loss, extra.errors, q_values

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One gradient step per network on a batch of sequences; also returns new priorities."""
        probabilities = tf.cast(sample.info.probability, tf.float32)
        table_size = tf.cast(sample.info.table_size, tf.float32)
        weights = tf.pow(1.0 / (table_size * probabilities), self._importance_sampling_exponent)
        weights /= tf.reduce_max(weights)
        fetches, priorities = {}, []
        for key, agents in self._networks.agents_by_network.items():
            network = self._networks.q_networks[key]
            with tf.GradientTape() as tape:
                loss, errors, q_values = self.network_loss(key, sample.data)
                loss = tf.reduce_mean(loss * tf.repeat(weights, len(agents)))
            variables = network.trainable_variables
            gradients = tape.gradient(loss, variables)
            gradients, gradient_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
            self._optimizers[key].apply(gradients, variables)
            per_column = sequence_priorities(tf.abs(errors), self._max_priority_weight)
            priorities.append(tf.reshape(per_column, [-1, len(agents)]))
            fetches[f"loss/{key}"] = loss
            fetches[f"q_value/{key}"] = tf.reduce_mean(q_values)
            fetches[f"gradient_norm/{key}"] = gradient_norm
        self._num_steps.assign_add(1)
        if tf.math.mod(self._num_steps, self._target_update_period) == 0:
            for key, network in self._networks.q_networks.items():
                for target, source in zip(self._networks.target_q_networks[key].variables,
                                          network.variables):
                    target.assign(source)
        fetches["priorities"] = tf.reduce_mean(tf.concat(priorities, axis=1), axis=1)
        return fetches

    def after_train_step(self, sample: reverb.ReplaySample, fetches: Dict[str, tf.Tensor]) -> None:
        """Sends the sampled sequences' new priorities to replay."""
        priorities = fetches.pop("priorities")
        if self._replay_client is not None:
            self._replay_client.mutate_priorities(
                table=self._replay_table,
                updates=dict(zip(sample.info.key.numpy(), priorities.numpy().astype(np.float64))))

    def get_variables(self, names: Sequence[str]) -> List[List[Any]]:
        """The current online variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.q_networks, names)
