"""MADDPG and MAD4PG hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import (MultiAgentConfig, UniformReplayConfig, bounded, check_sizes,
                                 check_support, documented, sizes_doc)

# What each agent's critic sees besides its own index (see `maddpg.networks.CriticInputs`).
CRITIC_ARCHITECTURES = ("decentralised", "centralised", "state")
MADDPG_JIT_COMPILE_DOC = (
    "Compile the trainer's step with XLA (on by default here: 1.06 (MADDPG) and 1.32 (MAD4PG) "
    "times the trainer steps/s on CPU with the default networks, docs/benchmarks.md); false "
    "keeps TensorFlow's own graph, e.g. for a network XLA cannot compile.")


@dataclasses.dataclass
class MADDPGConfig(MultiAgentConfig, UniformReplayConfig):
    """Every MADDPG hyper-parameter, with its allowed range: the off-policy actor-critic family's
    config (what every multi-agent system shares from `MultiAgentConfig`, the uniform replay's
    fields from `UniformReplayConfig`)."""

    critic: str = documented(
        "centralised", "The critic's inputs besides the agent's index: decentralised (the "
                       "agent's own observation and action), centralised (every agent's "
                       "observation and action, in the environment's agent order) or state "
                       "(the environment's global state and every agent's action).")

    # Learning.
    n_step: int = bounded(5, 1, doc="Steps per n-step transition.")
    batch_size: int = bounded(256, 1, doc="Transitions per trainer step.")
    policy_learning_rate: float = bounded(1e-4, 0.0, low_inclusive=False,
                                          doc="Policies' Adam step size.")
    critic_learning_rate: float = bounded(1e-4, 0.0, low_inclusive=False,
                                          doc="Critics' Adam step size.")
    max_gradient_norm: float = bounded(40.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping of the policies and "
                                           "of the critics.")
    target_update_period: int = bounded(
        100, 1, doc="Trainer steps between target network copies (without target_update_rate).")
    target_update_rate: Optional[float] = bounded(
        None, 0.0, 1.0, low_inclusive=False, optional=True,
        doc="Polyak averaging: targets move this fraction towards the online networks every "
            "trainer step (None: copied every target_update_period steps).")
    policy_hidden_sizes: Tuple[int, ...] = documented((256, 256, 256),
                                                      sizes_doc("each agent's policy"))
    critic_hidden_sizes: Tuple[int, ...] = documented((512, 512, 256),
                                                      sizes_doc("each agent's critic"))
    jit_compile: bool = documented(True, MADDPG_JIT_COMPILE_DOC)

    # Exploration: Gaussian noise on the policy's action, as a fraction of half the action
    # range, then clipped to the bounds. Executors' noise scales spread log-uniformly from
    # min_noise_scale (executor 0) to noise_scale (the last; a single executor uses it).
    noise_scale: float = bounded(0.3, 0.0, 1.0, doc="Largest executor's exploration noise scale.")
    min_noise_scale: float = bounded(0.05, 0.0, 1.0, low_inclusive=False,
                                     doc="Smallest executor's exploration noise scale.")

    def __post_init__(self):
        super().__post_init__()
        if self.critic not in CRITIC_ARCHITECTURES:
            raise ValueError(f"{type(self).__name__}.critic must be one of "
                             f"{CRITIC_ARCHITECTURES}, got {self.critic!r}")
        if self.min_noise_scale > self.noise_scale > 0.0:
            raise ValueError(f"{type(self).__name__}.min_noise_scale ({self.min_noise_scale}) "
                             f"must not exceed noise_scale ({self.noise_scale})")
        check_sizes(self, "policy_hidden_sizes")
        check_sizes(self, "critic_hidden_sizes")


@dataclasses.dataclass
class MAD4PGConfig(MADDPGConfig):
    """Every MAD4PG hyper-parameter: MADDPG's, and the categorical critic's support."""

    vmin: float = bounded(-150.0, doc="Lowest value of the critics' support.")
    vmax: float = bounded(150.0, doc="Highest value of the critics' support.")
    num_atoms: int = bounded(51, 2, doc="Atoms of the critics' distributions.")

    def __post_init__(self):
        super().__post_init__()
        check_support(self)
