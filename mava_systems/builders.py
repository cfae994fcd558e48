"""The builders' interface, and the replay layouts families share.

A builder makes every part of a system's nodes from the config, the environment
spec and the networks' keys (as Acme's builders do). `MultiAgentBuilder` is the
interface every multi-agent family's builder implements; the generic program of
`mava_systems.multiagent.MultiAgentSystem` calls only these methods:

- `make_networks()`: the networks (every node builds its own copy);
- `make_replay_tables()`: the Reverb tables of the replay node;
- `make_dataset_iterator(replay_client)`: the trainer's batches;
- `make_adder(replay_client)`: how an executor writes its steps to replay;
- `make_batched_adders(replay_client, num_envs)` (where `writes_batched`): the adders of a
  vectorised executor's environments, one replay stream for all of them (`envs_per_item`);
- `make_variable_client(variable_source, networks)`: how executors follow the trainer;
- `make_trainer(networks, dataset, replay_client=, counter=, logger=, checkpoint=)`;
- `make_executor(networks, adder=, variable_client=, seed=, **exploration)`: an acting
  executor (`exploration` is what the system gives each executor, e.g. MADQN's
  `exploration_schedule`; none for MAPPO);
- `make_evaluation_executor(networks, variable_client=, seed=)`: the greedy one.

Two replay layouts implement the replay half of it, for the families to share:
`NStepReplayBuilder` (off-policy: n-step transitions, or sequences for recurrent
agents, in one uniform or prioritised rate-limited table; MADQN's, VDN's,
QMIX's, MADDPG's) and `SequenceQueueBuilder` (on-policy: a FIFO queue of
overlapping sequences, each trained on once; MAPPO's, and single-agent IMPALA's).
"""

import fractions
import functools
from typing import (Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Type,
                    Union)

from acme import adders
from acme import specs as acme_specs
from acme.adders import reverb as reverb_adders
from acme.adders.reverb.sequence import EndBehavior
from dm_env import specs
import numpy as np
import reverb
import tensorflow as tf
import tree

from mava_systems.runs import determinism
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.nodes.lifecycle import program_stop_event
from mava_systems.data.batched_sequences import (BatchedSequenceWriter, batched_signature,
                                                 items_holding)
from mava_systems.data.batched_episode_sequences import BatchedEpisodeSequenceAdder
from mava_systems.data.batched_transitions import BatchedNStepAdder
from mava_systems.data.packing import ArrayPacker
from mava_systems.nodes.lockstep import LockstepBatches, TrainingSchedule
from mava_systems.nodes.replay import (ReplayIterator, StopAwareClient, item_stream,
                                       make_trajectory_dataset)
from mava_systems.runs.replay_checkpointing import ReplayCheckpointRequest
from mava_systems.data.sequence_adder import STEP_MASK, ObservationExtrasSequenceAdder
from mava_systems.data.stacking import AgentStacker
from mava_systems.data.transition_adder import (NStepTransitionAdder, SharedWriterClient,
                                                transition_extras_spec)
from mava_systems.specs import MAEnvironmentSpec

# The one table every builder's replay (or queue) has; the trainer's dataset reads it.
REPLAY_TABLE = reverb_adders.DEFAULT_PRIORITY_TABLE


class MultiAgentBuilder:
    """Makes every part of a multi-agent system's nodes; override one method to change one part.

    Holds what every builder needs (the config, the environment spec, which
    network each agent uses, the network factory and the run directory) and
    what every family shares: the agents stacked per network, the global state
    a centralised module sees, the dataset and the trainer's checkpointing. A
    family's builder implements the `make_*` methods of the interface (see this
    module's docstring) and sets the classes they construct: `trainer_class`
    and `executor_class`, and, if its config has a `recurrent` switch,
    `recurrent_trainer_class` and `recurrent_executor_class`. A subclass
    changes the loss or the acting by setting its own class; with
    `config.recurrent` the recurrent ones are used, so a subclass that sets
    `trainer_class` (or `executor_class`) must set its recurrent twin too (or
    the builder refuses a recurrent config, naming it: see `trainer_class_to_use`).
    """

    trainer_class: Type[Any] = object
    executor_class: Type[Any] = object
    recurrent_trainer_class: Optional[Type[Any]] = None
    recurrent_executor_class: Optional[Type[Any]] = None
    # Whether replay items carry the environment's extras (its global state), see
    # `replay_environment_extras_spec`.
    stores_environment_extras = False
    # Whether `make_batched_adders` writes a vectorised executor's environments as one stream.
    writes_batched = False
    # Environments whose steps each replay item holds side by side (see `batch_environments`).
    envs_per_item = 1

    def __init__(self, config: Any, environment_spec: MAEnvironmentSpec,
                 agent_networks: Dict[str, str], network_factory: Callable[..., Any],
                 run_dir: str):
        """Keeps what every part is made from.

        Args:
          config: the system's config dataclass.
          environment_spec: the environment's spec (every agent's).
          agent_networks: `{agent: network key}` (agents sharing a key share networks).
          network_factory: the family's network factory (see its `networks` module).
          run_dir: the run's directory (checkpoints go under it).

        Raises:
          ValueError: naming the attribute, if `config.recurrent` is set but this
            builder's class sets `trainer_class` or `executor_class` without its
            recurrent twin (see `trainer_class_to_use`).
        """
        self.config = config
        self.environment_spec = environment_spec
        self.agent_networks = agent_networks
        self.network_factory = network_factory
        self.run_dir = run_dir
        self.stacker = AgentStacker(agent_networks)
        if self.recurrent:
            self.trainer_class_to_use()
            self.executor_class_to_use()

    @property
    def recurrent(self) -> bool:
        """Whether the agents are recurrent: replay holds sequences, not n-step transitions
        (never for a subclass whose config has no `recurrent` switch)."""
        return bool(getattr(self.config, "recurrent", False))

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

    def make_dataset_iterator(self, replay_client: reverb.Client) -> Iterator[reverb.ReplaySample]:
        """Batches sampled from replay, as stored (the trainer unpacks them; items of
        `envs_per_item` environments are split into one element each), prefetched; with
        `config.deterministic`, the lockstep batches (`make_lockstep_batches`)."""
        if getattr(self.config, "deterministic", False):
            return self.make_lockstep_batches(replay_client)
        return ReplayIterator(functools.partial(
            make_trajectory_dataset, replay_client.server_address, REPLAY_TABLE,
            self.batch_size, self.config.prefetch_size,
            self.config.dataset_parallel_calls, lanes_per_item=self.envs_per_item))

    def make_lockstep_batches(self, replay_client: reverb.Client) -> LockstepBatches:
        """The trainer's batches of a deterministic run, from replay as a queue read in order
        (see nodes/lockstep.py): `lockstep_schedule`'s, sampled from a seeded buffer of
        `lockstep_buffer_capacity` items (None: trained on in order)."""
        priority_exponent = (self.config.priority_exponent
                             if getattr(self.config, "prioritized_replay", False) else None)
        return LockstepBatches(
            functools.partial(item_stream, replay_client.server_address, REPLAY_TABLE,
                              lanes_per_item=self.envs_per_item),
            self.batch_size, self.lockstep_schedule(), self.lockstep_buffer_capacity(),
            seed=self.config.seed, priority_exponent=priority_exponent,
            lanes_per_item=self.envs_per_item)

    def lockstep_schedule(self) -> TrainingSchedule:
        """The items the trainer reads before each step in a deterministic run."""
        raise NotImplementedError(f"{type(self).__name__} has no deterministic schedule")

    def lockstep_buffer_capacity(self) -> Optional[int]:
        """The trainer's own replay capacity in a deterministic run, in items (None: it trains on
        the items in order, each once)."""
        return None

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

    def trainer_class_to_use(self) -> Type[Any]:
        """The class `make_trainer` constructs: `recurrent_trainer_class` with `config.recurrent`,
        else `trainer_class`.

        Raises:
          ValueError: with `config.recurrent`, if a subclass set `trainer_class` but not
            `recurrent_trainer_class` (its trainer would silently not be used).
        """
        return self._class_to_use("trainer_class")

    def executor_class_to_use(self) -> Type[Any]:
        """The class acting executors are: `recurrent_executor_class` with `config.recurrent`,
        else `executor_class` (refused as `trainer_class_to_use` says)."""
        return self._class_to_use("executor_class")

    def _class_to_use(self, attribute: str) -> Type[Any]:
        if not self.recurrent:
            return getattr(self, attribute)
        recurrent_attribute = f"recurrent_{attribute}"
        recurrent_class = getattr(self, recurrent_attribute)
        # Where each is set: this builder itself, else the classes of its MRO, most derived first.
        owners = [self, *type(self).__mro__]
        setter = next(owner for owner in owners if attribute in vars(owner))
        if recurrent_class is None or owners.index(setter) < next(
                index for index, owner in enumerate(owners) if recurrent_attribute in vars(owner)):
            where = getattr(setter, "__name__", f"this {type(self).__name__}")
            raise ValueError(
                f"{where} sets {attribute} = {getattr(self, attribute).__name__} but not "
                f"{recurrent_attribute}, which the builder uses with recurrent=True (now "
                f"{getattr(recurrent_class, '__name__', None)}): set {recurrent_attribute} there "
                "too (e.g. the same change made to the recurrent class), or use recurrent=False")
        return recurrent_class

    # The interface (see the module's docstring): each family implements these.
    def make_networks(self) -> Any:
        """The networks (every node builds its copy here)."""
        raise NotImplementedError

    def make_replay_tables(self) -> List[reverb.Table]:
        """The replay node's tables."""
        raise NotImplementedError

    def spec_networks(self) -> Any:
        """`make_networks()`, built only to read specs from (e.g. a recurrent core's state) where
        no node's construction does: with `config.deterministic` under the construction lock
        and from the seed (see `runs.determinism`), so that their random initial values shift
        none of another node's, built meanwhile in another thread."""
        with determinism.seeded_construction(self.config.seed,
                                             getattr(self.config, "deterministic", False)):
            return self.make_networks()

    def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
        """Writes an executor's steps into replay."""
        raise NotImplementedError

    def batch_environments(self, num_envs: int) -> None:
        """Makes replay ready for executors that write `num_envs` environments each through
        `make_batched_adders` (items as one environment's here)."""
        del num_envs

    def make_batched_adders(self, replay_client: reverb.Client, num_envs: int
                            ) -> List[adders.Adder]:
        """One adder per environment of a vectorised executor, all writing one replay stream
        (where `writes_batched`)."""
        raise NotImplementedError(f"{type(self).__name__} writes one stream per environment")

    def make_batched_executor(self, networks: Any, replay_client: Optional[reverb.Client],
                              variable_client: Any, seeds: Sequence[int], agents: Sequence[str],
                              evaluation: bool = False, **exploration: Any) -> Optional[Any]:
        """An executor acting for and writing a batched environment's `len(seeds)` environments
        in arrays (`acting.unsplit_loop.BatchedExecutor`; with `evaluation`, acting as
        `make_evaluation_executor` does), or None where the family has none (its executors then
        split the batch into environments)."""
        del networks, replay_client, variable_client, seeds, agents, evaluation, exploration
        return None

    def unpack_replay_items(self) -> Optional[Callable[[tf.Tensor], Any]]:
        """How the trainer turns a batch of stored items into its nest (None: as stored)."""
        return None

    def make_variable_client(self, variable_source: Any, networks: Any) -> Any:
        """Keeps an executor's `networks` in step with `variable_source`, in the background."""
        raise NotImplementedError

    def trainer_options(self) -> Dict[str, Any]:
        """Arguments of the trainer class beyond the family's own: a subclass's, e.g. its
        trainer `modules` (`{name: TrainerModule}`, such as a mixer). None here."""
        return {}

    def make_trainer(self, networks: Any, dataset: Iterator[reverb.ReplaySample],
                     replay_client: Optional[reverb.Client] = None, counter: Any = None,
                     logger: Any = None, checkpoint: bool = True) -> Any:
        """The trainer, checkpointed with replay (see `trainer_checkpointing`) when `checkpoint`."""
        raise NotImplementedError

    def make_executor(self, networks: Any, *args: Any, **kwargs: Any) -> Any:
        """An acting executor: `make_executor(networks, adder=, variable_client=, seed=,
        **exploration)` (a family that explores by a schedule takes it second)."""
        raise NotImplementedError

    def make_evaluation_executor(self, networks: Any, variable_client: Any = None,
                                 seed: int = 0) -> Any:
        """A greedy executor that writes nothing (the evaluator's, and `evaluate`'s)."""
        raise NotImplementedError


class NStepReplayBuilder(MultiAgentBuilder):
    """The off-policy replay layout: one table of n-step transitions (or, with `config.recurrent`,
    of sequences with the networks' stored states), uniform or prioritised, rate-limited by
    samples per insert; items are packed into one byte column (see packing.py).

    Reads the config's `n_step`, `discount`, `batch_size`, `min_replay_size`,
    `max_replay_size`, `samples_per_insert`, `prefetch_size`,
    `dataset_parallel_calls` and, if it has them, `prioritized_replay` and
    `priority_exponent`, `transitions_per_item`, and with `recurrent` the
    sequence fields (see `MADQNConfig`). A recurrent family says which modules'
    states are stored by `acting_cores`.
    """

    def acting_cores(self, networks: Any) -> Mapping[str, Any]:
        """`{network key: snt.RNNCore}` whose state executors carry and replay stores with
        recurrent agents."""
        raise NotImplementedError(f"{type(self).__name__} has no recurrent networks")

    def sequence_extras_spec(self) -> Dict[str, Any]:
        """What each stored step's extras hold with recurrent agents (written with its
        observation, see `ObservationExtrasSequenceAdder`): every network's state the agents
        act from there (`core_state`, agents stacked), the step mask and the environment's
        extras if replay stores them."""
        networks = self.spec_networks()
        core_state = {key: tree.map_structure(
                          lambda part: specs.Array(tuple(part.shape), np.float32),
                          self.acting_cores(networks)[key].initial_state(len(agents)))
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

    def lockstep_schedule(self) -> TrainingSchedule:
        """Training starts at `min_replay_size`, then each step reads `batch_size /
        samples_per_insert` more items (one per step without `samples_per_insert`)."""
        config = self.config
        ratio = config.samples_per_insert
        per_step = (1 if ratio is None
                    else fractions.Fraction(self.batch_size) / fractions.Fraction(ratio))
        return TrainingSchedule(self.replay_size_in_items(config.min_replay_size), per_step)

    def lockstep_buffer_capacity(self) -> Optional[int]:
        """The replay's capacity (`max_replay_size`), in items."""
        return self.replay_size_in_items(self.config.max_replay_size)

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
        return self.transition_adder(StopAwareClient(replay_client))

    @property
    def writes_batched(self) -> bool:
        """Transitions (not sequences: recurrent agents write one stream per environment)."""
        return not self.recurrent

    def make_batched_adders(self, replay_client: reverb.Client, num_envs: int
                            ) -> List[adders.Adder]:
        """`make_adder`'s transition adders of `num_envs` environments sharing one trajectory
        writer (`SharedWriterClient`): the items each would write alone, in one stream."""
        shared = SharedWriterClient(StopAwareClient(replay_client), num_envs)
        return [self.transition_adder(shared) for _ in range(num_envs)]

    def make_batched_writer(self, replay_client: reverb.Client, num_envs: int
                            ) -> Union[BatchedNStepAdder, BatchedEpisodeSequenceAdder]:
        """`make_adder`'s items of `num_envs` environments kept in arrays and written through
        one stream (see `BatchedNStepAdder` and, with recurrent agents,
        `BatchedEpisodeSequenceAdder`), for an executor that never splits the batch."""
        if self.recurrent:
            return BatchedEpisodeSequenceAdder(
                StopAwareClient(replay_client), REPLAY_TABLE, num_envs,
                sequence_length=self.config.sequence_length,
                period=self.config.steps_per_sequence,
                stores_environment_extras=bool(self.replay_environment_extras_spec()))
        return BatchedNStepAdder(StopAwareClient(replay_client), REPLAY_TABLE, num_envs,
                                 n_step=self.config.n_step, discount=self.config.discount,
                                 packer=self.make_transition_packer(),
                                 environment_extras=bool(self.replay_environment_extras_spec()),
                                 transitions_per_item=self.transitions_per_item)

    def transition_adder(self, client: Any) -> NStepTransitionAdder:
        """An adder of packed n-step transitions (`transitions_per_item` per item) through
        `client`."""
        return NStepTransitionAdder(client, REPLAY_TABLE,
                                    n_step=self.config.n_step, discount=self.config.discount,
                                    packer=self.make_transition_packer(),
                                    environment_extras=bool(self.replay_environment_extras_spec()),
                                    transitions_per_item=self.transitions_per_item)


class SequenceQueueBuilder(MultiAgentBuilder):
    """The on-policy replay layout: a FIFO queue of sequences of `config.sequence_length` steps,
    each starting at the previous one's last step (its bootstrap) and crossing episodes; each
    is trained on once and executors wait while the queue is full (`config.max_queue_size`).

    A family says what its executors write with each step (`extras_spec`) and,
    if more than the stacked environment data, what each step's observation
    holds (`sequence_environment_spec`).

    A vectorised executor's B environments write one stream (`make_batched_adders`,
    see data/batched_sequences.py): with `envs_per_item` B, each item is a block of
    B sequences, the queue holds `max_queue_size` sequences rounded up to whole
    blocks (at least one), and the dataset splits blocks into sequences.
    """

    writes_batched = True

    def batch_environments(self, num_envs: int) -> None:
        """Items become blocks of `num_envs` sequences (see the class docstring)."""
        self.envs_per_item = num_envs

    def extras_spec(self) -> Dict[str, Any]:
        """What executors write with each action (e.g. the behaviour log-probabilities)."""
        raise NotImplementedError

    def sequence_environment_spec(self) -> acme_specs.EnvironmentSpec:
        """The spec of what each stored step holds besides its extras: the environment's data
        stacked per network."""
        return self.environment_spec.stacked(self.stacker)

    @property
    def batch_size(self) -> int:
        """Sequences per trainer step (`config.batch_size`)."""
        return self.config.batch_size

    def lockstep_schedule(self) -> TrainingSchedule:
        """Each step trains on the next `batch_size` sequences."""
        return TrainingSchedule(self.batch_size, self.batch_size)

    def make_replay_tables(self) -> List[reverb.Table]:
        """One FIFO queue of sequences (or of blocks of `envs_per_item`): each is trained on
        once, and executors wait when it is full."""
        signature = reverb_adders.SequenceAdder.signature(
            self.sequence_environment_spec(), self.extras_spec(),
            sequence_length=self.config.sequence_length)
        max_size = self.config.max_queue_size
        if self.envs_per_item > 1:
            signature = batched_signature(signature, self.envs_per_item)
            max_size = items_holding(max_size, self.envs_per_item)
        return [reverb.Table.queue(name=REPLAY_TABLE, max_size=max_size, signature=signature)]

    def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
        """Writes sequences of `sequence_length` steps, each starting at the previous one's last."""
        return reverb_adders.SequenceAdder(
            client=StopAwareClient(replay_client), sequence_length=self.config.sequence_length,
            period=self.config.sequence_length - 1,
            end_of_episode_behavior=EndBehavior.CONTINUE)

    def make_batched_adders(self, replay_client: reverb.Client, num_envs: int
                            ) -> List[adders.Adder]:
        """The lanes of one `BatchedSequenceWriter`: `make_adder`'s sequences of `num_envs`
        environments (which must be `envs_per_item`) in blocks, one append per batched step."""
        return self.make_batched_writer(replay_client, num_envs).lanes

    def make_batched_writer(self, replay_client: reverb.Client, num_envs: int
                            ) -> BatchedSequenceWriter:
        """`make_adder`'s sequences of `num_envs` environments (which must be `envs_per_item`)
        written in blocks, one append per batched step."""
        if num_envs != self.envs_per_item:
            raise ValueError(f"batched adders for {num_envs} environments, but the queue holds "
                             f"blocks of {self.envs_per_item}")
        return BatchedSequenceWriter(
            StopAwareClient(replay_client), REPLAY_TABLE, num_envs,
            sequence_length=self.config.sequence_length,
            period=self.config.sequence_length - 1,
            max_in_flight_items=self.writer_items_in_flight)

    @property
    def writer_items_in_flight(self) -> int:
        """Blocks a batched writer streams before waiting for replay to confirm them (each
        one more block of data older than the policy the trainer has)."""
        return getattr(self.config, "max_items_in_flight", 2)
