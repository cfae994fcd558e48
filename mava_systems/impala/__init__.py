"""IMPALA: importance-weighted actor-learner with V-trace, on the shared components."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["IMPALABuilder"],
    "config": ["IMPALAConfig"],
    "execution": ["IMPALAExecutor"],
    "networks": ["IMPALANetworks", "make_mlp_actor_critic", "make_networks"],
    "system": ["IMPALA"],
    "training": ["IMPALATrainer"],
})
