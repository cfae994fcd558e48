"""MATD3's networks: MADDPG's policies, and twin critics that answer with both values."""

from typing import Mapping, Sequence, Tuple

from dm_env import specs
import sonnet as snt
import tensorflow as tf

from mava_systems.maddpg.networks import make_default_networks


class TwinCritic(snt.Module):
    """Two critics of the same input. `pair(inputs)` gives both values per row ([B, 2]); calling
    it gives the first's ([B], the value the policy ascends), computing both, so that both
    critics' variables exist once it has been called."""

    def __init__(self, first: snt.Module, second: snt.Module, name: str = "twin_critic"):
        super().__init__(name=name)
        self.first, self.second = first, second

    def pair(self, inputs: tf.Tensor) -> tf.Tensor:
        """Both critics' values per row: [B, 2]."""
        return tf.stack([self.first(inputs), self.second(inputs)], axis=-1)

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        return self.pair(inputs)[..., 0]


def make_twin_networks(observation_spec: specs.Array, action_spec: specs.BoundedArray,
                       policy_hidden_sizes: Sequence[int] = (256, 256, 256),
                       critic_hidden_sizes: Sequence[int] = (512, 512, 256)
                       ) -> Tuple[snt.Module, TwinCritic]:
    """MADDPG's default policy, and a `TwinCritic` of two of its default critics."""
    policy, first = make_default_networks(observation_spec, action_spec, policy_hidden_sizes,
                                          critic_hidden_sizes)
    # The second call's policy is dropped unused (a Sonnet module has no variables until called).
    _, second = make_default_networks(observation_spec, action_spec, policy_hidden_sizes,
                                      critic_hidden_sizes)
    return policy, TwinCritic(first, second)


def check_twin_critics(critics: Mapping[str, snt.Module], system: str) -> None:
    """Raises ValueError unless every critic has `pair(inputs)` giving both twins' values."""
    for key, critic in critics.items():
        if not callable(getattr(critic, "pair", None)):
            raise ValueError(f"{system}: network {key!r}'s critic is a {type(critic).__name__}; "
                             f"{system} needs twin critics with pair(inputs) -> [B, 2] "
                             "(matd3.TwinCritic, as matd3.make_twin_networks builds)")
