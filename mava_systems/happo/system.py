"""HAPPO: heterogeneous-agent PPO, in MAPPO's on-policy family."""

from mava_systems.happo.builder import HAPPOBuilder
from mava_systems.happo.config import HAPPOConfig
from mava_systems.mappo.system import MAPPO


class HAPPO(MAPPO):
    """Heterogeneous-agent PPO (Kuba et al., 2022): every agent has its own policy (no sharing),
    and the policies are updated one after another in a random order each trainer step, each on
    the team's advantage weighted by the product of the new/old probability ratios of the agents
    updated before it (the M factor), with PPO's clipped surrogate; one centralised critic
    values the global state for the team (see `HAPPOTrainer`). Discrete or continuous actions.

    The program, executors (sampling their policies) and replay queue are MAPPO's (see `MAPPO`).
    Takes MAPPO's arguments with an `HAPPOConfig`; `network_factory(observation_spec,
    action_spec, critic_input_spec)` is called once per agent and the first agent's critic is
    the team's. With `config.recurrent` the networks are recurrent cores (by default MAPPO's
    reference GRU policy and critic), trained on chunks unrolled from the states the executors
    store (see `RecurrentHAPPOTrainer`).
    """

    builder_class = HAPPOBuilder
    system_name = "happo"
    config_class = HAPPOConfig
    critic = "centralised"
