"""The documented settings of each environment family, per system: one set of defaults for
`python -m mava_systems.train`, the examples and experiment grids.

A run's configuration is its system's config defaults, then the settings of its environment
family for that system (here), then its command line. Each entry says why it differs from the
config's default and where that was measured. Importing this module imports nothing heavy.
"""

import dataclasses
import types
from typing import Any, Dict, Mapping, Optional, Sequence

# Stands for every system of a family that has no entry of its own.
ANY_SYSTEM = "*"


@dataclasses.dataclass(frozen=True)
class FamilySettings:
    """What an environment family sets for one system: config field values, the exploration
    schedule of systems that explore by one (`--exploration`'s format; empty: the system's
    own), and the environments' constructor arguments."""

    family: str = ""
    system: str = ""
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    exploration: str = ""
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "config", types.MappingProxyType(dict(self.config)))
        object.__setattr__(self, "env_kwargs", types.MappingProxyType(dict(self.env_kwargs)))

    @property
    def source(self) -> str:
        """How headers name these settings, e.g. "family setting (lbf, qmix)"."""
        system = "every system" if self.system == ANY_SYSTEM else self.system
        return f"family setting ({self.family}, {system})"

    def for_fields(self, fields: Sequence[str]) -> "FamilySettings":
        """These settings keeping only the config fields in `fields` (a family-wide entry
        applies to the fields a system's config has)."""
        return dataclasses.replace(
            self, config={name: value for name, value in self.config.items() if name in fields})


# LBF. The agents share one network; their one-hot IDs (EPyMARL's default) let it act
# differently per agent. Epsilon is annealed from 1 to 0.05 over each executor's first 200k steps
# (PyMARL and EPyMARL anneal linearly too): on Foraging-8x8-2p-2f-coop-v3 it took QMIX's final
# greedy return over 1M steps from 0.80 (one seed, the systems' constant per-executor epsilons)
# to 0.94 (median of 3 seeds); see docs/benchmarks.md.
_LBF_VALUE_BASED = FamilySettings(config={"agent_ids": True}, exploration="linear:1,0.05,200000")
# VDN's own on LBF: Adam's step size 3e-4 instead of the systems' 1e-3 took VDN's final greedy
# return on Foraging-8x8-2p-2f-coop-v3 (1M steps, the schedule above) from 0.82/0.64/0.95 to
# 0.95/0.94/0.93 (3 seeds, 100 episodes each); see docs/benchmarks.md.
_LBF_VDN = dataclasses.replace(_LBF_VALUE_BASED,
                               config={**_LBF_VALUE_BASED.config, "learning_rate": 3e-4})

# MPE's rewards are dense and its episodes short (25 steps): a discount of 0.9 values the next
# ~10 steps and keeps Q-values small; with 0.99 MADQN's greedy return on simple_spread plateaus
# around -56 (see docs/benchmarks.md). Agent IDs let agents that share a network take different
# landmarks.
_MPE_VALUE_BASED = {"discount": 0.9, "agent_ids": True}
# QMIX's own on MPE: MPE's states (positions) have no bound, and hypernetworks reading them raw
# extrapolate the team Q far too high on states where agents drift off, so the mixer's state is
# layer-normalised; with a smaller step size, a slower target and 3-step returns, QMIX reached
# -55.9 and -55.7 at 100k steps (2 seeds) on simple_spread (-67.9 and -73.5 without the
# normalisation, -80.7 with MADQN's settings; see docs/benchmarks.md).
_MPE_QMIX = {**_MPE_VALUE_BASED, "normalise_mixer_states": True, "learning_rate": 5e-4,
             "target_update_period": 200, "n_step": 3}
# MADDPG on MPE: the same discount, for the same reason, and MPE's continuous actions.
_MPE_MADDPG = FamilySettings(config={"discount": 0.9}, env_kwargs={"continuous_actions": True})

# MaMuJoCo: each agent moves different joints of one body (and Humanoid-9|8's two agents differ
# in their observation and action sizes, which a shared network cannot take), so every agent has
# its own networks, as in HARL's MuJoCo runs. Agents' IDs are then not needed to tell them apart.
_MAMUJOCO = FamilySettings(config={"shared_weights": False, "agent_ids": False})

_SETTINGS: Dict[tuple, FamilySettings] = {
    ("lbf", "madqn"): _LBF_VALUE_BASED,
    ("lbf", "qmix"): _LBF_VALUE_BASED,
    ("lbf", "vdn"): _LBF_VDN,
    # RWARE: the same shared network told apart by agent IDs as on LBF.
    ("rware", "qmix"): FamilySettings(config={"agent_ids": True}),
    ("mpe", "madqn"): FamilySettings(config=_MPE_VALUE_BASED),
    ("mpe", "vdn"): FamilySettings(config=_MPE_VALUE_BASED),
    ("mpe", "qmix"): FamilySettings(config=_MPE_QMIX),
    ("mpe", "maddpg"): _MPE_MADDPG,
    ("mamujoco", ANY_SYSTEM): _MAMUJOCO,
}
SETTINGS: Mapping[tuple, FamilySettings] = types.MappingProxyType({
    (family, system): dataclasses.replace(settings, family=family, system=system)
    for (family, system), settings in _SETTINGS.items()})


def family_of(env: str) -> str:
    """The family of environment name `env`, e.g. "mpe" for "mpe/simple_spread_v3"."""
    return env.partition("/")[0]


def settings_for(env: str, system: str,
                 config_fields: Optional[Sequence[str]] = None) -> FamilySettings:
    """The settings of `env`'s family for the system registered as `system` (its own entry,
    else the family's entry for every system, else none). With `config_fields`, only the
    fields a family-wide entry sets that the system's config has."""
    family = family_of(env)
    settings = SETTINGS.get((family, system))
    if settings is None:
        settings = SETTINGS.get((family, ANY_SYSTEM))
        if settings is not None and config_fields is not None:
            settings = settings.for_fields(config_fields)
    return settings or FamilySettings(family=family, system=system)


def describe_sources(config_name: str, values_by_source: Mapping[str, Mapping[str, Any]]) -> str:
    """One header line saying where a run's settings come from: `config_name`'s defaults except
    the values of each source (e.g. {"command line": {"n_step": 5}}), sources without values
    left out."""
    parts = [f"{source}: " + ", ".join(f"{name}={value}" for name, value in values.items())
             for source, values in values_by_source.items() if values]
    return (f"Settings: {config_name}'s defaults" + (", except " + "; ".join(parts) if parts
                                                     else ""))
