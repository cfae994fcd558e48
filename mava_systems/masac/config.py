"""MASAC's and ISAC's hyper-parameters: MADDPG's, with SAC's defaults and the temperature's."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import bounded, redefault
from mava_systems.maddpg.config import MADDPGConfig


@dataclasses.dataclass
class MASACConfig(MADDPGConfig):
    """Every MASAC hyper-parameter: MADDPG's (SAC's usual defaults: Polyak averaging at 0.005,
    Adam at 3e-4, one-step targets, two layers of 256), the temperature's, and the exploration
    scale (the executors' noise scales multiply the policies' standard deviations: 1 samples
    from the policies, 0 acts with their means)."""

    n_step: int = bounded(1, 1, doc="Steps per n-step transition (the soft targets count the "
                                    "entropy of the last step only).")
    policy_learning_rate: float = bounded(3e-4, 0.0, low_inclusive=False,
                                          doc="Policies' Adam step size.")
    critic_learning_rate: float = bounded(3e-4, 0.0, low_inclusive=False,
                                          doc="Critics' Adam step size.")
    target_update_rate: Optional[float] = bounded(
        0.005, 0.0, 1.0, low_inclusive=False, optional=True,
        doc="Polyak averaging: target critics move this fraction towards the online critics "
            "every trainer step (None: copied every target_update_period steps).")
    policy_hidden_sizes: Tuple[int, ...] = redefault(MADDPGConfig, "policy_hidden_sizes",
                                                     (256, 256))
    critic_hidden_sizes: Tuple[int, ...] = redefault(MADDPGConfig, "critic_hidden_sizes",
                                                     (256, 256))
    noise_scale: float = bounded(1.0, 0.0, 1.0, doc="Largest executor's multiplier of the "
                                                    "policies' standard deviations.")
    min_noise_scale: float = bounded(1.0, 0.0, 1.0, low_inclusive=False,
                                     doc="Smallest executor's multiplier of the policies' "
                                         "standard deviations.")

    # The temperature (alpha) weighting each agent's policy entropy, tuned per network key.
    initial_temperature: float = bounded(1.0, 0.0, low_inclusive=False,
                                         doc="Every temperature's starting value.")
    temperature_learning_rate: float = bounded(3e-4, 0.0, low_inclusive=False,
                                               doc="The temperatures' Adam step size.")
    target_entropy: Optional[float] = bounded(
        None, optional=True, doc="The entropy each agent's policy is tuned towards (None: "
                                 "minus the agent's action dimensions).")


@dataclasses.dataclass
class ISACConfig(MASACConfig):
    """MASAC's hyper-parameters with decentralised critics (each agent's own observation and
    action), which ISAC requires."""

    critic: str = redefault(MASACConfig, "critic", "decentralised")

    def __post_init__(self):
        super().__post_init__()
        if self.critic != "decentralised":
            raise ValueError(f"ISACConfig.critic must be 'decentralised' (independent learners), "
                             f"got {self.critic!r}; use MASAC for a {self.critic!r} critic")
