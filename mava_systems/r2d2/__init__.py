"""R2D2: recurrent replay distributed DQN, on the shared components."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["R2D2Builder"],
    "config": ["R2D2Config"],
    "execution": ["R2D2Executor"],
    "networks": ["R2D2Networks", "RecurrentQNetwork", "make_networks"],
    "system": ["R2D2"],
    "training": ["R2D2Trainer"],
})
