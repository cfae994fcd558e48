"""QMIX: monotonic value decomposition conditioned on the global state, as a VDN (MADQN) subclass."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["QMIXBuilder"],
    "config": ["QMIXConfig"],
    "networks": ["QMixer", "make_qmix_mixer", "qmix_mixer_factory"],
    "system": ["QMIX"],
})
