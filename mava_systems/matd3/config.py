"""MATD3's hyper-parameters: MADDPG's and TD3's own three."""

import dataclasses

from mava_systems.config import bounded
from mava_systems.maddpg.config import MADDPGConfig


@dataclasses.dataclass
class MATD3Config(MADDPGConfig):
    """Every MATD3 hyper-parameter: MADDPG's, the policy delay and the target smoothing noise
    (TD3's defaults: a policy and target update every 2 critic updates, noise 0.2 clipped at 0.5,
    as fractions of half the action range)."""

    policy_delay: int = bounded(2, 1, doc="Critic updates per policy and target update.")
    target_noise: float = bounded(0.2, 0.0, doc="Standard deviation of the Gaussian noise added "
                                                "to the target policies' actions (a fraction of "
                                                "half the action range).")
    target_noise_clip: float = bounded(0.5, 0.0, doc="The target noise is clipped to +- this "
                                                     "(a fraction of half the action range).")
