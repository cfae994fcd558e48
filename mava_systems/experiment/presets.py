"""Published protocols as data: `python -m mava_systems.experiment --preset=NAME`.

A preset holds what a paper's protocol fixes: the systems (of ours that it
benchmarks), tasks, step budgets, environments per executor, the evaluation
schedule, the metric, the seeds, and the published figures with their source
and units where the project's collected facts (its design notes on MARL
protocols, MARL_FACTS) give them, each naming the paper, repository or issue
it comes from. Where budgets
or settings differ between systems or tasks (EPyMARL's on-policy budgets are
10 times its off-policy ones; the MAPPO paper's epochs differ per task), the
preset is made of parts, each an ordinary grid in `<out>/<part>`.

This module imports nothing heavy: `--dry_run` prints a preset's grid and its
estimated hours without TensorFlow.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mava_systems.experiment import grid as grid_lib

PRESET_FILE = "preset.json"
# The figure --dry_run's estimate divides by, unless --steps_per_s gives another: executor
# steps/s of one run of this project on LBF/RWARE on the shared 2-core machine, about
# 250-390 (docs/benchmarks.md); a run with several environments per executor or a quiet
# machine is faster.
DEFAULT_STEPS_PER_S = 300.0



@dataclasses.dataclass(frozen=True)
class Figure:
    """A published return, in the units our report uses, with where it comes from."""

    value: float
    units: str
    source: str


@dataclasses.dataclass(frozen=True)
class Part:
    """One grid of a preset: its entries (`label=system`), tasks, budget and settings."""

    name: str
    systems: Tuple[str, ...]
    environments: Tuple[str, ...]
    max_executor_steps: int
    settings: Tuple[str, ...] = ()  # `label.field=value`, as --set takes them.
    published: Mapping[str, Mapping[str, Figure]] = dataclasses.field(
        default_factory=dict)  # environment -> label -> figure.
    # Value-based entries: epsilon falls linearly from 1 to 0.05 over this many executor steps
    # (scaled with the budget; 0: the systems' own exploration).
    exploration_steps: int = 0
    # Executor steps between evaluations, where the part's differs from the preset's (0: the
    # preset's `evaluation_every_steps`).
    evaluation_every_steps: int = 0

    @property
    def labels(self) -> List[str]:
        """The entries' labels."""
        return [item.partition("=")[0] for item in self.systems]


@dataclasses.dataclass(frozen=True)
class Preset:
    """A published protocol: its parts and what holds for all of them."""

    name: str
    title: str
    source: str
    parts: Tuple[Part, ...]
    seeds: int
    evaluation_every_steps: int
    evaluation_episodes: int
    metric: str
    units: str
    episode_steps: int  # The tasks' episode limit: an evaluation episode's most steps.
    notes: str = ""
    env_modules: Tuple[str, ...] = ()  # Modules registering tasks (imported as --env_module).
    # What `narrowed` kept of the published grid, in words ("" for all of it).
    only: str = ""

    def part(self, name: str) -> Part:
        """The part called `name`."""
        return next(part for part in self.parts if part.name == name)

    def evaluation_every(self, part: Part, scale: float = 1.0) -> int:
        """Executor steps between `part`'s evaluations, x `scale`."""
        return scaled_steps(part.evaluation_every_steps or self.evaluation_every_steps, scale)


def _set(labels: Sequence[str], **fields: Any) -> Tuple[str, ...]:
    """`label.field=value` for every label and field (tuples as comma-separated values)."""
    def text(value: Any) -> str:
        if value is None:
            return "none"
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, tuple):
            return ",".join(str(item) for item in value)
        return str(value)
    return tuple(f"{label}.{field}={text(value)}" for label in labels
                 for field, value in fields.items())


# ---- EPyMARL (Papoudakis et al. 2021) on LBF and RWARE ----

EPYMARL_SOURCE = ("EPyMARL: Papoudakis et al., Benchmarking Multi-Agent Deep Reinforcement "
                  "Learning Algorithms in Cooperative Tasks (NeurIPS 2021 Datasets and "
                  "Benchmarks), and its README and configs (github.com/uoe-agents/epymarl)")
_EPYMARL_OFF_POLICY = ("qmix", "vdn", "iql=madqn")
_EPYMARL_ON_POLICY = ("mappo", "ippo")
# Every EPyMARL agent is a GRU; the value-based ones anneal epsilon 1 -> 0.05 over 50k steps
# with learning rate 5e-4 (RMSProp there, Adam here), gradient norm clipped at 10, discount
# 0.99, agent IDs in the observations. MAPPO and IPPO (its mappo.yaml and ippo.yaml): a GRU
# agent of one input layer (hidden_dim 128) and an MLP critic of two 128-unit layers, 10
# environments whose 10 episodes make each update's batch (buffer and batch of 10), lr 3e-4,
# 4 epochs over the whole batch (no minibatches), clip 0.2, entropy 0.001. Here a batch is 10
# sequences of one episode limit's steps each (`_epymarl_batch`), not aligned to episodes.
_EPYMARL_VALUE_SETTINGS = dict(recurrent=True, rnn_hidden_size=64, learning_rate=5e-4,
                               max_gradient_norm=10, discount=0.99, agent_ids=True)
_EPYMARL_PPO_SETTINGS = dict(recurrent=True, rnn_hidden_size=128, hidden_sizes=(128, 128),
                             rnn_input_layers=1, recurrent_critic=False,
                             num_envs_per_executor=10, batch_size=10, num_minibatches=1,
                             learning_rate=3e-4, num_epochs=4, clip_epsilon=0.2,
                             entropy_cost=0.001, discount=0.99, agent_ids=True)


def _epymarl_batch(episode_steps: int) -> Dict[str, int]:
    """EPyMARL's on-policy batch of 10 episodes: 10 sequences of `episode_steps` trained steps
    (and a bootstrap step), in a queue of two batches."""
    return dict(sequence_length=episode_steps + 1, max_queue_size=20)


def _epymarl(name: str, title: str, environments: Tuple[str, ...], off_policy_steps: int,
             units: str, episode_steps: int, env_modules: Tuple[str, ...] = ()) -> Preset:
    labels_off = [item.partition("=")[0] for item in _EPYMARL_OFF_POLICY]
    labels_on = list(_EPYMARL_ON_POLICY)
    return Preset(
        name=name, title=title, source=EPYMARL_SOURCE,
        parts=(Part("off_policy", _EPYMARL_OFF_POLICY, environments, off_policy_steps,
                    _set(labels_off, **_EPYMARL_VALUE_SETTINGS), exploration_steps=50_000),
               Part("on_policy", _EPYMARL_ON_POLICY, environments, 10 * off_policy_steps,
                    _set(labels_on, **_EPYMARL_PPO_SETTINGS, **_epymarl_batch(episode_steps)),
                    evaluation_every_steps=10 * 50_000)),
        seeds=5, evaluation_every_steps=50_000, evaluation_episodes=100,
        metric="EPyMARL's maximum return (the evaluation step with the highest mean over "
               "seeds, its mean and 95% CI) and average return (mean over all evaluations), "
               "beside the final return",
        units=units, episode_steps=episode_steps,
        notes="On-policy budgets and evaluation intervals are 10x the off-policy ones "
              "(EPyMARL counts its on-policy steps from one of its 10 parallel environments; "
              "we count every environment), so both parts have 41 evaluations. "
              "IQL is our MADQN. EPyMARL's QMIX uses RMSProp, ours Adam. No published "
              "figure is encoded: the paper's tables are not transcribed here (compare "
              "with them by hand, in the units above).",
        env_modules=env_modules)


# The README's order; its two 5-food tasks are registered by `EPYMARL_TASKS_MODULE`
# (lbforaging 2.0.0 registers at most 4 foods).
EPYMARL_TASKS_MODULE = "mava_systems.experiment.epymarl_tasks"
_LBF_TASKS = tuple(f"lbf_epymarl/Foraging-{task}-v3" if task.endswith("-5f")
                   else f"lbf/Foraging-{task}-v3" for task in (
                       "8x8-2p-2f-coop", "2s-8x8-2p-2f-coop", "10x10-3p-3f", "2s-10x10-3p-3f",
                       "15x15-3p-5f", "15x15-4p-3f", "15x15-4p-5f"))
_RWARE_TASKS = tuple(f"rware/rware-{task}-v2" for task in ("tiny-2ag", "tiny-4ag", "small-4ag"))

# ---- The MAPPO paper (Yu et al. 2022) on MPE ----

_MAPPO_SOURCE = ("The MAPPO paper: Yu et al., The Surprising Effectiveness of PPO in "
                 "Cooperative Multi-Agent Games (NeurIPS 2022 Datasets and Benchmarks), and its "
                 "repository's MPE training scripts (github.com/marlbenchmark/on-policy)")
# Its MPE scripts: 128 rollout threads of 25 steps each per update (3,200 steps), 1
# minibatch, lr 7e-4 (actor and critic), rMAPPO's layout (an MLP base of two 64-unit layers
# and one 64-unit GRU layer, for the actor and the critic), chunks of 10, entropy 0.01, GAE
# lambda 0.95, clip 0.2, value normalisation, value loss coefficient 1, the agent ID in the
# critic's input. Here a batch is 128 sequences of 25 trained steps (one block of the 128
# environments' sequences), cut into chunks of 25: a chunk must divide a sequence's trained
# steps (the paper's 10-step chunks run across its threads' rollouts).
_MAPPO_SETTINGS = dict(num_envs_per_executor=128, batch_size=128, sequence_length=26,
                       num_minibatches=1, max_queue_size=256, learning_rate=7e-4,
                       critic_learning_rate=7e-4, hidden_sizes=(64, 64), recurrent=True,
                       rnn_hidden_size=64, rnn_input_layers=None, recurrent_critic=True,
                       chunk_length=25, entropy_cost=0.01, gae_lambda=0.95, clip_epsilon=0.2,
                       normalize_values=True, baseline_cost=1.0, agent_ids=True)
_SPREAD = "mpe/simple_spread_v3"
_MPE_UNITS = ("sum over the agents of the episode return, PettingZoo's v3 MPE (self-collisions "
              "excluded)")


def _mappo_part(name: str, environment: str, steps: int, epochs: int, **extra: Any) -> Part:
    published = {}
    if environment == _SPREAD:
        published = {environment: {"mappo": Figure(
            -22.5, _MPE_UNITS, "MAPPO paper, 20M steps with 128 parallel environments: about "
            "-120 in its team units T (every agent gets the team sum, self-collisions "
            "included); ours = (T + 75) / 2")}}
    return Part(name, ("mappo",), (environment,), steps,
                _set(["mappo"], **_MAPPO_SETTINGS, num_epochs=epochs, **extra), published)


# ---- TF-era Mava's MAD4PG on multiwalker ----

_MAVA_SOURCE = ("TF-era Mava (github.com/instadeepai/Mava, its TensorFlow releases): its "
                "MAD4PG multiwalker example and its issue #314")


PRESETS: Dict[str, Preset] = {preset.name: preset for preset in (
    _epymarl("epymarl_lbf", "EPyMARL's Level-Based Foraging benchmark", _LBF_TASKS, 2_000_000,
             "sum over the agents of the episode return; LBF's rewards are normalised so "
             "that collecting all food gives 1.0 (EPyMARL's units)", episode_steps=50,
             env_modules=(EPYMARL_TASKS_MODULE,)),
    _epymarl("epymarl_rware", "EPyMARL's Robotic Warehouse benchmark", _RWARE_TASKS, 4_000_000,
             "deliveries per episode summed over the agents (EPyMARL's units); 500-step "
             "episodes", episode_steps=500),
    Preset(
        name="mappo_mpe", title="The MAPPO paper's MPE tasks", source=_MAPPO_SOURCE,
        parts=(_mappo_part("spread", _SPREAD, 20_000_000, 10),
               _mappo_part("speaker_listener", "mpe/simple_speaker_listener_v4", 2_000_000, 15,
                           shared_weights=False),
               _mappo_part("reference", "mpe/simple_reference_v3", 3_000_000, 15)),
        seeds=5, evaluation_every_steps=100_000, evaluation_episodes=32,
        metric="final return, and the maximum and average returns over evaluations",
        units=_MPE_UNITS, episode_steps=25,
        notes="The paper's scripts fix no evaluation schedule or seed count for this preset "
              "to encode: these are ours. Its value loss is a Huber loss, ours squared error. "
              "With 8 threads instead of 128 the paper's spread plateaued "
              "near -170 T = -47.5 ours (its issue #46)."),
    Preset(
        name="mava_multiwalker", title="TF-era Mava's MAD4PG on multiwalker",
        source=_MAVA_SOURCE,
        parts=(Part("mad4pg", ("mad4pg",), ("sisl/multiwalker_v9",), 1_000_000, _set(
            ["mad4pg"], policy_hidden_sizes=(256, 256, 256),
            critic_hidden_sizes=(512, 512, 256), n_step=5, target_update_period=100,
            batch_size=256, policy_learning_rate=1e-4, critic_learning_rate=1e-4,
            samples_per_insert=32, num_atoms=51, vmin=-150, vmax=150, noise_scale=0.3),
            {"sisl/multiwalker_v9": {"mad4pg": Figure(
                120.0, "sum over the 3 walkers of the episode return",
                "Mava issue #314: about 40 mean per-walker return after about 1M executor "
                "steps (an older multiwalker version), x 3 walkers")}}),),
        seeds=5, evaluation_every_steps=50_000, evaluation_episodes=32,
        metric="final return, and the maximum and average returns over evaluations",
        units="sum over the 3 walkers of the episode return (PettingZoo's multiwalker_v9)",
        episode_steps=500,
        notes="Mava's example ran with remove_on_fall=False, which a grid cannot set (our "
              "multiwalker_v9 keeps PettingZoo's default); the evaluation schedule and the "
              "seed count are ours."),
)}


def get(name: str) -> Preset:
    """The preset called `name`.

    Raises:
      ValueError: listing the presets, if there is none of that name.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def narrowed(preset: Preset, labels: Optional[Sequence[str]] = None,
             environments: Optional[Sequence[str]] = None) -> Preset:
    """`preset` with only the entries labelled `labels` and the tasks `environments` (None:
    all of them); its parts left with no entry or task are dropped.

    Raises:
      ValueError: naming a label or task the preset does not have, and listing those it has.
    """
    if labels is not None:  # ("iql=madqn", as the entries are listed, names entry iql.)
        labels = [label.partition("=")[0] for label in labels]
    all_labels = {item.partition("=")[0]: item for part in preset.parts for item in part.systems}
    all_environments = list(dict.fromkeys(environment for part in preset.parts
                                          for environment in part.environments))
    for given, known, kind in ((labels, list(all_labels), "entries"),
                               (environments, all_environments, "tasks")):
        unknown = [item for item in given or () if item not in known]
        if unknown:
            described = [all_labels.get(item, item) for item in known]
            raise ValueError(f"preset {preset.name} has no {kind} {', '.join(unknown)}; its "
                             f"{kind}: {', '.join(described)}")
    if labels is None and environments is None:
        return preset
    parts = []
    for part in preset.parts:
        systems = tuple(item for item in part.systems
                        if labels is None or item.partition("=")[0] in labels)
        tasks = tuple(task for task in part.environments
                      if environments is None or task in environments)
        if systems and tasks:
            kept = [f"{item.partition('=')[0]}." for item in systems]
            parts.append(dataclasses.replace(
                part, systems=systems, environments=tasks,
                settings=tuple(item for item in part.settings if item.startswith(tuple(kept))),
                published={task: {label: figure for label, figure in figures.items()
                                  if label in [item.partition("=")[0] for item in systems]}
                           for task, figures in part.published.items() if task in tasks}))
    if not parts:
        raise ValueError(f"preset {preset.name} runs none of entries {', '.join(labels or [])} "
                         f"on tasks {', '.join(environments or [])} together: each part runs "
                         + "; ".join(f"{', '.join(part.labels)} on {', '.join(part.environments)}"
                                     for part in preset.parts))
    only = "; ".join(f"{name} {', '.join(items)}" for name, items in
                     (("entries", labels), ("tasks", environments)) if items is not None)
    return dataclasses.replace(preset, parts=tuple(parts), only=f"only the {only}")


def from_record(record: Mapping[str, Any]) -> Preset:
    """The preset (narrowed as it ran) of a record `save` or `grid_record` made."""
    only = record.get("only") or {}
    return narrowed(get(record.get("preset", record.get("name"))), only.get("entries"),
                    only.get("tasks"))


def _only_record(preset: Preset) -> Dict[str, Any]:
    """What a record keeps of a narrowed preset's choice (nothing for a whole preset)."""
    if not preset.only:
        return {}
    published = get(preset.name)
    labels = [label for part in preset.parts for label in part.labels]
    tasks = list(dict.fromkeys(task for part in preset.parts for task in part.environments))
    whole_labels = [label for part in published.parts for label in part.labels]
    whole_tasks = list(dict.fromkeys(task for part in published.parts
                                     for task in part.environments))
    return {"only": {"entries": None if labels == whole_labels else labels,
                     "tasks": None if tasks == whole_tasks else tasks}}


def scaled_steps(steps: int, scale: float) -> int:
    """`steps` x `scale`, at least 1."""
    return max(1, int(round(steps * scale)))


def check_scale(scale: float) -> None:
    """Raises ValueError unless 0 < `scale` <= 1."""
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"--scale must be in (0, 1], got {scale}")


def part_flags(preset: Preset, part: Part, scale: float, seeds: Optional[int] = None
               ) -> Dict[str, Any]:
    """The experiment command's flags for one part, by name (`systems`, `envs`, `env_module`,
    `seeds`, `max_executor_steps`, and `overrides`: the --set items): the budget and the evaluation
    interval x `scale`, so that the number of evaluations stays the published one."""
    every = preset.evaluation_every(part, scale)
    exploration = ({"exploration": f"linear:1,0.05,{scaled_steps(part.exploration_steps, scale)}"}
                   if part.exploration_steps else {})
    return {"systems": ",".join(part.systems), "envs": ",".join(part.environments),
            "env_module": list(preset.env_modules),
            "seeds": preset.seeds if seeds is None else seeds,
            "max_executor_steps": scaled_steps(part.max_executor_steps, scale),
            "overrides": [*_set(part.labels, evaluation_every_steps=every,
                                evaluation_episodes=preset.evaluation_episodes, **exploration),
                          *part.settings]}


def grid_record(preset: Preset, scale: float, part: Part) -> Dict[str, Any]:
    """What each part's experiment.json records of its preset (see `grid.Grid.preset`)."""
    return {"name": preset.name, "scale": scale, "part": part.name, **_only_record(preset)}


def part_heading(record: Mapping[str, Any]) -> str:
    """The first line of a part's report: the preset's scale line and the part (`record` as
    `grid_record` makes it)."""
    return f"{scale_line(from_record(record), record['scale'])}; part {record['part']}"


def scale_line(preset: Preset, scale: float) -> str:
    """The line that opens every report and dry run of a preset: its name and its scale."""
    budgets = ("the published budgets" if scale == 1.0 else
               f"every budget, evaluation interval and exploration schedule x {scale:g} of the "
               "published")
    only = f" ({preset.only})" if preset.only else ""
    return f"Preset {preset.name} ({preset.title}){only} at --scale={scale:g}: {budgets}"


EVALUATION_FIELDS = ("evaluation_every_steps", "evaluation_episodes")


def protocol_lines(preset: Preset, scale: float, seeds: int,
                   changes: Sequence[str] = ()) -> List[str]:
    """The protocol in words: source, evaluation schedule, seeds, metric, units, notes; where
    the user's `changes` (--set items, `label.field=value`) changed the evaluation schedule,
    the evaluation line says so and how."""
    intervals = {part.name: preset.evaluation_every(part, scale) for part in preset.parts}
    every = scaled_steps(preset.evaluation_every_steps, scale)
    others = ", ".join(f"{name} every {steps:,}" for name, steps in intervals.items()
                       if steps != every)
    every_text = f"{every:,} executor steps" + (f" ({others})" if others else "")
    changed = [change for change in changes
               if change.partition("=")[0].rpartition(".")[2] in EVALUATION_FIELDS]
    changed_note = f" (the preset's; changed by --set: {', '.join(changed)})" if changed else ""
    lines = [f"Source: {preset.source}.",
             f"Evaluation: every {every_text}, {preset.evaluation_episodes} greedy "
             f"episodes on fixed seeds{changed_note}. Seeds: {seeds}. Metric: {preset.metric}.",
             f"Units: {preset.units}."]
    return lines + ([f"Notes: {preset.notes}"] if preset.notes else [])


def evaluation_steps(preset: Preset, steps: int, every: int, episodes: int) -> int:
    """The most evaluation steps one run of `steps` executor steps plays: a round of `episodes`
    at step 0, at every multiple of `every` and at the limit, and the final evaluation of
    `grid.FINAL_EVALUATION_FACTOR` x `episodes`; episodes of `preset.episode_steps`."""
    rounds = steps // every + 1 + (steps % every > 0)
    return (rounds + grid_lib.FINAL_EVALUATION_FACTOR) * episodes * preset.episode_steps


def describe(preset: Preset, scale: float = 1.0, seeds: Optional[int] = None,
             steps_per_s: float = DEFAULT_STEPS_PER_S, parallel: int = 1) -> str:
    """What `--dry_run` prints: the preset's grid, its protocol and its estimated hours."""
    seeds = preset.seeds if seeds is None else seeds
    lines = [scale_line(preset, scale), *protocol_lines(preset, scale, seeds)]
    total_runs, total_steps, total_evaluation = 0, 0, 0
    for part in preset.parts:
        steps = scaled_steps(part.max_executor_steps, scale)
        evaluation = evaluation_steps(preset, steps, preset.evaluation_every(part, scale),
                                      preset.evaluation_episodes)
        runs = len(part.systems) * len(part.environments) * seeds
        total_runs += runs
        total_steps += runs * steps
        total_evaluation += runs * evaluation
        lines += ["", f"Part {part.name} (in <out>/{part.name}): {runs} runs of {steps:,} "
                      f"executor steps, and up to {evaluation:,} evaluation steps each",
                  f"  systems: {', '.join(part.systems)}",
                  f"  tasks: {', '.join(part.environments)}"]
        settings = part_flags(preset, part, scale, seeds)["overrides"]
        lines.append(f"  settings: {' '.join(settings)}")
        for environment, figures in part.published.items():
            for label, figure in figures.items():
                lines.append(f"  published: {label} on {environment}: {figure.value:g} "
                             f"({figure.units}; {figure.source})")
    hours = (total_steps + total_evaluation) / (steps_per_s * parallel) / 3600.0
    lines += ["", f"In all: {total_runs} runs, {total_steps:,} executor steps and up to "
                  f"{total_evaluation:,} evaluation steps (episodes of at most "
                  f"{preset.episode_steps} steps; a final evaluation of "
                  f"{grid_lib.FINAL_EVALUATION_FACTOR} x {preset.evaluation_episodes} episodes "
                  f"per run); about {hours:,.1f} hours at {steps_per_s:g} steps/s per run, "
                  f"{parallel} run(s) at a time (--steps_per_s; {DEFAULT_STEPS_PER_S:g} is this "
                  "project's LBF/RWARE runs on a shared 2-core machine, docs/benchmarks.md). "
                  "Under --scale the evaluations keep their number and episodes, so they take "
                  "a larger share: fewer episodes with --set LABEL.evaluation_episodes=N."]
    return "\n".join(lines)


def save(out: str, preset: Preset, scale: float, seeds: Optional[int],
         changes: Sequence[str] = ()) -> None:
    """Records in `out` which preset (narrowed to which entries and tasks) at which scale its
    parts run, and the user's `changes` to its settings (--set items).

    Raises:
      ValueError: if `out` holds another preset, scale, seed count or changes (nothing is
        changed then).
    """
    record = {"preset": preset.name, "scale": scale,
              "seeds": preset.seeds if seeds is None else seeds, "changes": list(changes),
              **_only_record(preset)}
    saved = read(out)
    if saved is not None and saved != record:
        raise ValueError(f"{out} holds the preset run {saved}, not {record}; use another --out "
                         "or --start_fresh to move it aside")
    if saved is None and os.path.isdir(out) and os.listdir(out):
        raise ValueError(f"{out} is not empty and holds no preset run ({PRESET_FILE}); use "
                         "another --out, or --start_fresh to move it aside")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"--out {out} is a file, not a directory; use another --out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, PRESET_FILE), "w") as preset_file:
        json.dump(record, preset_file, indent=2)


def read(out: str) -> Optional[Dict[str, Any]]:
    """The preset record of `out` (see `save`), or None if it holds no preset run."""
    path = os.path.join(out, PRESET_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as preset_file:
            return json.load(preset_file)
    except ValueError as error:
        raise ValueError(f"{path} is damaged ({error}); restore it to use the preset run") from None


def published_table(preset: Preset, part_reports: Mapping[str, Mapping[str, Any]],
                    mark: str = "") -> List[str]:
    """Markdown rows putting each published figure beside our maximum and final returns
    (`part_reports`: part name -> its report.json; `mark` follows each of our intervals, e.g.
    the seed count when it is small)."""
    lines = ["| Task | Entry | our maximum return | our final return | published | units | "
             "source |", "|---|---|---|---|---|---|---|"]
    for part in preset.parts:
        numbers = part_reports.get(part.name, {})
        for environment, figures in part.published.items():
            for label, figure in figures.items():
                paper = numbers.get("paper", {}).get(environment, {}).get(label, {})
                ours = ["{:.3f} [{:.3f}, {:.3f}]".format(*paper[key]) + mark if key in paper
                        else "n/a" for key in ("maximum", "final")]
                lines.append(f"| {environment} | {label} | {ours[0]} | {ours[1]} | "
                             f"{figure.value:g} | {figure.units} | {figure.source} |")
    return lines if len(lines) > 2 else ["No published figure is encoded for this preset's "
                                         "tasks (see its notes)."]
