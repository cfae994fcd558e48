"""VDN: value decomposition networks, MADQN trained through the sum of the agents' Q-values."""

from typing import Any, Dict, List, Optional

from mava_systems.madqn.networks import QNetworkFactory
from mava_systems.madqn.system import MADQN
from mava_systems.vdn.builder import VDNBuilder
from mava_systems.vdn.config import VDNConfig
from mava_systems.vdn.networks import MixerFactory, module_variables


class VDN(MADQN):
    """MADQN whose agents learn one team value: the team Q is the sum of the agents' Q-values.

    Execution is MADQN's (each agent acts greedily on its own Q-network and
    observation); the trainer alone holds the mixer and fits the team Q to the
    team's n-step return with one loss per step (see `VDNTrainer`). Takes
    MADQN's arguments; the config is a `VDNConfig`.
    """

    builder_class = VDNBuilder
    system_name = "vdn"
    config_class = VDNConfig
    # The mixer's variable shapes too: a run cannot resume with another mixer.
    identity_keys = MADQN.identity_keys + ["mixer_variables"]
    # The builder's `mixer_factory` (None: its default); QMIX takes one as an argument.
    mixer_factory: Optional[MixerFactory] = None

    def check_environment(self) -> None:
        """Refuses an environment of fewer than two agents (there is nothing to mix)."""
        agents = self.environment_spec.agents
        if len(agents) < 2:
            raise ValueError(f"{type(self).__name__} mixes the values of several agents, but the "
                             f"environment has {len(agents)}: {agents}; use MADQN or DQN")

    def builder_arguments(self) -> Dict[str, Any]:
        """The mixer factory (None: the builder's default)."""
        return {"mixer_factory": self.mixer_factory}

    def make_builder(self, agent_networks: Dict[str, str],
                     network_factory: QNetworkFactory) -> VDNBuilder:
        """The builder (see `MultiAgentSystem.make_builder`), its mixer checked.

        Raises:
          ValueError: if the mixer is not a mixer (see `build_mixer`).
        """
        builder = super().make_builder(agent_networks, network_factory)
        builder.make_mixer()  # Fails here, not in the trainer, on a bad mixer.
        return builder

    def mixer_variables(self) -> List[List[int]]:
        """The shape of each of the mixer's variables (recorded in run.json)."""
        return [list(variable.shape) for variable in module_variables(self.builder.make_mixer())]

    def description(self) -> Dict[str, Any]:
        """MADQN's description, with the mixer's variable shapes."""
        return {**super().description(), "mixer_variables": self.mixer_variables()}
