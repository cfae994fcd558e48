"""HAPPO: heterogeneous-agent PPO (one policy per agent, updated one after another)."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["HAPPOBuilder"],
    "config": ["HAPPOConfig"],
    "execution": ["RecurrentHAPPOExecutor"],
    "system": ["HAPPO"],
    "training": ["TEAM", "HAPPOTrainer", "RecurrentHAPPOTrainer"],
})
