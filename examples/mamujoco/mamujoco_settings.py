"""What the Multi-Agent MuJoCo examples share (their family's settings, each agent with its own
networks, are in `mava_systems.family_settings`, which every entry point applies)."""

DEFAULT_ENV = "mamujoco/HalfCheetah-2x3"
