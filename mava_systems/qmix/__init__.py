"""QMIX: monotonic value decomposition conditioned on the global state, as a VDN (MADQN) subclass."""

from mava_systems.qmix.builder import QMIXBuilder
from mava_systems.qmix.config import QMIXConfig
from mava_systems.qmix.networks import QMixer, make_qmix_mixer, qmix_mixer_factory
from mava_systems.qmix.system import QMIX
