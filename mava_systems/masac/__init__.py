"""MASAC and ISAC: multi-agent soft actor-critic (squashed Gaussian policies, twin soft Q critics,
temperatures tuned to a target entropy), centralised or independent critics."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["MASACBuilder"],
    "config": ["ISACConfig", "MASACConfig"],
    "execution": ["MASACExecutor"],
    "networks": ["SquashedGaussianPolicy", "make_sac_networks", "squashed_log_prob"],
    "system": ["ISAC", "MASAC"],
    "training": ["MASACTrainer"],
})
