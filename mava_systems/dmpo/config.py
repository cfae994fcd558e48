"""DMPO hyper-parameters, validated on construction."""

import dataclasses
from typing import Optional, Tuple

from mava_systems.config import (SHARED_WEIGHTS_DOC, UniformReplayConfig, bounded, check_sizes,
                                 check_support, documented, sizes_doc)


@dataclasses.dataclass
class DMPOConfig(UniformReplayConfig):
    """Every DMPO hyper-parameter, with its allowed range."""

    # Learning.
    discount: float = bounded(0.99, 0.0, 1.0, doc="Discount per environment step.")
    n_step: int = bounded(5, 1, doc="Steps per n-step transition.")
    batch_size: int = bounded(256, 1, doc="Transitions per learner step.")
    policy_learning_rate: float = bounded(1e-4, 0.0, low_inclusive=False, doc="Policy Adam step size.")
    critic_learning_rate: float = bounded(1e-4, 0.0, low_inclusive=False, doc="Critic Adam step size.")
    dual_learning_rate: float = bounded(1e-2, 0.0, low_inclusive=False,
                                        doc="Adam step size of MPO's temperature and KL multipliers.")
    max_gradient_norm: float = bounded(40.0, 0.0, low_inclusive=False,
                                       doc="Global-norm gradient clipping of policy and critic.")
    num_samples: int = bounded(20, 1, doc="Actions sampled per next state for the E-step.")
    epsilon: float = bounded(0.1, 0.0, low_inclusive=False, doc="KL bound of the E-step.")
    epsilon_mean: float = bounded(1e-3, 0.0, low_inclusive=False,
                                  doc="KL bound on the policy mean in the M-step.")
    epsilon_stddev: float = bounded(1e-6, 0.0, low_inclusive=False,
                                    doc="KL bound on the policy standard deviation in the M-step.")
    target_policy_update_period: int = bounded(100, 1, doc="Learner steps between policy target copies.")
    target_critic_update_period: int = bounded(100, 1, doc="Learner steps between critic target copies.")
    vmin: float = bounded(-150.0, doc="Lowest value of the critic's support.")
    vmax: float = bounded(150.0, doc="Highest value of the critic's support.")
    num_atoms: int = bounded(51, 2, doc="Atoms of the critic's distribution.")
    init_scale: float = bounded(0.7, 0.0, low_inclusive=False,
                                doc="Initial standard deviation of the policy.")
    shared_weights: bool = documented(True, SHARED_WEIGHTS_DOC)
    policy_hidden_sizes: Tuple[int, ...] = documented((256, 256), sizes_doc("the policy"))
    critic_hidden_sizes: Tuple[int, ...] = documented((256, 256), sizes_doc("the critic"))

    # Replay: uniform (see `UniformReplayConfig`), with two sampling streams.
    dataset_parallel_calls: int = bounded(2, 1, doc="Parallel Reverb sampling streams.")

    # Acting and evaluation.
    variable_update_period: int = bounded(100, 1, doc="Actor steps between variable fetches.")
    evaluation_episodes: Optional[int] = bounded(
        None, 1, optional=True, integer=True,
        doc="Evaluation episodes (policy mean) per round (none: the schedule's default, see "
            "RunConfig).")

    def __post_init__(self):
        super().__post_init__()
        check_support(self)
        check_sizes(self, "policy_hidden_sizes")
        check_sizes(self, "critic_hidden_sizes")
