"""QMIX: MADQN trained through a monotonic mixing network conditioned on the global state."""

from typing import Any, Optional

from absl import logging

from mava_systems.qmix.builder import QMIXBuilder
from mava_systems.qmix.config import QMIXConfig
from mava_systems.vdn.networks import MixerFactory
from mava_systems.vdn.system import VDN


class QMIX(VDN):
    """VDN with a learnt mixer: the team Q is a monotonic function of the agents' Q-values whose
    weights hypernetworks make from the global state (see `QMixer`).

    The global state is the environment's `env_state` when it has one, stored
    in replay at both ends of each transition; otherwise the concatenation of
    all agents' observations (said once, at construction).
    """

    builder_class = QMIXBuilder
    system_name = "qmix"
    config_class = QMIXConfig

    def __init__(self, *args: Any, mixer_factory: Optional[MixerFactory] = None, **kwargs: Any):
        """MADQN's arguments (see `MADQN`: environment_factory, network_factory, num_executors,
        num_caches, max_executor_steps, config, exploration_schedules, run_dir), and:

        Args:
          *args: MADQN's arguments, in its order.
          mixer_factory: `factory(num_agents, state_spec)` returning a mixer, a
            module mapping agent Q-values [B, N] and states [B, *state shape] to
            the team Q [B] (None: QMIX's mixer sized by the config's
            `mixing_embed_dim` and `hypernet_hidden_size`).
          **kwargs: MADQN's arguments, by name.
        """
        self.mixer_factory = mixer_factory
        super().__init__(*args, **kwargs)

    def check_environment(self) -> None:
        """VDN's check (see `VDN.check_environment`); says once when the environment has no
        global state for the mixer (it then sees every agent's observation)."""
        super().check_environment()
        if "env_state" not in self.environment_spec.extras:
            logging.warning("%s: the environment has no global state; the mixer conditions on "
                            "the concatenation of all agents' observations",
                            type(self).__name__)
