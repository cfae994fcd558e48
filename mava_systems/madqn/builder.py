"""Makes MADQN's parts: replay tables, dataset, adder, networks, trainer, executors."""

import functools
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from acme import adders
from acme.adders import reverb as reverb_adders
from acme.tf import variable_utils
from dm_env import specs
import numpy as np
import reverb
import tensorflow as tf
import tree

from mava_systems.components.checkpointing import Checkpointing
from mava_systems.components.exploration import ConstantEpsilon
from mava_systems.components.lifecycle import program_stop_event
from mava_systems.components.packing import ArrayPacker
from mava_systems.components.replay_checkpointing import ReplayCheckpointRequest
from mava_systems.components.replay import (ReplayIterator, StopAwareClient,
                                            make_trajectory_dataset)
from mava_systems.components.sequence_adder import STEP_MASK, ObservationExtrasSequenceAdder
from mava_systems.components.stacking import AgentStacker
from mava_systems.components.transition_adder import (NStepTransitionAdder,
                                                      transition_extras_spec)
from mava_systems.components.variables import VersionedVariableClient
from mava_systems.madqn.config import MADQNConfig
from mava_systems.madqn.execution import (ExplorationSchedule, MADQNExecutor,
                                          RecurrentMADQNExecutor)
from mava_systems.madqn.networks import MADQNNetworks, QNetworkFactory, make_networks
from mava_systems.madqn.training import MADQNTrainer, RecurrentMADQNTrainer
from mava_systems.specs import MAEnvironmentSpec

REPLAY_TABLE = reverb_adders.DEFAULT_PRIORITY_TABLE


class MADQNBuilder:
    """Builds each MADQN component; override one method to change one component."""

    # The classes `make_trainer` and `make_executor` construct: a subclass sets its own to change
    # the loss or the acting without copying a method (every system's builder does the same).
    trainer_class = MADQNTrainer
    executor_class = MADQNExecutor
    # The trainer and executor with `config.recurrent`: the same loss on stored sequences, and
    # acting that carries every agent's state through its episodes.
    recurrent_trainer_class = RecurrentMADQNTrainer
    recurrent_executor_class = RecurrentMADQNExecutor
    # Whether replay items carry the environment's extras (its global state) at both ends
    # (see `replay_environment_extras_spec`); MADQN's independent learners do not use them.
    stores_environment_extras = False

    def __init__(self, config: MADQNConfig, environment_spec: MAEnvironmentSpec,
                 agent_networks: dict, network_factory: QNetworkFactory, run_dir: str):
        self.config = config
        self.environment_spec = environment_spec
        self.agent_networks = agent_networks
        self.network_factory = network_factory
        self.run_dir = run_dir
        self.stacker = AgentStacker(agent_networks)

    def make_networks(self) -> MADQNNetworks:
        """Online and target Q-networks (every node builds its copy here)."""
        return make_networks(self.environment_spec, self.agent_networks, self.network_factory,
                             recurrent=self.recurrent)

    @property
    def recurrent(self) -> bool:
        """Whether the agents are recurrent: replay holds sequences, not n-step transitions
        (never for a subclass whose config has no `recurrent` switch)."""
        return bool(getattr(self.config, "recurrent", False))

    def sequence_extras_spec(self) -> Dict[str, Any]:
        """What each stored step's extras hold with recurrent agents (written with its
        observation, see `ObservationExtrasSequenceAdder`): every network's state the agents
        act from there (`core_state`, agents stacked), the step mask and the environment's
        extras if replay stores them."""
        networks = self.make_networks()
        core_state = {key: tree.map_structure(
                          lambda part: specs.Array(tuple(part.shape), np.float32),
                          networks.q_networks[key].initial_state(len(agents)))
                      for key, agents in self.stacker.agents_by_network.items()}
        extras = {**self.replay_environment_extras_spec(), "core_state": core_state,
                  STEP_MASK: specs.Array((), np.float32)}
        return dict(sorted(extras.items()))  # One order, whatever the nest functions do.

    def sequence_signature(self) -> Any:
        """The replay item with recurrent agents: `config.sequence_length` steps of every
        network's agents stacked, with `sequence_extras_spec` extras."""
        return reverb_adders.SequenceAdder.signature(
            self.environment_spec.stacked(self.stacker), self.sequence_extras_spec(),
            sequence_length=self.config.sequence_length)

    @property
    def transitions_per_item(self) -> int:
        """Transitions per replay item (see `MADQNConfig.transitions_per_item`; 1 for a config
        without it), or 1 with recurrent agents, whose items are sequences."""
        return 1 if self.recurrent else int(getattr(self.config, "transitions_per_item", 1))

    def replay_size_in_items(self, steps: int) -> int:
        """Replay items holding about `steps` steps: items of `transitions_per_item`
        transitions, or sequences of `steps_per_sequence` new steps each with recurrent agents."""
        per_item = self.config.steps_per_sequence if self.recurrent else self.transitions_per_item
        return max(1, -(-steps // per_item))

    @property
    def batch_size(self) -> int:
        """Items per trainer step: `batch_size` transitions (in items of `transitions_per_item`),
        or `sequence_batch_size` sequences."""
        config = self.config
        return (config.sequence_batch_size if self.recurrent
                else config.batch_size // self.transitions_per_item)

    def replay_environment_extras_spec(self) -> Mapping[str, Any]:
        """The environment extras replay items carry: with `stores_environment_extras`, all the
        environment has (`{"env_state": spec}` when it has a global state), else none."""
        return dict(self.environment_spec.extras) if self.stores_environment_extras else {}

    def global_state_spec(self) -> specs.Array:
        """The global state a centralised module (a mixer, a critic) sees: the environment's
        `env_state` when replay stores it, else every agent's observation flattened and
        concatenated."""
        stored = self.replay_environment_extras_spec()
        if "env_state" in stored:
            return stored["env_state"]
        size = sum(int(np.prod(self.environment_spec.observations[agent].observation.shape))
                   for agent in self.environment_spec.agents)
        return specs.Array((size,), np.float32, name="concatenated_observations")

    def transition_signature(self) -> Any:
        """The (unpacked) replay item: an n-step transition of every network's agents stacked
        (see `AgentStacker`); its `extras` hold the environment's extras at both ends of the
        transition (see `transition_extras_spec`) if replay stores them."""
        extras_spec = self.replay_environment_extras_spec()
        return reverb_adders.NStepTransitionAdder.signature(
            self.environment_spec.stacked(self.stacker),
            transition_extras_spec(extras_spec) if extras_spec else ())

    def transition_item_signature(self) -> tf.TensorSpec:
        """A stored (packed) replay item: one transition's bytes, or `[transitions_per_item,
        bytes]` for several (see `make_transition_packer`)."""
        packed = self.make_transition_packer().signature()
        if self.transitions_per_item == 1:
            return packed
        return tf.TensorSpec([self.transitions_per_item, *packed.shape], packed.dtype,
                             name=packed.name)

    def make_transition_packer(self) -> ArrayPacker:
        """Packs each replay item (see `transition_signature`) into one byte column: sampling
        is much cheaper (see packing.py)."""
        return ArrayPacker(self.transition_signature())

    def make_rate_limiter(self) -> reverb.rate_limiters.RateLimiter:
        """Sampling starts at `min_replay_size` items, then keeps to `samples_per_insert`.

        Without `samples_per_insert`, only the minimum size is enforced.
        """
        config = self.config
        min_size = self.replay_size_in_items(config.min_replay_size)
        if config.samples_per_insert is None:
            return reverb.rate_limiters.MinSize(min_size)
        # Allow the sample/insert ratio to drift by 10% of the minimum replay size; never less
        # than Reverb accepts (one insert's worth of samples: a few sequences in replay and a
        # high samples_per_insert would otherwise fail with Reverb's own error).
        error_buffer = max(min_size * 0.1 * config.samples_per_insert, 2.0 * self.batch_size,
                           float(config.samples_per_insert), 1.0)
        return reverb.rate_limiters.SampleToInsertRatio(
            min_size_to_sample=min_size,
            samples_per_insert=config.samples_per_insert, error_buffer=error_buffer)

    def make_replay_tables(self) -> List[reverb.Table]:
        """One table of transitions (sequences with recurrent agents), uniform or prioritised,
        rate-limited by samples per insert."""
        config = self.config
        limiter = self.make_rate_limiter()
        sampler = (reverb.selectors.Prioritized(config.priority_exponent)
                   if config.prioritized_replay else reverb.selectors.Uniform())
        signature = (self.sequence_signature() if self.recurrent
                     else self.transition_item_signature())
        return [reverb.Table(name=REPLAY_TABLE, sampler=sampler, remover=reverb.selectors.Fifo(),
                             max_size=self.replay_size_in_items(config.max_replay_size),
                             rate_limiter=limiter, signature=signature)]

    def make_dataset_iterator(self, replay_client: reverb.Client) -> Iterator[reverb.ReplaySample]:
        """Batches sampled from replay, as stored (the trainer unpacks them), prefetched."""
        return ReplayIterator(functools.partial(
            make_trajectory_dataset, replay_client.server_address, REPLAY_TABLE,
            self.batch_size, self.config.prefetch_size,
            self.config.dataset_parallel_calls))

    def unpack_replay_items(self) -> Optional[Callable[[tf.Tensor], Any]]:
        """How the trainer turns a batch of stored replay items into its nest of transitions
        (None: as stored, as sequences are)."""
        return None if self.recurrent else self.make_transition_packer().unpack_rows

    def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
        """Writes every executor step into replay as n-step transitions, or with recurrent agents
        as sequences of `sequence_length` steps every `steps_per_sequence` steps."""
        if self.recurrent:
            return ObservationExtrasSequenceAdder(
                StopAwareClient(replay_client), sequence_length=self.config.sequence_length,
                period=self.config.steps_per_sequence,
                stores_environment_extras=bool(self.replay_environment_extras_spec()))
        return NStepTransitionAdder(StopAwareClient(replay_client), REPLAY_TABLE,
                                    n_step=self.config.n_step, discount=self.config.discount,
                                    packer=self.make_transition_packer(),
                                    environment_extras=bool(self.replay_environment_extras_spec()),
                                    transitions_per_item=self.transitions_per_item)

    def make_variable_client(self, variable_source: Any,
                             networks: MADQNNetworks) -> variable_utils.VariableClient:
        """Keeps `networks`' online variables in step with `variable_source`, in the background."""
        return VersionedVariableClient(
            variable_source,
            {key: network.variables for key, network in networks.q_networks.items()},
            update_period=self.config.variable_update_period)

    def trainer_checkpointing(self, replay_client: Optional[reverb.Client] = None
                              ) -> Callable[[Mapping[str, Any]], Checkpointing]:
        """Makes the trainer's checkpointing of its state under `<run_dir>/checkpoints/trainer/`.

        With `replay_client`, replay is saved just before each periodic trainer
        checkpoint (see replay_checkpointing.py), so the two are restored together.
        """
        return functools.partial(
            Checkpointing, run_dir=self.run_dir, node="trainer",
            interval_s=self.config.checkpoint_interval_s,
            max_to_keep=self.config.max_checkpoints_to_keep,
            before_save=(ReplayCheckpointRequest(replay_client, program_stop_event(),
                                                 run_dir=self.run_dir)
                         if replay_client is not None else None))

    def trainer_options(self) -> Dict[str, Any]:
        """Arguments of `trainer_class` beyond MADQN's: a subclass's own, e.g. its trainer
        `modules` (`{name: TrainerModule}`, such as a mixer). None here."""
        return {}

    def make_trainer(self, networks: MADQNNetworks, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> MADQNTrainer:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        config = self.config
        trainer_class, options = self.trainer_class, self.trainer_options()
        if self.recurrent:
            trainer_class = self.recurrent_trainer_class
            options.update(burn_in_length=config.burn_in_length, n_step=config.n_step)
        return trainer_class(
            networks=networks,
            dataset=dataset,
            discount=config.discount,
            learning_rate=config.learning_rate,
            max_gradient_norm=config.max_gradient_norm,
            target_update_period=config.target_update_period,
            importance_sampling_exponent=(config.importance_sampling_exponent
                                          if config.prioritized_replay else None),
            huber_loss_parameter=config.huber_loss_parameter,
            unpack=self.unpack_replay_items(),
            transitions_per_item=self.transitions_per_item,
            replay_client=replay_client,
            replay_table=REPLAY_TABLE,
            counter=counter,
            logger=logger,
            make_checkpointing=self.trainer_checkpointing(replay_client) if checkpoint else None,
            steps_per_call=self.config.trainer_steps_per_call,
            jit_compile=self.config.jit_compile,
            **options)

    def make_executor(self, networks: MADQNNetworks, exploration_schedule: ExplorationSchedule,
                      adder: Optional[adders.Adder] = None,
                      variable_client: Optional[variable_utils.VariableClient] = None,
                      seed: int = 0) -> MADQNExecutor:
        """An epsilon-greedy executor following `exploration_schedule` (carrying every agent's
        recurrent state through its episodes with recurrent agents)."""
        executor_class = self.recurrent_executor_class if self.recurrent else self.executor_class
        return executor_class(networks, exploration_schedule, adder, variable_client, seed)

    def make_evaluation_executor(self, networks: MADQNNetworks,
                                 variable_client: Optional[variable_utils.VariableClient] = None,
                                 seed: int = 0) -> MADQNExecutor:
        """A greedy executor that writes nothing (the evaluator's, and `evaluate`'s)."""
        return self.make_executor(networks, ConstantEpsilon(0.0), variable_client=variable_client,
                                  seed=seed)
