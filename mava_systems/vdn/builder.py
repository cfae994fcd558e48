"""Makes VDN's parts: MADQN's, with a mixer (and its target) for the trainer's team loss."""

from typing import Any, Dict, Optional

from dm_env import specs
import sonnet as snt

from mava_systems.madqn.builder import MADQNBuilder
from mava_systems.madqn.training import TrainerModule
from mava_systems.vdn.networks import (MixerFactory, build_mixer, copy_variables, make_sum_mixer,
                                       module_variables)
from mava_systems.vdn.training import MIXER, RecurrentVDNTrainer, VDNTrainer


class VDNBuilder(MADQNBuilder):
    """MADQN's builder whose trainer learns through a mixer; executors are MADQN's.

    Args (beyond `MADQNBuilder`'s):
      mixer_factory: `factory(num_agents, state_spec)` returning the mixer
        (None: `default_mixer_factory()`).
    """

    trainer_class = VDNTrainer
    recurrent_trainer_class = RecurrentVDNTrainer

    def __init__(self, *args: Any, mixer_factory: Optional[MixerFactory] = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.mixer_factory = mixer_factory or self.default_mixer_factory()

    def default_mixer_factory(self) -> MixerFactory:
        """The mixer when none is given: VDN's sum."""
        return make_sum_mixer

    @property
    def num_agents(self) -> int:
        """How many agents the mixer mixes (every agent of the environment)."""
        return len(self.environment_spec.agents)

    def mixer_state_spec(self) -> specs.Array:
        """The spec of the global state the mixer sees: the environment's `env_state` when
        replay stores it, else all agents' observations flattened and concatenated."""
        return self.global_state_spec()

    def make_mixer(self) -> snt.Module:
        """A new mixer, its variables created and its output shape checked (see `build_mixer`)."""
        return build_mixer(self.mixer_factory, self.num_agents, self.mixer_state_spec())

    def make_trainer_modules(self) -> Dict[str, TrainerModule]:
        """The mixer and, when it has variables, its target copy (the trainer's only)."""
        mixer = self.make_mixer()
        if not module_variables(mixer):
            return {MIXER: TrainerModule(mixer)}
        target = self.make_mixer()
        copy_variables(target, mixer)
        return {MIXER: TrainerModule(mixer, target)}

    def trainer_options(self) -> Dict[str, Any]:
        """The team reward and the mixer (see `VDNTrainer`)."""
        return {"team_reward": self.config.team_reward, "modules": self.make_trainer_modules()}
