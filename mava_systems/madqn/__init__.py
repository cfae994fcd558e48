"""MADQN: multi-agent deep Q-networks."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["MADQNBuilder"],
    "config": ["MADQNConfig"],
    "execution": ["MADQNExecutor", "RecurrentMADQNExecutor"],
    "networks": ["MADQNNetworks", "RecurrentQNetwork", "make_mlp_q_network", "make_networks",
             "make_recurrent_q_network"],
    "system": ["MADQN"],
    "training": ["MADQNTrainer", "RecurrentMADQNTrainer", "SequenceLearning"],
})
