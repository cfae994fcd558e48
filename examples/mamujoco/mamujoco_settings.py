"""What the Multi-Agent MuJoCo examples share (their family's settings are in
`mava_systems.family_settings`, which every entry point applies)."""

from mava_systems import family_settings

# The family's settings for every system (each agent has its own networks; see there why).
CONFIG_DEFAULTS = dict(family_settings.SETTINGS[("mamujoco", family_settings.ANY_SYSTEM)].config)
DEFAULT_ENV = "mamujoco/HalfCheetah-2x3"
