"""MAPPO and IPPO: multi-agent PPO with a centralised or decentralised critic."""

from mava_systems.lazy import lazy_exports

# Imported when first read (see `mava_systems.lazy`): the config without TensorFlow.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builder": ["MAPPOBuilder"],
    "config": ["MAPPOConfig"],
    "execution": ["MAPPOExecutor", "RecurrentMAPPOExecutor"],
    "networks": ["MAPPONetworks", "make_mlp_networks", "make_networks", "make_recurrent_networks"],
    "system": ["IPPO", "MAPPO"],
    "training": ["MAPPOTrainer", "RecurrentMAPPOTrainer", "generalized_advantages"],
})
