"""MATD3: MADDPG with TD3's twin critics, target policy smoothing and delayed policy updates."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["MATD3Builder"],
    "config": ["MATD3Config"],
    "networks": ["TwinCritic", "make_twin_networks"],
    "system": ["MATD3"],
    "training": ["MATD3Trainer"],
})
