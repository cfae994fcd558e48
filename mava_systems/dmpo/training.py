"""The DMPO trainer: a distributional critic and MPO policy improvement, per network, from replay."""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from acme import types as acme_types
from acme.tf import losses as acme_losses
from acme.tf import networks as acme_networks
from acme.tf import utils as tf2_utils
from acme.utils import counting, loggers
import reverb
import sonnet as snt
import tensorflow as tf

from mava_systems.training.trainer_loop import TrainerLoop
from mava_systems.dmpo.networks import DMPONetworks
from mava_systems.madqn.networks import observation_to_input, variables_as_numpy


def _merge_agents(stacked: tf.Tensor) -> tf.Tensor:
    """[B, A, ...] -> [B * A, ...]."""
    return snt.merge_leading_dims(stacked, num_dims=2)


class DMPOTrainer(TrainerLoop):
    """Trains every policy and critic from sampled n-step transitions, as Acme's DMPO learner.

    The critic learns a categorical return distribution towards the target
    critic's, averaged over actions sampled from the target policy; the policy
    follows MPO's E-step (a temperature-weighted re-weighting of those actions
    under a KL bound) and M-step (a KL-constrained fit to them), with Acme's
    `losses.MPO`. Targets are copied every few steps.
    """

    def __init__(
        self,
        networks: DMPONetworks,
        dataset: Iterator[reverb.ReplaySample],
        discount: float,
        num_samples: int,
        policy_learning_rate: float,
        critic_learning_rate: float,
        dual_learning_rate: float,
        max_gradient_norm: float,
        target_policy_update_period: int,
        target_critic_update_period: int,
        epsilon: float,
        epsilon_mean: float,
        epsilon_stddev: float,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        unpack: Optional[Callable[[tf.Tensor], Any]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        self._networks = networks
        self._discount = discount
        self._num_samples = num_samples
        self._max_gradient_norm = max_gradient_norm
        self._target_policy_update_period = target_policy_update_period
        self._target_critic_update_period = target_critic_update_period
        keys = list(networks.policies)
        self._policy_losses = {key: acme_losses.MPO(
            epsilon=epsilon, epsilon_penalty=1e-3, epsilon_mean=epsilon_mean,
            epsilon_stddev=epsilon_stddev, init_log_temperature=1.0, init_log_alpha_mean=1.0,
            init_log_alpha_stddev=10.0) for key in keys}
        self._policy_optimizers = {key: snt.optimizers.Adam(policy_learning_rate) for key in keys}
        self._critic_optimizers = {key: snt.optimizers.Adam(critic_learning_rate) for key in keys}
        self._dual_optimizers = {key: snt.optimizers.Adam(dual_learning_rate) for key in keys}
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        super().__init__(dataset, counter, logger, make_checkpointing, unpack, steps_per_call,
                         jit_compile)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps}
        networks = self._networks
        for key in networks.policies:
            state.update({
                f"policy/{key}": networks.policies[key],
                f"critic/{key}": networks.critics[key],
                f"target_policy/{key}": networks.target_policies[key],
                f"target_critic/{key}": networks.target_critics[key],
                f"policy_loss/{key}": self._policy_losses[key],  # MPO's dual variables.
                f"policy_optimizer/{key}": self._policy_optimizers[key],
                f"critic_optimizer/{key}": self._critic_optimizers[key],
                f"dual_optimizer/{key}": self._dual_optimizers[key],
            })
        return state

    def network_losses(self, key: str, transitions: acme_types.Transition
                       ) -> Dict[str, tf.Tensor]:
        """Critic loss, MPO policy loss and MPO statistics of network `key` (agents merged)."""
        networks = self._networks
        o_tm1 = observation_to_input(_merge_agents(transitions.observation[key].observation))
        o_t = observation_to_input(_merge_agents(transitions.next_observation[key].observation))
        a_tm1 = tf.cast(_merge_agents(transitions.action[key]), tf.float32)
        r_t = tf.cast(_merge_agents(transitions.reward[key]), tf.float32)
        d_t = tf.cast(_merge_agents(transitions.discount[key]), tf.float32)
        batch_size = tf.shape(r_t)[0]

        online_distribution = networks.policies[key](o_t)
        target_distribution = networks.target_policies[key](o_t)
        sampled_actions = target_distribution.sample(self._num_samples)  # [N, B, D]
        tiled_o_t = tf2_utils.tile_tensor(o_t, self._num_samples)  # [N, B, ...]
        sampled_q_t = networks.target_critics[key](
            snt.merge_leading_dims(tiled_o_t, num_dims=2),
            snt.merge_leading_dims(sampled_actions, num_dims=2))
        # The next state's return distribution: a mixture over the sampled actions.
        sampled_logits = tf.reshape(sampled_q_t.logits, [self._num_samples, batch_size, -1])
        averaged_logits = tf.reduce_logsumexp(tf.math.log_softmax(sampled_logits, axis=-1), axis=0)
        q_t = acme_networks.DiscreteValuedDistribution(values=sampled_q_t.values,
                                                       logits=averaged_logits)
        q_tm1 = networks.critics[key](o_tm1, a_tm1)
        critic_loss = tf.reduce_mean(
            acme_losses.categorical(q_tm1, r_t, self._discount * d_t, q_t))

        sampled_q_values = tf.reshape(sampled_q_t.mean(), [self._num_samples, -1])
        policy_loss, policy_stats = self._policy_losses[key](
            online_action_distribution=online_distribution,
            target_action_distribution=target_distribution,
            actions=sampled_actions, q_values=sampled_q_values)
        return {"critic_loss": critic_loss, "policy_loss": policy_loss, **policy_stats}

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One critic, policy and dual step per network; returns the scalars to log."""
        networks = self._networks
        for key in networks.policies:
            if tf.math.mod(self._num_steps, self._target_policy_update_period) == 0:
                for source, target in zip(networks.policies[key].variables,
                                          networks.target_policies[key].variables):
                    target.assign(source)
            if tf.math.mod(self._num_steps, self._target_critic_update_period) == 0:
                for source, target in zip(networks.critics[key].variables,
                                          networks.target_critics[key].variables):
                    target.assign(source)
        fetches = {}
        for key in networks.policies:
            with tf.GradientTape(persistent=True) as tape:
                losses = self.network_losses(key, sample.data)
            critic_variables = networks.critics[key].trainable_variables
            policy_variables = networks.policies[key].trainable_variables
            dual_variables = self._policy_losses[key].trainable_variables
            critic_gradients = tape.gradient(losses["critic_loss"], critic_variables)
            policy_gradients, dual_gradients = tape.gradient(
                losses["policy_loss"], (policy_variables, dual_variables))
            del tape
            critic_gradients, _ = tf.clip_by_global_norm(critic_gradients, self._max_gradient_norm)
            policy_gradients, _ = tf.clip_by_global_norm(policy_gradients, self._max_gradient_norm)
            self._critic_optimizers[key].apply(critic_gradients, critic_variables)
            self._policy_optimizers[key].apply(policy_gradients, policy_variables)
            self._dual_optimizers[key].apply(dual_gradients, dual_variables)
            fetches.update({f"{name}/{key}": tf.cast(value, tf.float32)
                            for name, value in losses.items()})
        self.count_step(after=fetches)
        return fetches

    def get_variables(self, names: Sequence[str]) -> List[List[Any]]:
        """The current online policy variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.policies, names)
