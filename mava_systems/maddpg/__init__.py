"""MADDPG and MAD4PG: multi-agent deterministic policy gradients (MAD4PG: distributional critics)."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["MAD4PGBuilder", "MADDPGBuilder"],
    "config": ["MAD4PGConfig", "MADDPGConfig"],
    "execution": ["MADDPGExecutor"],
    "networks": ["CriticInputs", "MADDPGNetworks", "make_default_networks",
             "make_distributional_networks", "make_networks"],
    "system": ["MAD4PG", "MADDPG"],
    "training": ["MAD4PGTrainer", "MADDPGTrainer"],
})
