"""Tutorial 8: weighted QMIX, by overriding one public hook of the team loss.

    .venv/bin/python docs/tutorials/weighted_qmix.py --env=debug/two_step_v0 --alpha=0.1
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

import dataclasses  # noqa: E402  (after the line above)

from absl import app
import tensorflow as tf

from mava_systems import qmix, vdn
from mava_systems.launching import launch
from mava_systems.config import bounded


@dataclasses.dataclass
class WeightedQMIXConfig(qmix.QMIXConfig):
    alpha: float = bounded(0.5, 0.0, 1.0, doc="Weight of the TD errors where Q_tot is above "
                                              "its target (1: QMIX).")


class OptimisticWeighting:
    """Full weight where the team value underestimates its target, `alpha` elsewhere."""

    def __init__(self, *args, alpha: float = 0.5, **kwargs):
        self.alpha = alpha
        super().__init__(*args, **kwargs)

    def team_td_losses(self, td_error):  # td_error = target - Q_tot
        weights = tf.where(td_error > 0.0, 1.0, self.alpha)
        return weights * super().team_td_losses(td_error)


class WeightedQMIXTrainer(OptimisticWeighting, vdn.VDNTrainer):
    pass


class RecurrentWeightedQMIXTrainer(OptimisticWeighting, vdn.RecurrentVDNTrainer):
    pass


class WeightedQMIXBuilder(qmix.QMIXBuilder):
    trainer_class = WeightedQMIXTrainer
    recurrent_trainer_class = RecurrentWeightedQMIXTrainer  # Used with --recurrent=true.

    def trainer_options(self):
        return {**super().trainer_options(), "alpha": self.config.alpha}


class WeightedQMIX(qmix.QMIX):
    """QMIX whose team loss weighs each TD error optimistically (see `OptimisticWeighting`)."""

    builder_class = WeightedQMIXBuilder
    config_class = WeightedQMIXConfig
    system_name = "weighted_qmix"


if __name__ == "__main__":
    app.run(launch.example_main(WeightedQMIX, WeightedQMIXConfig, default_env="debug/two_step_v0"))
