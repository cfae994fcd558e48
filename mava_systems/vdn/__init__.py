"""VDN: value decomposition networks (team Q = sum of the agents' Q-values) as a MADQN subclass."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["VDNBuilder"],
    "config": ["VDNConfig"],
    "networks": ["MixerFactory", "SumMixer", "build_mixer", "make_sum_mixer"],
    "system": ["VDN"],
    "training": ["AgentValues", "RecurrentVDNTrainer", "VDNTrainer"],
})
