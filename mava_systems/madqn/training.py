"""The MADQN trainer: double Q-learning with n-step targets, per network, from replay.

It also has the hook for one loss over every network plus modules of the
trainer's own (`MADQNTrainer.joint_loss`), and public helpers such a loss can
call: `agent_q_values`, `chosen_q_values`, `double_q_values`.
"""

import dataclasses
from typing import (Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple)

from acme import types as acme_types
from acme.tf import losses
from acme.utils import counting, loggers
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
import tree
import trfl

from mava_systems.training.optimizers import ConcatenatedAdam
from mava_systems.data.sequence_adder import STEP_MASK
from mava_systems.data.sequences import (merge_batch_and_agents, n_step_targets,
                                         swap_batch_and_time, time_major)
from mava_systems.training.trainer_loop import PRIORITIES, TrainerLoop
from mava_systems.madqn.networks import (MADQNNetworks, mask_illegal, observation_to_input,
                                         variables_as_numpy)
from wrappers import OLT


def merge_agents(stacked: tf.Tensor) -> tf.Tensor:
    """[B, A, ...] -> [B * A, ...] (batch-major)."""
    shape = tf.shape(stacked)
    return tf.reshape(stacked, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))


def split_agents(merged: tf.Tensor, num_agents: int) -> tf.Tensor:
    """[B * A, ...] -> [B, A, ...]: undoes `merge_agents`."""
    shape = tf.shape(merged)
    return tf.reshape(merged, tf.concat([[-1, num_agents], shape[1:]], axis=0))


def agent_q_values(network: snt.Module, observation: tf.Tensor) -> tf.Tensor:
    """Q-values of every stacked agent: observations [B, A, ...] -> [B, A, num_actions]."""
    num_agents = observation.shape[1]
    return split_agents(network(observation_to_input(merge_agents(observation))), num_agents)


def chosen_q_values(q_values: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
    """Q(o, a) of each row's action: q_values [..., num_actions], actions [...] -> [...]."""
    return tf.gather(q_values, tf.cast(actions, tf.int32), batch_dims=len(actions.shape))


def double_q_values(online: snt.Module, target: snt.Module, next_observation: OLT) -> tf.Tensor:
    """The double-Q bootstrap value of every stacked agent: [B, A].

    Each agent's `target`-network Q at the legal action its `online` network
    ranks highest (a row with no legal action allows all, see `mask_illegal`).
    """
    selector = mask_illegal(agent_q_values(online, next_observation.observation),
                            next_observation.legal_actions)
    best = tf.argmax(selector, axis=-1, output_type=tf.int32)
    return chosen_q_values(agent_q_values(target, next_observation.observation), best)


@dataclasses.dataclass
class TrainerModule:
    """A trainable module of the trainer's own (e.g. a mixer), with its target copy (None: none).

    The trainer trains it with the networks through `joint_loss`, copies it to
    its target with the target networks, and checkpoints both.
    """

    online: snt.Module
    target: Optional[snt.Module] = None


class JointLoss(NamedTuple):
    """What `MADQNTrainer.joint_loss` returns for a batch of B items."""

    loss: tf.Tensor  # Scalar: the one loss the step minimises.
    priorities: tf.Tensor  # [B]: each item's new priority (e.g. |TD error|).
    fetches: Dict[str, tf.Tensor]  # Further scalars to log.


class MADQNTrainer(TrainerLoop):
    """Trains every online Q-network from sampled n-step transitions.

    Each network is trained on the stacked transitions of all agents that
    share it; targets use double Q-learning over legal next actions, and target
    networks are copied from the online ones every `target_update_period` steps.
    With `unpack`, samples hold packed items (see `ArrayPacker`), unpacked
    before they reach the step.

    A subclass that overrides `joint_loss` trains instead with ONE loss over
    every network and the `modules` of its own (e.g. a mixer): differentiated
    once per step, gradients clipped together, applied by one optimizer step.
    `modules` and their targets follow the networks' target updates and are
    checkpointed with them (`module/<name>`, `target_module/<name>`).
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
        transitions_per_item: int = 1,
        replay_client: Optional[reverb.Client] = None,
        replay_table: str = "priority_table",
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        make_checkpointing: Optional[Callable[[Mapping[str, Any]], Any]] = None,
        modules: Optional[Mapping[str, TrainerModule]] = None,
        steps_per_call: int = 1,
        jit_compile: bool = False,
    ):
        self._networks = networks
        self._modules = dict(modules or {})
        self._joint = type(self).joint_loss is not MADQNTrainer.joint_loss
        self._agents_by_network = networks.agents_by_network
        self._discount = tf.constant(discount, tf.float32)
        self._max_gradient_norm = max_gradient_norm
        self._target_update_period = target_update_period
        self._importance_sampling_exponent = importance_sampling_exponent
        self._huber_loss_parameter = huber_loss_parameter
        self._replay_client = replay_client
        self._replay_table = replay_table
        self.transitions_per_item = transitions_per_item
        if self._joint:
            # Sonnet's Adam update in a few operations over all the (many) variables.
            self._optimizers = {"joint": ConcatenatedAdam(learning_rate)}
        else:
            if self._modules:
                raise ValueError("trainer modules are trained by a joint_loss; "
                                 f"{type(self).__name__} does not override joint_loss")
            self._optimizers = {key: snt.optimizers.Adam(learning_rate)
                                for key in networks.q_networks}
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Adam's slots are made here rather than in the first step: a traced step that creates
        # variables is traced twice (about a third of a trainer's first step).
        for key, optimizer in self._optimizers.items():
            optimizer._initialize(self._optimized_variables(key))  # pylint: disable=protected-access
        # Restores `state`.
        super().__init__(dataset, counter, logger, make_checkpointing, unpack, steps_per_call,
                         jit_compile)

    @property
    def state(self) -> Dict[str, Any]:
        """Everything a checkpoint of this trainer holds."""
        state: Dict[str, Any] = {"num_steps": self._num_steps}
        for key in self._networks.q_networks:
            state[f"q_network/{key}"] = self._networks.q_networks[key]
            state[f"target_q_network/{key}"] = self._networks.target_q_networks[key]
        for key, optimizer in self._optimizers.items():
            state[f"optimizer/{key}"] = optimizer
        for name, module in self._modules.items():
            state[f"module/{name}"] = module.online
            if module.target is not None:
                state[f"target_module/{name}"] = module.target
        return state

    @property
    def networks(self) -> MADQNNetworks:
        """The online and target Q-networks this trainer trains, and which agent uses which."""
        return self._networks

    @property
    def modules(self) -> Dict[str, TrainerModule]:
        """The trainer's own trainable modules (e.g. `{"mixer": ...}`), by name."""
        return self._modules

    @property
    def discount(self) -> tf.Tensor:
        """The discount per environment step (items' discounts already hold the n-step part)."""
        return self._discount

    def td_loss(self, td_error: tf.Tensor) -> tf.Tensor:
        """The loss of each TD error: Huber with `huber_loss_parameter`, else x**2 / 2."""
        if self._huber_loss_parameter is not None:
            return losses.huber(td_error, self._huber_loss_parameter)
        return 0.5 * tf.square(td_error)

    def joint_loss(self, transitions: acme_types.Transition, weights: tf.Tensor) -> JointLoss:
        """Override for ONE loss over every network and module (e.g. a team loss through a mixer).

        `transitions` is the unpacked batch (each network's agents stacked,
        [B, A, ...]); `weights` [B] are the items' importance weights (ones
        without prioritised replay). `networks`, `modules`, `discount` and
        `td_loss` give what the loss needs; `agent_q_values`,
        `chosen_q_values` and `double_q_values` compute per-agent values.
        Not overridden: each network is trained on its own `network_loss`.
        """
        raise NotImplementedError

    def network_loss(self, key: str, transitions: acme_types.Transition
                     ) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Double Q-learning loss and TD error per (transition, agent) of network `key`, and Q(s, .).

        The loss is the Huber loss of the TD error (squared error without a
        `huber_loss_parameter`). Replay holds each network's agents stacked
        ([B, A, ...]); they are trained as one batch of B * A rows, batch-major.
        """
        observation, next_observation = transitions.observation[key], transitions.next_observation[key]
        o_tm1 = observation_to_input(merge_agents(observation.observation))
        o_t = observation_to_input(merge_agents(next_observation.observation))
        legal_t = merge_agents(next_observation.legal_actions)
        a_tm1 = tf.cast(merge_agents(transitions.action[key]), tf.int32)
        r_t = tf.cast(merge_agents(transitions.reward[key]), tf.float32)
        d_t = tf.cast(merge_agents(transitions.discount[key]), tf.float32)

        network = self._networks.q_networks[key]
        q_tm1 = network(o_tm1)
        q_t_value = self._networks.target_q_networks[key](o_t)
        q_t_selector = mask_illegal(network(o_t), legal_t)
        _, extra = trfl.double_qlearning(
            q_tm1, a_tm1, r_t, self._discount * d_t, q_t_value, q_t_selector)
        return self.td_loss(extra.td_error), extra.td_error, q_tm1

    def row_priorities(self, td_error: tf.Tensor) -> tf.Tensor:
        """The new priority of each (transition, agent) row from `network_loss`'s TD errors: |TD|.

        A sampled item's priority is the mean over its agents.
        """
        return tf.abs(td_error)

    def importance_weights(self, sample: reverb.ReplaySample) -> tf.Tensor:
        """[B] weights of the batch's transitions correcting prioritised sampling (max 1; each
        item's for its `transitions_per_item` transitions), or ones without it."""
        num_items = tf.shape(sample.info.probability)[0]
        if self._importance_sampling_exponent is None:
            return tf.ones([num_items * self.transitions_per_item], tf.float32)
        weights = tf.pow(1.0 / tf.cast(sample.info.probability, tf.float32),
                         self._importance_sampling_exponent)
        return tf.repeat(weights / tf.reduce_max(weights), self.transitions_per_item)

    def item_priorities(self, transition_priorities: tf.Tensor) -> tf.Tensor:
        """Each sampled item's new priority from its transitions' ([B] -> [B / k]): the
        highest, so that an item is replayed as often as its most surprising transition."""
        if self.transitions_per_item == 1:
            return transition_priorities
        return tf.reduce_max(tf.reshape(transition_priorities, [-1, self.transitions_per_item]),
                             axis=1)

    @tf.function
    def _step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        weights = self.importance_weights(sample)
        if self._joint:
            fetches = self._joint_step(sample.data, weights)
        else:
            fetches = self._per_network_step(sample.data, weights)
        fetches[PRIORITIES] = self.item_priorities(fetches[PRIORITIES])
        self.count_step(after=fetches)
        if tf.math.mod(self._num_steps, self._target_update_period) == 0:
            self._update_targets()
        return fetches

    def _per_network_step(self, transitions: acme_types.Transition, weights: tf.Tensor
                          ) -> Dict[str, tf.Tensor]:
        batch_size = tf.shape(weights)[0]
        fetches = {}
        abs_td = []
        for key, agents in self._agents_by_network.items():
            network = self._networks.q_networks[key]
            with tf.GradientTape() as tape:
                loss, td_error, q_tm1 = self.network_loss(key, transitions)
                per_transition = tf.reshape(loss, [batch_size, len(agents)])
                loss = tf.reduce_mean(per_transition * weights[:, None])
            gradient_norm = self._apply(tape, loss, self._optimized_variables(key), key)
            abs_td.append(tf.reshape(self.row_priorities(td_error), [batch_size, len(agents)]))
            fetches[f"loss/{key}"] = loss
            fetches[f"q_value/{key}"] = tf.reduce_mean(q_tm1)
            fetches[f"gradient_norm/{key}"] = gradient_norm
        fetches[PRIORITIES] = tf.reduce_mean(tf.concat(abs_td, axis=1), axis=1)
        return fetches

    def _joint_step(self, transitions: acme_types.Transition, weights: tf.Tensor
                    ) -> Dict[str, tf.Tensor]:
        variables = self._optimized_variables("joint")
        with tf.GradientTape() as tape:
            loss, priorities, extra_fetches = self.joint_loss(transitions, weights)
        gradient_norm = self._apply(tape, loss, variables, "joint")
        return {"loss": loss, "gradient_norm": gradient_norm, **extra_fetches,
                PRIORITIES: priorities}

    def _optimized_variables(self, optimizer: str) -> List[tf.Variable]:
        """The variables optimizer `optimizer` updates, in the order of its slots: network
        `optimizer`'s, or ("joint") every network's then every module's."""
        if optimizer != "joint":
            return list(self._networks.q_networks[optimizer].trainable_variables)
        variables = [variable for network in self._networks.q_networks.values()
                     for variable in network.trainable_variables]
        return variables + [variable for module in self._modules.values()
                            for variable in module.online.trainable_variables]

    def _apply(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence[tf.Variable],
               optimizer: str) -> tf.Tensor:
        """One clipped optimizer step on `loss`'s gradients; returns their norm before clipping."""
        slots = self._optimizers[optimizer].m
        if len(slots) != len(variables) or any(
                slot.shape != variable.shape for slot, variable in zip(slots, variables)):
            raise ValueError(f"optimizer {optimizer!r} has slots for other variables than the "
                             f"{len(variables)} it is applied to (made before they all existed?)")
        gradients = tape.gradient(loss, variables)
        gradients, gradient_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
        self._optimizers[optimizer].apply(gradients, variables)
        return gradient_norm

    def _update_targets(self) -> None:
        pairs = [(self._networks.target_q_networks[key], self._networks.q_networks[key])
                 for key in self._networks.q_networks]
        pairs += [(module.target, module.online) for module in self._modules.values()
                  if module.target is not None]
        for target, source in pairs:
            for target_variable, source_variable in zip(target.variables, source.variables):
                target_variable.assign(source_variable)

    def train_step(self, sample: reverb.ReplaySample) -> Dict[str, tf.Tensor]:
        """One gradient step per network on `sample` (one in all with `joint_loss`), compiled."""
        return self._step(sample)

    def after_train_step(self, sample: reverb.ReplaySample, fetches: Dict[str, tf.Tensor]) -> None:
        """Sends the new priorities to replay (prioritised replay only)."""
        priorities = fetches.pop(PRIORITIES)
        if self._importance_sampling_exponent is not None and self._replay_client is not None:
            self._replay_client.mutate_priorities(
                table=self._replay_table,
                updates=dict(zip(sample.info.key.numpy(), priorities.numpy().astype(np.float64))))

    def get_variables(self, names: Sequence[str]) -> List[List[np.ndarray]]:
        """The current online variables of the named networks (what executors act with)."""
        return variables_as_numpy(self._networks.q_networks, names)


def unroll_network(network: snt.RNNCore, observations: tf.Tensor, state: Any) -> Tuple[tf.Tensor, Any]:
    """`network`'s outputs [T, N, ...] over time-major `observations` from `state`, and its final
    state: through the network's own `unroll` when it has one (`RecurrentQNetwork`'s batches
    the layers around its GRU), else stepped by `snt.dynamic_unroll` (any Sonnet RNN core)."""
    own_unroll = getattr(network, "unroll", None)
    if callable(own_unroll):
        return own_unroll(observations, state)
    return snt.dynamic_unroll(network, observations, state)


class SequenceQValues(NamedTuple):
    """One network's values over a batch of stored sequences, time-major: [T, B * A] columns
    (each (sequence, agent) pair; see `time_major`)."""

    q_values: tf.Tensor  # [T, N, num_actions]: the online network's, unrolled from the stored state.
    chosen: tf.Tensor  # [T, N]: Q(o_t, a_t) of the action taken.
    bootstrap: tf.Tensor  # [T, N]: target-network Q at the online network's best legal action.
    present: tf.Tensor  # [T, N]: 1 while the agent is in the episode (its terminal flag unset).
    acted: tf.Tensor  # [T, N]: the step mask, 1 at steps with an action (not final, not padding).
    trained: tf.Tensor  # [T, N]: 1 where the step may be trained on (see `SequenceLearning`).


class SequenceLearning:
    """What a trainer of recurrent Q-networks on stored sequences shares (mixed into MADQN's and
    VDN's trainers): unrolls from the stored states with burn-in, and n-step targets.

    Replay items are sequences of T steps written by `ObservationExtrasSequenceAdder`:
    `extras["core_state"]` holds the state each network acts from at each step,
    `extras["mask"]` is 1 at steps with an action. Each network is unrolled,
    online and target, from the state stored at the sequence's first step. The
    first `burn_in_length` steps only warm the state up (no gradient flows
    into the state they produce, and they are not trained on), except in a
    sequence that starts an episode: its stored state is the exact initial
    one, so every step is trained on and the gradient flows through all.
    Padding and the final observation (mask 0) contribute nothing to the loss.
    """

    def __init__(self, *args: Any, burn_in_length: int = 0, n_step: int = 1, **kwargs: Any):
        self._burn_in_length = burn_in_length
        self._n_step = n_step
        super().__init__(*args, **kwargs)

    def unroll(self, network: snt.RNNCore, observations: tf.Tensor, state: Any,
               starts_episode: tf.Tensor, trained: bool = True) -> tf.Tensor:
        """Q-values [T, N, num_actions] of `network` over time-major `observations` [T, N, ...]
        from `state`, the burn-in's state cut from the gradient unless `starts_episode` [N].

        A network not `trained` (the target network, no gradient taken) is unrolled over all
        T steps at once: the same values, without the cut.
        """
        burn_in = self._burn_in_length
        observations = observation_to_input(observations)
        if not burn_in or not trained:
            return unroll_network(network, observations, state)[0]
        burnt_in, state = unroll_network(network, observations[:burn_in], state)
        state = tree.map_structure(
            lambda part: tf.where(starts_episode[:, None], part, tf.stop_gradient(part)), state)
        rest, _ = unroll_network(network, observations[burn_in:], state)
        return tf.concat([burnt_in, rest], axis=0)

    def sequence_q_values(self, key: str, steps: Any) -> SequenceQValues:
        """Network `key`'s `SequenceQValues` over the batch `steps` (its agents stacked)."""
        observation = steps.observation[key]
        observations = time_major(observation.observation)
        legal_actions = time_major(observation.legal_actions)
        num_agents = observation.observation.shape[2]
        start_state = tree.map_structure(lambda state: merge_batch_and_agents(state[:, 0]),
                                         steps.extras["core_state"][key])
        starts_episode = tf.repeat(steps.start_of_episode[:, 0], num_agents)
        q_values = self.unroll(self.networks.q_networks[key], observations, start_state,
                               starts_episode)
        target_q_values = self.unroll(self.networks.target_q_networks[key], observations,
                                      start_state, starts_episode, trained=False)
        best = tf.argmax(mask_illegal(tf.stop_gradient(q_values), legal_actions), axis=-1,
                         output_type=tf.int32)
        actions = tf.cast(time_major(steps.action[key]), tf.int32)
        terminal = tf.cast(time_major(observation.terminal), tf.float32)
        step_mask = tf.repeat(swap_batch_and_time(tf.cast(steps.extras[STEP_MASK], tf.float32)),
                              num_agents, axis=1)
        present = 1.0 - tf.reshape(terminal, tf.shape(step_mask))
        length = step_mask.shape[0]
        after_burn_in = tf.cast(tf.range(length) >= self._burn_in_length, tf.float32)[:, None]
        trainable = tf.maximum(after_burn_in, tf.cast(starts_episode, tf.float32)[None, :])
        return SequenceQValues(
            q_values=q_values, chosen=chosen_q_values(q_values, actions),
            bootstrap=tf.stop_gradient(chosen_q_values(target_q_values, best)), present=present,
            acted=step_mask, trained=step_mask * trainable)

    def sequence_targets(self, rewards: tf.Tensor, discounts: tf.Tensor, bootstrap: tf.Tensor,
                         step_mask: tf.Tensor) -> tf.Tensor:
        """n-step double-Q targets [T - 1, N] of time-major [T, N] inputs (see `n_step_targets`)."""
        return tf.stop_gradient(n_step_targets(rewards, discounts, bootstrap, step_mask,
                                               self._n_step, self.discount))

    @staticmethod
    def masked_loss(losses: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        """Per-column loss [N] from per-step `losses` [T, N]: the sum over unmasked steps, scaled
        so that the mean over columns is the mean over every unmasked step of the batch."""
        columns = tf.cast(tf.shape(mask)[1], tf.float32)
        return tf.reduce_sum(losses * mask, axis=0) * columns / tf.maximum(
            tf.reduce_sum(mask), 1.0)


class RecurrentMADQNTrainer(SequenceLearning, MADQNTrainer):
    """MADQN's trainer for recurrent Q-networks, on stored sequences (see `SequenceLearning`):
    each network's n-step double-Q loss over every trained step of its agents."""

    def network_loss(self, key: str, steps: Any) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per-column loss [B * A], masked TD errors [T - 1, B * A] and Q-values of network `key`."""
        values = self.sequence_q_values(key, steps)
        targets = self.sequence_targets(tf.cast(time_major(steps.reward[key]), tf.float32),
                                        tf.cast(time_major(steps.discount[key]), tf.float32),
                                        values.bootstrap, values.acted)
        mask = (values.trained * values.present)[:-1]
        td_error = (targets - values.chosen[:-1]) * mask
        return self.masked_loss(self.td_loss(td_error), mask), td_error, values.q_values

    def row_priorities(self, td_error: tf.Tensor) -> tf.Tensor:
        """Each column's priority from its masked TD errors [T - 1, B * A]: the largest |TD|."""
        return tf.reduce_max(tf.abs(td_error), axis=0)
