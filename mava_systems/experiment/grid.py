"""An experiment grid: which systems (entries), environments and seeds, and where each run lives.

An entry is a registered system under a label, with its own config overrides:
`--systems=madqn,madqn_lr3=madqn --set madqn_lr3.learning_rate=3e-3` makes two
entries of MADQN that differ in their learning rate. Every (entry, environment,
seed) is one ordinary run directory, `<out>/runs/<family>/<task>/<label>/seed_<k>`.
The grid's settings are saved as `<out>/experiment.json`: a later command on
the same `--out` must ask for the same grid (or move it aside with `--start_fresh`).
"""

import dataclasses
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mava_systems import registry
from mava_systems.acting import exploration
import wrappers

SETTINGS_FILE = "experiment.json"
RUNS_DIR = "runs"
# A finished run's final evaluation plays this many times the episodes of an evaluator round
# (as marl-eval's absolute metrics, Gorsane et al. 2022).
FINAL_EVALUATION_FACTOR = 10
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Set by the grid for each run, so not settable with --set.
GRID_FIELDS = ("seed",)
# Settable with --set besides config fields, for systems that explore by schedule: the
# examples' --exploration flag (e.g. `--set qmix.exploration=linear:1,0.05,200000`).
EXPLORATION_SETTING = "exploration"
# experiment.json's record of the researcher's modules, by kind, and each kind's flag. They say
# where the grid's systems and environments are defined, not what the results are: a later
# command may leave them out (the saved ones are imported) or add some.
MODULES_KEY = "modules"
MODULE_KINDS = {"environments": "env_module", "systems": "system_module"}
# experiment.json's record of the preset (and its scale) a grid is a part of.
PRESET_KEY = "preset"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One compared configuration: a label (its name in reports) and the registered system it runs."""

    label: str
    system: str


@dataclasses.dataclass(frozen=True)
class Run:
    """One (entry, environment, seed) of a grid and its run directory."""

    entry: Entry
    environment: str
    seed: int
    run_dir: str

    @property
    def name(self) -> str:
        """`<label> <environment> seed <k>`, as progress lines show it."""
        return f"{self.entry.label} {self.environment} seed {self.seed}"


def split_environment(name: str) -> Tuple[str, str]:
    """`("mpe", "simple_spread_v3")` for "mpe/simple_spread_v3": marl-eval's environment and task."""
    family, _, task = name.partition("/")
    return family, task


def parse_entries(text: str) -> List[Entry]:
    """Entries from `--systems`: comma-separated `system` or `label=system` items.

    Raises:
      ValueError: on an unknown system (listing the available ones), a bad or repeated label.
    """
    entries = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        label, _, system = item.rpartition("=")
        label = label or system
        registry.system_class(system)  # ValueError listing the available systems.
        if not _LABEL.match(label):
            raise ValueError(f"bad label {label!r} in --systems: use letters, digits, '_', "
                             "'-' and '.'")
        if label in {entry.label for entry in entries}:
            raise ValueError(f"label {label!r} appears twice in --systems; give one of them "
                             "another label (label=system)")
        entries.append(Entry(label, system))
    if not entries:
        raise ValueError("--systems names no system; available: "
                         f"{', '.join(registry.system_names())}")
    return entries


def parse_environments(text: str) -> List[str]:
    """Environment names from `--envs` (comma-separated), each checked to exist.

    Raises:
      ValueError: naming an unknown environment and the available ones, or a repeated one.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ValueError("--envs names no environment")
    for name in names:
        wrappers.make_environment_factory(name)  # ValueError listing the available names.
    if len(set(names)) != len(names):
        raise ValueError(f"--envs repeats an environment: {names}")
    return names


def _convert(field: dataclasses.Field, text: str) -> Any:
    default = field.default
    if isinstance(default, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() in ("true", "1")
    if isinstance(default, tuple):
        return tuple(int(item) for item in text.split(",") if item.strip())
    if text.lower() == "none":
        return None
    if isinstance(default, int) or field.metadata.get("integer"):
        return int(text)
    if isinstance(default, float) or default is None:
        return float(text)
    return text


def parse_overrides(settings: Sequence[str], entries: Sequence[Entry]) -> Dict[str, Dict[str, str]]:
    """`--set label.field=value` items as {label: {field: value}}, checked against the config class.

    Each entry's overridden config is built once here, so an unknown field or
    a value out of range is refused before anything starts.

    Raises:
      ValueError: naming the bad item.
    """
    by_label = {entry.label: entry for entry in entries}
    overrides: Dict[str, Dict[str, str]] = {entry.label: {} for entry in entries}
    for item in settings:
        target, equals, value = item.partition("=")
        label, dot, field_name = target.partition(".")
        if not equals or not dot:
            raise ValueError(f"--set {item!r}: expected label.field=value")
        if label not in by_label:
            raise ValueError(f"--set {item!r}: no entry labelled {label!r}; entries: "
                             f"{', '.join(by_label)}")
        if field_name in GRID_FIELDS:
            raise ValueError(f"--set {item!r}: {field_name} is set by the grid (--seeds)")
        overrides[label][field_name] = value
    for label, fields in overrides.items():
        system_class = registry.system_class(by_label[label].system)
        config_class = system_class.config_class
        known = {field.name: field for field in dataclasses.fields(config_class)}
        values = {}
        for name, text in fields.items():
            if name == EXPLORATION_SETTING and getattr(system_class, "explores_by_schedule", False):
                try:
                    exploration.parse_schedule(text)
                except ValueError as error:
                    raise ValueError(f"--set {label}.{name}={text}: {error}") from None
                continue
            if name not in known:
                raise ValueError(f"--set {label}.{name}: {config_class.__name__} has no field "
                                 f"{name!r}; fields: {', '.join(known)}")
            try:
                values[name] = _convert(known[name], text)
            except ValueError as error:
                raise ValueError(f"--set {label}.{name}={text}: {error}") from None
        config_class(**values)  # Range checks: ValueError naming the field.
    return overrides


@dataclasses.dataclass
class Grid:
    """Every run of an experiment and the settings that define it."""

    entries: List[Entry]
    environments: List[str]
    seeds: int
    max_executor_steps: int
    overrides: Dict[str, Dict[str, str]] = dataclasses.field(default_factory=dict)
    # The researcher's modules the runs import: {"systems": [...], "environments": [...]}
    # (see `MODULE_KINDS`), each a module name or a `.py` file's absolute path.
    modules: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
    # The published protocol this grid is part of (`experiment --preset`): {"name", "scale",
    # "part"}; None for a grid of flags.
    preset: Optional[Dict[str, Any]] = None

    def __post_init__(self):
        for name, value in (("seeds", self.seeds), ("max_executor_steps", self.max_executor_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name} must be an integer >= 1, got {value!r}")

    def settings(self) -> Dict[str, Any]:
        """What defines the grid's results: saved as experiment.json and compared on every launch."""
        return {"systems": {entry.label: entry.system for entry in self.entries},
                "environments": list(self.environments), "seeds": self.seeds,
                "max_executor_steps": self.max_executor_steps,
                "overrides": {label: dict(sorted(fields.items()))
                              for label, fields in self.overrides.items() if fields},
                **({MODULES_KEY: {kind: list(self.modules[kind]) for kind in MODULE_KINDS
                                  if self.modules.get(kind)}}
                   if any(self.modules.get(kind) for kind in MODULE_KINDS) else {}),
                **({PRESET_KEY: dict(self.preset)} if self.preset else {})}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "Grid":
        """The grid an experiment.json describes."""
        entries = [Entry(label, system) for label, system in settings["systems"].items()]
        overrides = {entry.label: dict(settings.get("overrides", {}).get(entry.label, {}))
                     for entry in entries}
        return cls(entries, list(settings["environments"]), settings["seeds"],
                   settings["max_executor_steps"], overrides,
                   {kind: list(paths) for kind, paths in settings.get(MODULES_KEY, {}).items()},
                   settings.get(PRESET_KEY))

    def module_flags(self) -> List[str]:
        """The flags that make a run import the grid's modules (`run_one`, the examples)."""
        return [f"--{MODULE_KINDS[kind]}={module}" for kind in MODULE_KINDS
                for module in self.modules.get(kind, [])]

    def runs(self, out: str) -> List[Run]:
        """Every run, seed by seed, then environment, then entry: a grid stopped part-way
        has compared every entry on the same seeds."""
        return [Run(entry, environment, seed,
                    os.path.join(os.path.abspath(out), RUNS_DIR, *split_environment(environment),
                                 entry.label, f"seed_{seed}"))
                for seed in range(self.seeds) for environment in self.environments
                for entry in self.entries]


def read_grid(out: str) -> Grid:
    """The grid saved in `out`.

    Raises:
      ValueError: if `out` holds no experiment.
    """
    path = os.path.join(out, SETTINGS_FILE)
    if not os.path.exists(path):
        raise ValueError(f"{out} holds no experiment ({SETTINGS_FILE} is missing)")
    settings = _read_settings(path)
    try:
        return Grid.from_settings(settings)
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path} is damaged ({type(error).__name__}: {error}); restore it "
                         "to use the experiment") from None


def _read_settings(path: str) -> Dict[str, Any]:
    """The JSON object a saved experiment.json holds.

    Raises:
      ValueError: naming the file, if it is not one (damaged).
    """
    try:
        with open(path) as settings_file:
            settings = json.load(settings_file)
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError.
        raise ValueError(f"{path} is damaged ({error}): it holds the experiment's settings. "
                         "Restore it, or use --start_fresh (the experiment is moved aside, "
                         "not deleted) or another --out; nothing was changed.") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path} is damaged (not a JSON object); restore it, or use "
                         "--start_fresh or another --out; nothing was changed.")
    return settings


def module_path(module: str) -> str:
    """A module as recorded: a `.py` file by its absolute path (found from any directory), a
    module name as it is."""
    return os.path.abspath(module) if module.endswith(".py") else module


def modules_to_import(out: str, flags: Mapping[str, Sequence[str]],
                      start_fresh: bool = False) -> Dict[str, List[str]]:
    """The modules a command on `out` imports, by kind: those the grid saved in `out` (none with
    `start_fresh`, which moves it aside), then those `flags` ({kind: modules}) add.

    Raises:
      ValueError: if the saved experiment.json is damaged.
    """
    path = os.path.join(out, SETTINGS_FILE)
    saved = (_read_settings(path).get(MODULES_KEY, {})
             if os.path.exists(path) and not start_fresh else {})
    return {kind: list(dict.fromkeys([*saved.get(kind, []),
                                      *(module_path(module) for module in flags.get(kind, []))]))
            for kind in MODULE_KINDS}


def import_modules(modules: Mapping[str, Sequence[str]]) -> None:
    """Imports the researcher's environment modules, then system modules (a file given as both
    is imported once).

    Raises:
      ValueError: naming a module that is missing, fails to import, or (a system module)
        defines no system.
    """
    for module in modules.get("environments", []):
        wrappers.import_registration(module)
    for module in modules.get("systems", []):
        registry.import_system_module(module)


def _results_settings(values: Mapping[str, Any]) -> Dict[str, Any]:
    """Settings without the record of modules: what must match between commands on one grid."""
    return {key: value for key, value in values.items() if key != MODULES_KEY}


def raises_the_budget(saved: Mapping[str, Any], settings: Mapping[str, Any]) -> bool:
    """Whether the grid `settings` describe is the saved one with a larger step budget."""
    def others(values: Mapping[str, Any]) -> Dict[str, Any]:
        return {key: value for key, value in _results_settings(values).items()
                if key != "max_executor_steps"}
    return (others(saved) == others(settings)
            and settings["max_executor_steps"] > saved.get("max_executor_steps", 0))


def prepare_out(grid: Grid, out: str, start_fresh: bool = False) -> Optional[str]:
    """Saves the grid's settings in `out`, or checks them against the saved ones.

    The same grid with a larger `max_executor_steps` is accepted (its runs then
    continue to the new budget: see `scheduling.run_grid`). With `start_fresh`,
    an existing `out` is first moved aside to `<out>.old-<n>` (never deleted);
    returns where it went (None if nothing moved).

    Raises:
      ValueError: if `out` holds a grid with other settings (nothing is changed then).
    """
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"--out {out} is a file, not a directory; use another --out")
    # pylint: disable=import-outside-toplevel  (it imports TensorFlow; the command line checks
    # its flags without)
    from mava_systems.runs.run_directory import move_aside
    moved_to = move_aside(os.path.abspath(out)) if start_fresh else None
    path = os.path.join(out, SETTINGS_FILE)
    settings = grid.settings()
    if os.path.exists(path):
        saved = _read_settings(path)
        if (_results_settings(saved) != _results_settings(settings)
                and not raises_the_budget(saved, settings)):
            differences = "; ".join(f"{key}: saved {saved.get(key)!r}, now {settings.get(key)!r}"
                                    for key in sorted(set(_results_settings(saved))
                                                      | set(_results_settings(settings)))
                                    if saved.get(key) != settings.get(key))
            raise ValueError(f"{out} holds an experiment with other settings ({differences}). "
                             "Use another --out, or --start_fresh to move it aside (a larger "
                             "--max_executor_steps alone continues the grid); it was left "
                             "untouched.")
    elif os.path.isdir(out) and os.listdir(out):
        raise ValueError(f"{out} is not empty and holds no experiment ({SETTINGS_FILE}); use "
                         "another --out, or --start_fresh to move it aside")
    try:
        os.makedirs(out, exist_ok=True)
        with open(path + ".tmp", "w") as settings_file:
            json.dump(settings, settings_file, indent=2)
        os.replace(path + ".tmp", path)
    except OSError as error:
        raise ValueError(f"cannot write the experiment to --out {out}: "
                         f"{error.strerror or error}; use another --out") from None
    return moved_to
