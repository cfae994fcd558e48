"""The MADDPG trainer: deterministic policy gradients through per-agent critics, from n-step replay.

MAD4PG's trainer is the same with a categorical critic (`MAD4PGTrainer`).
"""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from acme import types as acme_types
from acme.tf import losses as acme_losses
from acme.tf import networks as acme_networks
from acme.utils import counting, loggers
import reverb
import sonnet as snt
import tensorflow as tf

from mava_systems.training.trainer_loop import TrainerLoop
from mava_systems.maddpg.networks import CriticInputs, MADDPGNetworks
from mava_systems.madqn.networks import observation_to_input, variables_as_numpy
from mava_systems.madqn.training import merge_agents, split_agents


def agent_actions(policy: snt.Module, observations: tf.Tensor) -> tf.Tensor:
    """The policy's action for every stacked agent: observations [B, A, ...] -> [B, A, ...]."""
    return split_agents(policy(observation_to_input(merge_agents(observations))),
                        observations.shape[1])


def masked_mean(values: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """The mean of `values` over the entries where `mask` is 1 (0 if there are none)."""
    return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def categorical_critic_loss(q_tm1: acme_networks.DiscreteValuedDistribution, r_t: tf.Tensor,
                            d_t: tf.Tensor, q_t: acme_networks.DiscreteValuedDistribution
                            ) -> tf.Tensor:
    """Per row, the cross-entropy of `q_tm1` against the target distribution r + d * Z(q_t)
    projected onto `q_tm1`'s support: Acme's categorical loss (its `l2_project`), as DMPO's."""
    return acme_losses.categorical(q_tm1, r_t, d_t, q_t)


class MADDPGTrainer(TrainerLoop):
    """Trains every policy and critic from sampled n-step transitions; one compiled step.

    For every agent i (its policy and critic are its network key's, shared by
    the agents of that key), with the critic's input built by `critic_inputs`:
      - critic: Q_i(x, a) towards R_i + D_i * discount * Q'_i(x', mu'(o')), the
        target critics at the target policies' next actions of every agent;
      - policy: ascends Q_i(x, a with a_i = mu_i(o_i)), agent i's action from its
        current policy and the others' from replay.
    Rows of agents no longer in the episode at an item's start are left out.
    All critics take one clipped Adam step on their summed loss, and all policies
    one on theirs. Targets are copied every `target_update_period` steps or,
    with `target_update_rate`, move that fraction towards the online networks
    every step (Polyak averaging).
    """

    def __init__(
        self,
        networks: MADDPGNetworks,
        critic_inputs: CriticInputs,
        dataset: Iterator[reverb.ReplaySample],
        discount: float,
        policy_learning_rate: float,
        critic_learning_rate: float,
        max_gradient_norm: float,
        target_update_period: int = 100,
        target_update_rate: Optional[float] = None,
        unpack: Optional[Callable[[tf.Tensor], acme_types.Transition]] = None,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        self._networks = networks
        self._critic_inputs = critic_inputs
        self._discount = tf.constant(discount, tf.float32)
        self._max_gradient_norm = max_gradient_norm
        self._target_update_period = target_update_period
        self._target_update_rate = target_update_rate
        self._policy_optimizer = snt.optimizers.Adam(policy_learning_rate)
        self._critic_optimizer = snt.optimizers.Adam(critic_learning_rate)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Restores `state`.
        super().__init__(dataset, counter, logger, make_checkpointing, unpack, steps_per_call,
                         jit_compile)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        networks = self._networks
        state: Dict[str, Any] = {"num_steps": self._num_steps,
                                 "policy_optimizer": self._policy_optimizer,
                                 "critic_optimizer": self._critic_optimizer}
        for key in networks.policies:
            state.update({f"policy/{key}": networks.policies[key],
                          f"critic/{key}": networks.critics[key],
                          f"target_policy/{key}": networks.target_policies[key],
                          f"target_critic/{key}": networks.target_critics[key]})
        return state

    def critic_loss(self, q_tm1: Any, r_t: tf.Tensor, d_t: tf.Tensor, q_t: Any) -> tf.Tensor:
        """Per row, the critic's loss: half the squared TD error (d_t holds the discount)."""
        target = tf.stop_gradient(r_t + d_t * q_t)
        return 0.5 * tf.square(target - q_tm1)

    def values(self, critic_output: Any) -> tf.Tensor:
        """The critic's value per row (a distribution's mean, for a distributional critic)."""
        return critic_output

    def target_actions(self, key: str, observations: tf.Tensor) -> tf.Tensor:
        """The actions of network `key`'s target policy for its stacked agents' `observations`
        ([B, A, ...]): the next actions in the critics' targets."""
        return agent_actions(self._networks.target_policies[key], observations)

    def _evaluate(self, critic: snt.Module, inputs: tf.Tensor) -> Any:
        """The critic on inputs [B, A, size], rows merged batch-major ([B * A])."""
        return critic(merge_agents(inputs))

    def batch(self, transitions: acme_types.Transition) -> Tuple[
            Dict[str, tf.Tensor], Dict[str, tf.Tensor], Dict[str, tf.Tensor],
            Optional[tf.Tensor], Optional[tf.Tensor]]:
        """Per network key the observations, next observations and float32 actions
        ([B, A, ...]), then the global states and next states (None unless a "state" critic)."""
        keys = list(self._networks.policies)
        observations = {key: transitions.observation[key].observation for key in keys}
        next_observations = {key: transitions.next_observation[key].observation for key in keys}
        states = next_states = None
        if self._critic_inputs.architecture == "state":
            states = transitions.extras["env_state"]
            next_states = transitions.extras["next_env_state"]
        actions = {key: tf.cast(transitions.action[key], tf.float32) for key in keys}
        return observations, next_observations, actions, states, next_states

    def agent_rows(self, transitions: acme_types.Transition, key: str
                   ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Network `key`'s rows merged batch-major ([B * A]): 1 where the agent is in the
        episode at the item's start, the n-step rewards, and the discounts times `discount`."""
        present = merge_agents(1.0 - tf.cast(transitions.observation[key].terminal, tf.float32))
        r_t = tf.cast(merge_agents(transitions.reward[key]), tf.float32)
        d_t = self._discount * tf.cast(merge_agents(transitions.discount[key]), tf.float32)
        return present, r_t, d_t

    def losses(self, transitions: acme_types.Transition) -> Tuple[tf.Tensor, tf.Tensor,
                                                                   Dict[str, tf.Tensor]]:
        """The critics' and the policies' losses on a batch, and scalars to log."""
        networks = self._networks
        keys = list(networks.policies)
        observations, next_observations, actions, states, next_states = self.batch(transitions)
        next_actions = {key: self.target_actions(key, next_observations[key]) for key in keys}
        inputs = self._critic_inputs(observations, actions, states)
        next_inputs = self._critic_inputs(next_observations, next_actions, next_states)

        critic_loss = 0.0
        q_values = []
        for key in keys:
            present, r_t, d_t = self.agent_rows(transitions, key)
            q_tm1 = self._evaluate(networks.critics[key], inputs[key])
            q_t = self._evaluate(networks.target_critics[key], next_inputs[key])
            critic_loss += masked_mean(self.critic_loss(q_tm1, r_t, d_t, q_t), present)
            q_values.append(masked_mean(self.values(q_tm1), present))
        policy_loss = self.policy_loss(transitions, observations, actions, states)
        return critic_loss, policy_loss, {"q_value": tf.reduce_mean(tf.stack(q_values))}

    def policy_loss(self, transitions: acme_types.Transition,
                    observations: Mapping[str, tf.Tensor], actions: Mapping[str, tf.Tensor],
                    states: Optional[tf.Tensor]) -> tf.Tensor:
        """The policies' summed loss: minus each agent's critic value (`policy_values`) at its
        own policy's action, the others' actions from replay."""
        networks = self._networks
        own_actions = {key: agent_actions(networks.policies[key], observations[key])
                       for key in networks.policies}
        policy_inputs = self._critic_inputs(observations, actions, states, own_actions)
        loss = 0.0
        for key in networks.policies:
            present, _, _ = self.agent_rows(transitions, key)
            loss += -masked_mean(self.policy_values(networks.critics[key], policy_inputs[key]),
                                 present)
        return loss

    def policy_values(self, critic: snt.Module, inputs: tf.Tensor) -> tf.Tensor:
        """The value per row ([B * A]) a policy ascends, of critic inputs [B, A, size]."""
        return self.values(self._evaluate(critic, inputs))

    @tf.function
    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One clipped step of every critic and every policy; returns the scalars to log."""
        networks = self._networks
        critic_variables = [variable for critic in networks.critics.values()
                            for variable in critic.trainable_variables]
        policy_variables = [variable for policy in networks.policies.values()
                            for variable in policy.trainable_variables]
        with tf.GradientTape(persistent=True) as tape:
            critic_loss, policy_loss, fetches = self.losses(sample.data)
        critic_norm = self._apply(self._critic_optimizer, tape.gradient(critic_loss, critic_variables),
                                  critic_variables)
        policy_norm = self._apply(self._policy_optimizer, tape.gradient(policy_loss, policy_variables),
                                  policy_variables)
        fetches.update(self.extra_updates(tape, fetches))
        del tape
        self.count_step(after=(fetches, critic_norm, policy_norm))
        self._update_targets()
        return {"critic_loss": critic_loss, "policy_loss": policy_loss,
                "critic_gradient_norm": critic_norm, "policy_gradient_norm": policy_norm, **fetches}

    def extra_updates(self, tape: tf.GradientTape, fetches: Dict[str, tf.Tensor]
                      ) -> Dict[str, tf.Tensor]:
        """Updates beyond the critics' and policies' (e.g. MASAC's temperatures), from the
        losses' `fetches` and the persistent `tape` that recorded them; scalars to log. None here."""
        del tape, fetches
        return {}

    def _apply(self, optimizer: snt.Optimizer, gradients: Sequence[tf.Tensor],
               variables: Sequence[tf.Variable]) -> tf.Tensor:
        """One clipped optimizer step; returns the gradients' global norm before clipping."""
        gradients, norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
        optimizer.apply(gradients, variables)
        return norm

    def _update_targets(self) -> None:
        if self._target_update_rate is not None:
            self._move_targets(self._target_update_rate)
        elif tf.math.mod(self._num_steps, self._target_update_period) == 0:
            self._move_targets(1.0)

    def target_pairs(self) -> Sequence[Tuple[Mapping[str, snt.Module], Mapping[str, snt.Module]]]:
        """(target networks, online networks) by key, for each kind the targets track: the
        policies and the critics."""
        networks = self._networks
        return ((networks.target_policies, networks.policies),
                (networks.target_critics, networks.critics))

    def _move_targets(self, rate: float) -> None:
        """Moves every target network `rate` of the way to its online network (1: a copy)."""
        for targets, onlines in self.target_pairs():
            for key, online in onlines.items():
                for target_variable, variable in zip(targets[key].variables, online.variables):
                    target_variable.assign(rate * variable + (1.0 - rate) * target_variable)

    def get_variables(self, names: Sequence[str]) -> List[List[Any]]:
        """The current online policy variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.policies, names)


class MAD4PGTrainer(MADDPGTrainer):
    """MADDPG's trainer with categorical critics: the distributional Bellman target projected
    onto the critic's support (`categorical_critic_loss`); policies ascend the critics' means."""

    def critic_loss(self, q_tm1: Any, r_t: tf.Tensor, d_t: tf.Tensor, q_t: Any) -> tf.Tensor:
        """Per row, `categorical_critic_loss`."""
        return categorical_critic_loss(q_tm1, r_t, d_t, q_t)

    def values(self, critic_output: Any) -> tf.Tensor:
        """The mean of each row's return distribution."""
        return critic_output.mean()
