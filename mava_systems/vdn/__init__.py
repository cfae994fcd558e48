"""VDN: value decomposition networks (team Q = sum of the agents' Q-values) as a MADQN subclass."""

from mava_systems.vdn.builder import VDNBuilder
from mava_systems.vdn.config import VDNConfig
from mava_systems.vdn.networks import MixerFactory, SumMixer, build_mixer, make_sum_mixer
from mava_systems.vdn.system import VDN
from mava_systems.vdn.training import AgentValues, RecurrentVDNTrainer, VDNTrainer
