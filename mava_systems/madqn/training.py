"""The MADQN trainer: double Q-learning with n-step targets, per network, from replay."""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from acme import types as acme_types
from acme.tf import losses
from acme.utils import counting, loggers
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
import trfl

from mava_systems.components.trainer_loop import TrainerLoop
from mava_systems.madqn.networks import (MADQNNetworks, mask_illegal, observation_to_input,
                                         variables_as_numpy)


def _merge_agents(stacked: tf.Tensor) -> tf.Tensor:
    """[B, A, ...] -> [B * A, ...]."""
    shape = tf.shape(stacked)
    return tf.reshape(stacked, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))


class MADQNTrainer(TrainerLoop):
    """Trains every online Q-network from sampled n-step transitions.

    Each network is trained on the stacked transitions of all agents that
    share it; targets use double Q-learning over legal next actions, and target
    networks are copied from the online ones every `target_update_period` steps.
    With `unpack`, samples hold packed items (see `ArrayPacker`), unpacked
    before they reach the step.
    """

    def __init__(
        self,
        networks: MADQNNetworks,
        dataset: Iterator[reverb.ReplaySample],
        discount: float,
        learning_rate: float,
        max_gradient_norm: float,
        target_update_period: int,
        importance_sampling_exponent: Optional[float] = None,
        huber_loss_parameter: Optional[float] = 1.0,
        unpack: Optional[Callable[[tf.Tensor], acme_types.Transition]] = None,
        replay_client: Optional[reverb.Client] = None,
        replay_table: str = "priority_table",
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
    ):
        self._networks = networks
        self._agents_by_network = networks.agents_by_network
        self._discount = tf.constant(discount, tf.float32)
        self._max_gradient_norm = max_gradient_norm
        self._target_update_period = target_update_period
        self._importance_sampling_exponent = importance_sampling_exponent
        self._huber_loss_parameter = huber_loss_parameter
        self._replay_client = replay_client
        self._replay_table = replay_table
        self._optimizers = {key: snt.optimizers.Adam(learning_rate) for key in networks.q_networks}
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        super().__init__(dataset, counter, logger, make_checkpointing, unpack)  # Restores `state`.

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps}
        for key in self._networks.q_networks:
            state[f"q_network/{key}"] = self._networks.q_networks[key]
            state[f"target_q_network/{key}"] = self._networks.target_q_networks[key]
            state[f"optimizer/{key}"] = self._optimizers[key]
        return state

    def network_loss(self, key: str, transitions: acme_types.Transition
                     ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Double Q-learning loss and TD error per (transition, agent) of network `key`, and Q(s, .).

        The loss is the Huber loss of the TD error (squared error without a
        `huber_loss_parameter`). Replay holds each network's agents stacked
        ([B, A, ...]); they are trained as one batch of B * A rows, batch-major.
        """
        observation, next_observation = transitions.observation[key], transitions.next_observation[key]
        o_tm1 = observation_to_input(_merge_agents(observation.observation))
        o_t = observation_to_input(_merge_agents(next_observation.observation))
        legal_t = _merge_agents(next_observation.legal_actions)
        a_tm1 = tf.cast(_merge_agents(transitions.action[key]), tf.int32)
        r_t = tf.cast(_merge_agents(transitions.reward[key]), tf.float32)
        d_t = tf.cast(_merge_agents(transitions.discount[key]), tf.float32)

        network = self._networks.q_networks[key]
        q_tm1 = network(o_tm1)
        q_t_value = self._networks.target_q_networks[key](o_t)
        q_t_selector = mask_illegal(network(o_t), legal_t)
        loss, extra = trfl.double_qlearning(
            q_tm1, a_tm1, r_t, self._discount * d_t, q_t_value, q_t_selector)
        if self._huber_loss_parameter is not None:
            loss = losses.huber(extra.td_error, self._huber_loss_parameter)
        return loss, extra.td_error, q_tm1

    def row_priorities(self, td_error: tf.Tensor) -> tf.Tensor:
        """The new priority of each (transition, agent) row from `network_loss`'s TD errors: |TD|.

        A sampled item's priority is the mean over its agents.
        """
        return tf.abs(td_error)

    @tf.function
    def _step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        transitions: acme_types.Transition = sample.data
        batch_size = tf.shape(sample.info.probability)[0]
        if self._importance_sampling_exponent is not None:
            weights = tf.pow(1.0 / tf.cast(sample.info.probability, tf.float32),
                             self._importance_sampling_exponent)
            weights /= tf.reduce_max(weights)
        else:
            weights = tf.ones([batch_size], tf.float32)

        fetches = {}
        abs_td = []
        for key, agents in self._agents_by_network.items():
            network = self._networks.q_networks[key]
            with tf.GradientTape() as tape:
                loss, td_error, q_tm1 = self.network_loss(key, transitions)
                per_transition = tf.reshape(loss, [batch_size, len(agents)])
                loss = tf.reduce_mean(per_transition * weights[:, None])
            variables = network.trainable_variables
            gradients = tape.gradient(loss, variables)
            gradients, gradient_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
            self._optimizers[key].apply(gradients, variables)
            abs_td.append(tf.reshape(self.row_priorities(td_error), [batch_size, len(agents)]))
            fetches[f"loss/{key}"] = loss
            fetches[f"q_value/{key}"] = tf.reduce_mean(q_tm1)
            fetches[f"gradient_norm/{key}"] = gradient_norm

        self._num_steps.assign_add(1)
        if tf.math.mod(self._num_steps, self._target_update_period) == 0:
            for key in self._networks.q_networks:
                for target, source in zip(self._networks.target_q_networks[key].variables,
                                          self._networks.q_networks[key].variables):
                    target.assign(source)
        fetches["priorities"] = tf.reduce_mean(tf.concat(abs_td, axis=1), axis=1)
        return fetches

    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One gradient step per network on `sample` (compiled)."""
        return self._step(sample)

    def after_train_step(self, sample: reverb.ReplaySample, fetches: Dict[str, tf.Tensor]) -> None:
        """Sends the new priorities to replay (prioritised replay only)."""
        priorities = fetches.pop("priorities")
        if self._importance_sampling_exponent is not None and self._replay_client is not None:
            self._replay_client.mutate_priorities(
                table=self._replay_table,
                updates=dict(zip(sample.info.key.numpy(), priorities.numpy().astype(np.float64))))

    def get_variables(self, names: Sequence[str]) -> List[List[np.ndarray]]:
        """The current online variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.q_networks, names)
