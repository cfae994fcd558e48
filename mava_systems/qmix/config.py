"""QMIX hyper-parameters: VDN's, plus the size of the mixing network."""

import dataclasses

from mava_systems.config import bounded, documented
from mava_systems.vdn.config import VDNConfig


@dataclasses.dataclass
class QMIXConfig(VDNConfig):
    """Every QMIX hyper-parameter: VDN's (so MADQN's), and the mixer's sizes."""

    mixing_embed_dim: int = bounded(32, 1, doc="Width of the mixing network's hidden layer.")
    hypernet_hidden_size: int = bounded(64, 1, doc="Hidden units of each hypernetwork.")
    normalise_mixer_states: bool = documented(
        False, "Layer-normalise the global state before the hypernetworks read it (keeps the "
               "mixing weights bounded on unbounded states such as MPE's positions).")
