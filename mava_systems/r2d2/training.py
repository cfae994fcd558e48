"""The R2D2 trainer: n-step double Q-learning with value rescaling over burnt-in LSTM unrolls."""

from typing import Any, Callable, Iterator, Mapping, Optional

from acme.adders.reverb import base as reverb_base
from acme.tf import losses as acme_losses
from acme.utils import counting, loggers
import reverb
import tensorflow as tf
import tree

from mava_systems.data.sequences import (merge_batch_and_agents, sequence_priorities,
                                         time_major)
from mava_systems.madqn.networks import mask_illegal
from mava_systems.madqn.training import MADQNTrainer
from mava_systems.r2d2.networks import R2D2Networks, unroll


class R2D2Trainer(MADQNTrainer):
    """Trains every recurrent Q-network from prioritised sequences.

    Each sequence's stored LSTM state starts an unroll over the burn-in steps
    (no gradient), then the rest is trained with Acme's value-rescaled n-step
    double-Q loss; importance weights correct the prioritised sampling and the
    sequences' priorities are updated with R2D2's max/mean |TD| mix. The
    step around the loss (weights, clipping, Adam, target copies, priority
    updates) is MADQN's.
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
        unpack: Optional[Callable[[tf.Tensor], Any]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        self._n_step = n_step
        self._burn_in_length = burn_in_length
        self._max_priority_weight = max_priority_weight
        super().__init__(
            networks, dataset, discount, learning_rate, max_gradient_norm, target_update_period,
            importance_sampling_exponent=importance_sampling_exponent, huber_loss_parameter=None,
            unpack=unpack, replay_client=replay_client, replay_table=replay_table, counter=counter,
            logger=logger, make_checkpointing=make_checkpointing,
            steps_per_call=steps_per_call, jit_compile=jit_compile)

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

    def row_priorities(self, td_error: tf.Tensor) -> tf.Tensor:
        """R2D2's priority per sequence column from its TD errors [T, B * A] (see
        `sequence_priorities`)."""
        return sequence_priorities(tf.abs(td_error), self._max_priority_weight)
