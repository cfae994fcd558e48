"""DQN: the single-agent specialisation of MADQN."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "config": ["DQNConfig"],
    "system": ["DQN"],
})
