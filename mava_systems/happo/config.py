"""HAPPO's hyper-parameters: MAPPO's, with what HAPPO requires (no sharing, one centralised
critic, separate optimizers) as defaults and checks."""

import dataclasses
from typing import Optional

from mava_systems.config import documented, redefault
from mava_systems.mappo.config import MAPPOConfig

_SHARED_WEIGHTS_DOC = ("Must be False: HAPPO gives every agent its own policy (agents updated "
                       "one after another).")


@dataclasses.dataclass
class HAPPOConfig(MAPPOConfig):
    """Every HAPPO hyper-parameter: MAPPO's (see `MAPPOConfig`), read the same way, with the
    values HAPPO needs as defaults and refused otherwise: `shared_weights=False` (a policy per
    agent), `critic="centralised"` (one value of the global state for the team) and
    `separate_optimizers=True` (the policies are updated one after another, the critic on its
    own). With `recurrent=True` the policies and the team critic are GRUs trained on chunks
    unrolled from their stored states, as recurrent MAPPO's (see `RecurrentHAPPOTrainer`).

    `num_epochs` and `num_minibatches` apply to each agent's policy update and to the critic's.
    """

    shared_weights: bool = documented(False, _SHARED_WEIGHTS_DOC)
    critic: str = redefault(MAPPOConfig, "critic", "centralised")
    separate_optimizers: bool = redefault(MAPPOConfig, "separate_optimizers", True)
    # Recurrent HAPPO keeps its layout (the MAPPO paper's rMAPPO's): every hidden layer before
    # the GRU, and a recurrent team critic.
    rnn_input_layers: Optional[int] = redefault(MAPPOConfig, "rnn_input_layers", None)
    recurrent_critic: bool = redefault(MAPPOConfig, "recurrent_critic", True)

    def __post_init__(self):
        super().__post_init__()
        name = type(self).__name__
        required = {"shared_weights": False, "critic": "centralised",
                    "separate_optimizers": True}
        for field, value in required.items():
            if getattr(self, field) != value:
                raise ValueError(f"{name}.{field} must be {value!r} for HAPPO, got "
                                 f"{getattr(self, field)!r}: {_REASONS[field]}")
        if self.recurrent and not self.recurrent_critic:
            raise ValueError(f"{name}.recurrent_critic must be True with recurrent=True: "
                             "recurrent HAPPO's team critic is a GRU (an MLP team critic beside "
                             "recurrent policies is not implemented)")


_REASONS = {
    "shared_weights": "every agent has its own policy, updated in turn (use MAPPO to share)",
    "critic": "HAPPO's one critic values the global state for the whole team (use IPPO for "
              "decentralised critics)",
    "separate_optimizers": "the policies are updated one after another, the critic on its own",
}
