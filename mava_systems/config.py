"""Validated configuration dataclasses: each field may carry a range, checked on construction."""

import dataclasses
import json
import math
import numbers
from typing import Any, Dict, Optional


def bounded(default: Any, low: Optional[float] = None, high: Optional[float] = None, *,
            low_inclusive: bool = True, high_inclusive: bool = True, optional: bool = False,
            integer: bool = False, doc: str = "") -> Any:
    """A dataclass field whose numeric value must lie within [low, high] (bounds optional).

    With `optional`, None is allowed too. The value must be an integer if the
    default is one, or with `integer` (for an optional field whose default is None).
    """
    return dataclasses.field(
        default=default,
        metadata={"low": low, "high": high, "low_inclusive": low_inclusive,
                  "high_inclusive": high_inclusive, "optional": optional, "integer": integer,
                  "doc": doc},
    )


def documented(default: Any, doc: str) -> Any:
    """A dataclass field without a range whose `doc` is its flag's help text."""
    return dataclasses.field(default=default, metadata={"doc": doc})


def redefault(config_class: Any, name: str, default: Any) -> Any:
    """Field `name` of `config_class` (its range and help text) with another default, for a
    subclass that changes the default."""
    (field,) = [field for field in dataclasses.fields(config_class) if field.name == name]
    return dataclasses.field(default=default, metadata=field.metadata)


def recorded_before(value: Any, field: Any) -> Any:
    """`field` (a dataclass field) marked with the `value` runs recorded before it existed
    behaved as (see `recorded_before_value`)."""
    return dataclasses.field(default=field.default,
                             metadata={**field.metadata, "recorded_before": value})


def recorded_before_value(field: dataclasses.Field) -> Any:
    """What a run recorded (in run.json) before `field` existed behaved as: its
    `recorded_before` value, or its default if it was not marked."""
    return field.metadata.get("recorded_before", field.default)


SHARED_WEIGHTS_DOC = ("Agents of one type (the name before the index, e.g. adversary_0) share "
                      "networks.")


def sizes_doc(what: str) -> str:
    """The help text of a field holding the hidden layer sizes of `what`."""
    return f"Hidden layer sizes of {what}, comma-separated (e.g. 64,64)."


def _range_text(meta: dict) -> str:
    low = "-inf" if meta["low"] is None else meta["low"]
    high = "inf" if meta["high"] is None else meta["high"]
    return (("[" if meta["low_inclusive"] else "(") + f"{low}, {high}" +
            ("]" if meta["high_inclusive"] else ")"))


def _in_range(value: float, meta: dict) -> bool:
    low, high = meta["low"], meta["high"]
    if isinstance(value, float) and math.isnan(value):
        return False
    if low is not None and (value < low or (value == low and not meta["low_inclusive"])):
        return False
    if high is not None and (value > high or (value == high and not meta["high_inclusive"])):
        return False
    return True


def validate(config: Any) -> None:
    """Checks every bounded field of a dataclass instance; raises ValueError naming the field."""
    for field in dataclasses.fields(config):
        meta = field.metadata
        if "low" not in meta:
            continue
        value = getattr(config, field.name)
        if value is None and meta["optional"]:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(
                f"{type(config).__name__}.{field.name} must be a number in {_range_text(meta)}, "
                f"got {value!r}")
        if meta.get("integer") or (isinstance(field.default, int)
                                   and not isinstance(field.default, bool)):
            if not isinstance(value, numbers.Integral):
                raise ValueError(
                    f"{type(config).__name__}.{field.name} must be an integer, got {value!r}")
            value = int(value)
        else:
            value = float(value)
        setattr(config, field.name, value)  # Plain Python numbers from here on (not numpy).
        if not _in_range(value, meta):
            raise ValueError(
                f"{type(config).__name__}.{field.name}={value!r} is out of range: "
                f"allowed {_range_text(meta)}")


def num_envs_per_executor_field() -> Any:
    """The `num_envs_per_executor` field of a multi-agent system's config (see
    `acting/multi_environment.py`)."""
    return bounded(1, 1, doc="Environments each executor node steps together, acting for all of "
                             "them in one batched policy call; each writes to its own replay "
                             "stream, as one executor each would.")


VECTORISED_CHOICES = ("auto", "true", "false")


def vectorised_field() -> Any:
    """The `vectorised` field of a multi-agent system's config (see
    `acting/vectorised_loop.py`)."""
    return documented("auto", "Which implementation executors step: 'auto' a vectorised one "
                              "(wrappers.vectorised: all of an executor's environments in one "
                              "NumPy call) when num_envs_per_executor > 1 and the environment "
                              "has one, else the reference package's; 'true' the vectorised "
                              "one (refused if the environment has none); 'false' the "
                              "reference package's.")


def vectorised_choice(value: Any) -> Optional[bool]:
    """`vectorised`'s value as None (auto), True or False.

    Raises:
      ValueError: naming the field and its choices, on any other value.
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in VECTORISED_CHOICES:
        raise ValueError(f"vectorised={value!r} is not one of {', '.join(VECTORISED_CHOICES)}")
    return {"auto": None, "true": True, "false": False}[text]


def check_sizes(config: Any, name: str) -> None:
    """Makes `config.<name>` a tuple of layer sizes; raises ValueError naming the field unless it
    is a non-empty sequence of positive integers."""
    sizes = getattr(config, name)
    if (not isinstance(sizes, (tuple, list)) or not sizes or any(
            isinstance(size, bool) or not isinstance(size, numbers.Integral) or size <= 0
            for size in sizes)):
        raise ValueError(f"{type(config).__name__}.{name} must be a non-empty sequence of "
                         f"positive integers, got {sizes!r}")
    setattr(config, name, tuple(int(size) for size in sizes))


def check_replay_sizes(config: Any) -> None:
    """Raises ValueError unless `config.max_replay_size` is at least `config.min_replay_size`."""
    if config.max_replay_size < config.min_replay_size:
        raise ValueError(
            f"{type(config).__name__}.max_replay_size ({config.max_replay_size}) must be at least "
            f"min_replay_size ({config.min_replay_size})")


def check_support(config: Any) -> None:
    """Raises ValueError unless a distributional critic's `config.vmax` exceeds `config.vmin`."""
    if config.vmax <= config.vmin:
        raise ValueError(f"{type(config).__name__}.vmax ({config.vmax}) must exceed vmin "
                         f"({config.vmin})")


def parse_json_object(text: str, name: str) -> Dict[str, Any]:
    """The JSON object `text` holds ({} if it is empty), e.g. a flag's value.

    Raises:
      ValueError: naming `name`, if `text` is not a JSON object.
    """
    text = text.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{name} is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {text!r}")
    return value


JIT_COMPILE_DOC = (
    "Compile the trainer's step (losses, gradients, optimiser and target updates; not replay "
    "sampling) with XLA. On this CPU (docs/benchmarks.md) it makes the trainer steps/s of MADQN "
    "about 1.3x, recurrent QMIX 1.4x, QMIX 1.0-1.3x (MAPPO's was slower in an earlier "
    "measurement); the first step then takes seconds more "
    "(about 25 s for recurrent QMIX) to compile. Off by default for that start-up cost and because "
    "a network of your own may use an operation XLA cannot compile (the first step then fails "
    "with an error naming jit_compile).")


# Evaluation episodes per round when `evaluation_episodes` is None, by schedule.
STEP_SCHEDULE_EPISODES = 32
CLOCK_SCHEDULE_EPISODES = 4


@dataclasses.dataclass
class RunConfig:
    """The fields every system's configuration shares: evaluation, checkpointing, logging, seed.

    System configurations subclass it (their own fields follow these).
    """

    evaluation_every_steps: int = bounded(
        5000, 1, doc="Evaluate the policy every this many executor steps (counted over all "
                     "executors), at exactly these steps and at the step limit, with the "
                     "trainer's variables of that step (docs/architecture.md, Evaluation by "
                     "executor steps).")
    evaluation_interval_s: Optional[float] = bounded(
        None, 0.0, optional=True,
        doc="Set: evaluate every this many seconds instead (the clock schedule: where rounds fall "
            "depends on the machine's speed and load; evaluation_every_steps is then unused).")
    evaluation_episodes: Optional[int] = bounded(
        None, 1, optional=True, integer=True,
        doc="Greedy episodes per evaluation round, each round on the same evaluation seeds "
            f"(none: {STEP_SCHEDULE_EPISODES} by steps, {CLOCK_SCHEDULE_EPISODES} on the clock).")
    evaluation_max_pending: int = bounded(
        2, 0, doc="Evaluation by steps: executors wait while more than this many snapshots wait "
                  "for their evaluation round (training runs at most (this + 1) x "
                  "evaluation_every_steps executor steps ahead of the evaluator).")
    evaluation_video_every_rounds: int = bounded(
        0, 0, doc="Record one more greedy episode every this many evaluation rounds (and at the "
                  "final round) as <run_dir>/videos/steps_<executor steps>.gif, shown in "
                  "TensorBoard's images; 0: never. The environment must render images.")
    evaluation_max_cpu_share: float = bounded(
        0.05, 0.0, 1.0, low_inclusive=False,
        doc="The clock schedule's CPU budget for the evaluator, as a share of one core: after a "
            "round it waits evaluation_interval_s, or longer when the round took more than this "
            "share of the CPU time since the previous round ended (e.g. 0.05: at least 19 times "
            "the round's CPU time).")
    checkpoint_interval_s: float = bounded(300.0, 0.0, low_inclusive=False,
                                           doc="Seconds between checkpoints.")
    max_checkpoints_to_keep: int = bounded(3, 1, doc="Checkpoints kept per node.")
    terminal_log_interval_s: float = bounded(10.0, 0.0, doc="Seconds between terminal log lines per node.")
    trainer_log_interval_s: float = bounded(
        1.0, 0.0, doc="Seconds between the trainer's CSV and TensorBoard rows (0: every step).")
    trainer_steps_per_call: int = bounded(
        1, 1, doc="Trainer (gradient) steps per compiled call, each on its own batch; "
                  "counts, periods and the trainer's CSV stay in trainer steps.")
    jit_compile: bool = documented(False, JIT_COMPILE_DOC)
    seed: int = bounded(0, 0, doc="Base random seed.")
    deterministic: bool = documented(
        False, "Repeatable runs: every node's networks built from the seed alone, replay read "
               "in order by a trainer sampling its own seeded buffer on an exact schedule, "
               "executors fetching in lockstep with it; with one executor under local_mt, runs "
               "of one seed and flags repeat their rows and weights (docs/experiments.md, "
               "Deterministic runs, says what holds and what it costs).")

    def __post_init__(self):
        validate(self)

    @property
    def evaluates_by_steps(self) -> bool:
        """Whether evaluation rounds fall at multiples of `evaluation_every_steps` (else every
        `evaluation_interval_s` seconds)."""
        return self.evaluation_interval_s is None

    @property
    def episodes_per_evaluation(self) -> int:
        """Greedy episodes per evaluation round: `evaluation_episodes`, or its schedule's
        default."""
        if self.evaluation_episodes is not None:
            return int(self.evaluation_episodes)
        return STEP_SCHEDULE_EPISODES if self.evaluates_by_steps else CLOCK_SCHEDULE_EPISODES


@dataclasses.dataclass
class MultiAgentConfig(RunConfig):
    """`RunConfig`'s fields and those every multi-agent system has: how agents map to networks,
    the discount, how executors follow the trainer and how many environments each steps.

    Each family's config (`MADQNConfig`, `MAPPOConfig`, `MADDPGConfig`, ...) subclasses it
    directly (its own fields follow these, and it may give these its own defaults); none
    extends another family's config.
    """

    discount: float = bounded(0.99, 0.0, 1.0, doc="Discount per environment step.")
    shared_weights: bool = documented(True, SHARED_WEIGHTS_DOC)
    agent_ids: bool = documented(
        True, "Append each agent's one-hot index to its observation "
              "(wrappers.AgentIDObservations), so agents that share a network can learn "
              "different roles.")
    variable_update_period: int = bounded(100, 1, doc="Executor steps between variable fetches.")
    num_envs_per_executor: int = num_envs_per_executor_field()
    vectorised: str = vectorised_field()


@dataclasses.dataclass
class UniformReplayConfig(RunConfig):
    """`RunConfig`'s fields and those of a uniformly sampled, rate-limited replay (the table
    MADQN's builder makes, never prioritised), for systems that sample uniformly."""

    min_replay_size: int = bounded(1000, 1, doc="Transitions in replay before training starts.")
    max_replay_size: int = bounded(1_000_000, 1, doc="Replay capacity in transitions.")
    samples_per_insert: Optional[float] = bounded(
        32.0, 0.0, low_inclusive=False, optional=True,
        doc="Sampled transitions per inserted one (None: no rate limit).")
    prefetch_size: int = bounded(4, 0, doc="Batches prefetched by the dataset.")
    dataset_parallel_calls: int = bounded(1, 1, doc="Parallel Reverb sampling streams.")

    # Read by the replay table `NStepReplayBuilder` makes: sampling is uniform.
    prioritized_replay = False

    def __post_init__(self):
        validate(self)
        check_replay_sizes(self)
