"""DMPO: distributional maximum a posteriori policy optimisation, on the shared components."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["DMPOBuilder"],
    "config": ["DMPOConfig"],
    "execution": ["DMPOExecutor"],
    "networks": ["DMPONetworks", "make_default_networks", "make_networks"],
    "system": ["DMPO"],
    "training": ["DMPOTrainer"],
})
