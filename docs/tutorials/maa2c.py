"""Tutorial 6: MAA2C, multi-agent advantage actor-critic, as a subclass of MAPPO.

    .venv/bin/python docs/tutorials/maa2c.py --env=mpe/simple_spread_v3
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

import dataclasses  # noqa: E402  (after the line above)
from typing import Optional

from absl import app
import tensorflow as tf

from mava_systems import mappo
from mava_systems.launching import launch
from mava_systems.config import bounded
from mava_systems.mappo.training import apply_rows, masked_mean


@dataclasses.dataclass
class MAA2CConfig(mappo.MAPPOConfig):
    """MAPPO's fields with A2C's defaults: one unclipped gradient step per batch."""

    num_epochs: int = bounded(1, 1, doc="Passes over each batch of sequences.")
    num_minibatches: int = bounded(1, 1, doc="Minibatches each batch is split into per epoch.")
    value_clip_epsilon: Optional[float] = bounded(None, 0.0, low_inclusive=False, optional=True,
                                                  doc="Value clipping (None: none).")


class MAA2CTrainer(mappo.MAPPOTrainer):
    """MAPPO's trainer with A2C's policy loss: -log pi(a|o) * advantage, no ratio, no clipping."""

    def policy_loss(self, key, batch):
        head, mask = self.networks.heads[key], batch["is_transition"]
        outputs = apply_rows(self.networks.policies[key], batch["observation"], 3)
        log_prob = head.log_prob(outputs, batch["legal_actions"], batch["action"])
        log_prob = tf.where(mask, log_prob, 0.0)  # Padding steps take no part (nor gradient).
        entropy = masked_mean(head.entropy(outputs, batch["legal_actions"]), mask)
        loss = (-masked_mean(log_prob * batch["advantages"], mask)
                - self.config.entropy_cost * entropy)
        return loss, {"policy_loss": loss, "entropy": entropy}

    def fetch_names(self):  # The statistics the losses return: PPO's ratio statistics are gone.
        return [name for name in super().fetch_names() if name not in ("clip_fraction", "approx_kl")]


class MAA2CBuilder(mappo.MAPPOBuilder):
    trainer_class = MAA2CTrainer


class MAA2C(mappo.MAPPO):
    """Multi-agent A2C: MAPPO's executors, critics and advantages; A2C's policy gradient."""

    builder_class = MAA2CBuilder
    config_class = MAA2CConfig
    system_name = "maa2c"


if __name__ == "__main__":
    app.run(launch.example_main(MAA2C, MAA2CConfig, default_env="debug/line_world_v0"))
