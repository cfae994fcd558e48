"""Makes QMIX's parts: VDN's, with replay carrying the global state and QMIX's mixer by default."""

from mava_systems.qmix.networks import qmix_mixer_factory
from mava_systems.vdn.builder import VDNBuilder
from mava_systems.vdn.networks import MixerFactory


class QMIXBuilder(VDNBuilder):
    """VDN's builder whose replay items carry the environment's global state at both ends
    (when it has one) and whose default mixer is a `QMixer` sized by the config."""

    stores_environment_extras = True

    def default_mixer_factory(self) -> MixerFactory:
        """QMIX's mixer with the config's `mixing_embed_dim`, `hypernet_hidden_size` and
        `normalise_mixer_states`."""
        return qmix_mixer_factory(self.config.mixing_embed_dim, self.config.hypernet_hidden_size,
                                  self.config.normalise_mixer_states)
