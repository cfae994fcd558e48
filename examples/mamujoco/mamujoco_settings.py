"""What the Multi-Agent MuJoCo examples share."""

# Each agent moves different joints of one body (and Humanoid-9|8's two agents differ in their
# observation and action sizes, which a shared network cannot take), so every agent has its own
# networks, as in HARL's MuJoCo runs. Agents' IDs are then not needed to tell them apart.
CONFIG_DEFAULTS = {"shared_weights": False, "agent_ids": False}
DEFAULT_ENV = "mamujoco/HalfCheetah-2x3"
