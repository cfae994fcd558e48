"""Replay of fixed-length sequences whose extras are recorded with each observation."""

from typing import Any, Mapping, Optional

from acme.adders.reverb import sequence as acme_sequence
import dm_env
import numpy as np
import tree

# The extras key of each step's 0/1 flag: 1 when the step has an action to learn from; 0 at an
# episode's final observation (kept for bootstrapping) and at zero padding.
STEP_MASK = "mask"


class ObservationExtrasSequenceAdder(acme_sequence.SequenceAdder):
    """Acme's `SequenceAdder` (sequences of `sequence_length` steps every `period` steps, zero-padded
    at episode ends), with the step's extras written with its observation rather than its action.

    The extras of step t are what the executor knew when it observed o_t: the
    recurrent state it acts from at o_t, the environment's global state at
    o_t. Written with the observation, they exist for an episode's final
    observation too (a target bootstraps from it), and the step mask
    (`STEP_MASK`) marks which steps have an action: 1 for every observation
    but the final one, 0 there and (being zero) at the padding.
    """

    #: Executors give it the environment's extras (their global state) with every observation.
    stores_environment_extras: bool = False

    def __init__(self, *args: Any, stores_environment_extras: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stores_environment_extras = stores_environment_extras

    def add_first(self, timestep: dm_env.TimeStep, extras: Optional[Mapping[str, Any]] = None):
        """Starts an episode with its first observation and that observation's extras."""
        if not timestep.first():
            raise ValueError(f"add_first needs the first timestep of an episode, got {timestep}")
        self._writer.append(dict(observation=timestep.observation, start_of_episode=True,
                                 extras=self._with_mask(extras, timestep)), partial_step=True)
        self._add_first_called = True

    def add(self, action: Any, next_timestep: dm_env.TimeStep,
            extras: Optional[Mapping[str, Any]] = None):
        """Records the action taken, its reward and discount, and the next observation with its
        extras; writes sequences when they are due (and the last ones at the episode's end)."""
        if not self._add_first_called:
            raise ValueError("adder.add_first must be called before adder.add")
        step = dict(action=action, reward=next_timestep.reward, discount=next_timestep.discount)
        self._writer.append(step)
        self._writer.append(dict(observation=next_timestep.observation,
                                 start_of_episode=next_timestep.first(),
                                 extras=self._with_mask(extras, next_timestep)),
                            partial_step=True)
        self._write()
        if next_timestep.last():
            # The final observation's step: no action (zeros), its extras already written.
            self._writer.append(tree.map_structure(np.zeros_like, step))
            self._write_last()
            self.reset()

    @staticmethod
    def _with_mask(extras: Optional[Mapping[str, Any]], timestep: dm_env.TimeStep) -> dict:
        return {**(extras or {}), STEP_MASK: np.float32(not timestep.last())}
