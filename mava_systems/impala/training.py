"""The IMPALA trainer: actor-critic with V-trace off-policy correction, per network, from a queue."""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from acme.adders.reverb import base as reverb_base
from acme.utils import counting, loggers
import reverb
import sonnet as snt
import tensorflow as tf
import tensorflow_probability as tfp
import trfl

from mava_systems.data.sequences import time_major
from mava_systems.training.trainer_loop import TrainerLoop
from mava_systems.impala.networks import IMPALANetworks
from mava_systems.madqn.networks import mask_illegal, observation_to_input, variables_as_numpy

tfd = tfp.distributions

# log(importance weight) of steps that are not transitions: exp() of it is 0, so V-trace ignores them.
_IGNORED_LOG_RHO = -50.0


class IMPALATrainer(TrainerLoop):
    """Trains every actor-critic network from sequences taken off the queue.

    Sequences overlap by one step and may cross episode boundaries (Acme's
    `SequenceAdder` with `EndBehavior.CONTINUE`); the step holding an episode's
    final observation is not a transition and is excluded from every loss.
    """

    def __init__(
        self,
        networks: IMPALANetworks,
        dataset: Iterator[reverb.ReplaySample],
        discount: float,
        learning_rate: float,
        max_gradient_norm: float,
        entropy_cost: float,
        baseline_cost: float,
        max_abs_reward: Optional[float] = None,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        unpack: Optional[Callable[[tf.Tensor], Any]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        self._networks = networks
        self._discount = tf.constant(discount, tf.float32)
        self._max_gradient_norm = max_gradient_norm
        self._entropy_cost = entropy_cost
        self._baseline_cost = baseline_cost
        self._max_abs_reward = float("inf") if max_abs_reward is None else max_abs_reward
        self._optimizers = {key: snt.optimizers.Adam(learning_rate) for key in networks.networks}
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        super().__init__(dataset, counter, logger, make_checkpointing, unpack, steps_per_call,
                         jit_compile)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps}
        for key, network in self._networks.networks.items():
            state[f"network/{key}"] = network
            state[f"optimizer/{key}"] = self._optimizers[key]
        return state

    def network_loss(self, key: str, steps: reverb_base.Step) -> Dict[str, tf.Tensor]:
        """V-trace actor-critic losses of network `key` over a batch of sequences.

        Replay holds each network's agents stacked ([B, T, A, ...]); every
        (sequence, agent) pair is one time-major column of [T, B * A].
        """
        num_agents = steps.action[key].shape[2]
        observation = steps.observation[key]
        observations = observation_to_input(time_major(observation.observation))
        legal_actions = time_major(observation.legal_actions)
        actions = tf.cast(time_major(steps.action[key]), tf.int32)[:-1]
        rewards = tf.clip_by_value(tf.cast(time_major(steps.reward[key]), tf.float32)[:-1],
                                   -self._max_abs_reward, self._max_abs_reward)
        discounts = self._discount * tf.cast(time_major(steps.discount[key]), tf.float32)[:-1]
        behaviour_logits = time_major(steps.extras["logits"][key])[:-1]
        # Step t is a transition unless step t + 1 starts an episode (t then holds a final observation).
        starts = tf.repeat(tf.transpose(steps.start_of_episode), num_agents, axis=1)
        is_transition = tf.logical_not(starts[1:])
        weights = tf.cast(is_transition, tf.float32)

        logits, values = snt.BatchApply(self._networks.networks[key])(observations)
        target_policy = tfd.Categorical(logits=mask_illegal(logits, legal_actions)[:-1])
        log_rhos = (target_policy.log_prob(actions)
                    - tfd.Categorical(logits=behaviour_logits).log_prob(actions))
        log_rhos = tf.where(is_transition, log_rhos, _IGNORED_LOG_RHO)
        vtrace = trfl.vtrace_from_importance_weights(
            log_rhos=log_rhos, discounts=discounts, rewards=rewards, values=values[:-1],
            bootstrap_value=values[-1])
        critic_loss = 0.5 * tf.square(tf.stop_gradient(vtrace.vs) - values[:-1])
        policy_loss = -target_policy.log_prob(actions) * tf.stop_gradient(vtrace.pg_advantages)
        entropy = target_policy.entropy()
        total = policy_loss + self._baseline_cost * critic_loss - self._entropy_cost * entropy
        num_transitions = tf.maximum(tf.reduce_sum(weights), 1.0)

        def mean(values: tf.Tensor) -> tf.Tensor:
            return tf.reduce_sum(values * weights) / num_transitions

        return {"loss": mean(total), "critic_loss": mean(critic_loss),
                "policy_loss": mean(policy_loss), "entropy": mean(entropy),
                "transitions": num_transitions}

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One gradient step per network on a batch of sequences; returns the scalars to log."""
        fetches = {}
        for key, network in self._networks.networks.items():
            with tf.GradientTape() as tape:
                losses = self.network_loss(key, sample.data)
            variables = network.trainable_variables
            gradients = tape.gradient(losses["loss"], variables)
            gradients, gradient_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
            self._optimizers[key].apply(gradients, variables)
            fetches.update({f"{name}/{key}": value for name, value in losses.items()})
            fetches[f"gradient_norm/{key}"] = gradient_norm
        self.count_step(after=fetches)
        return fetches

    def get_variables(self, names: Sequence[str]) -> List[List[Any]]:
        """The current variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.networks, names)
