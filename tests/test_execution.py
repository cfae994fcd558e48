"""Acting: the NumPy path computes what the TensorFlow path does, and follows variable updates."""

import numpy as np
import tensorflow as tf

from mava_systems.components.variables import VersionedVariableClient
from mava_systems.madqn.execution import epsilon_greedy, numpy_epsilon_greedy
from mava_systems.madqn.networks import MLPQNetwork, NumpyMLPQNetwork


def test_numpy_forward_matches_the_network():
    network = MLPQNetwork((32, 16), num_actions=5)
    observations = np.random.default_rng(0).normal(size=(7, 2, 9)).astype(np.float32)
    expected = network(tf.constant(observations)).numpy()
    np.testing.assert_allclose(NumpyMLPQNetwork(network)(observations), expected, rtol=1e-5,
                               atol=1e-5)


def test_numpy_epsilon_greedy_matches_tensorflows_choice_rule():
    rng = np.random.default_rng(1)
    q_values = rng.normal(size=(200, 6)).astype(np.float32)
    legal = (rng.random((200, 6)) < 0.5).astype(np.float32)
    legal[:10] = 0.0  # No legal action: every action counts as legal.
    greedy_numpy = numpy_epsilon_greedy(q_values, legal, 0.0, rng)
    greedy_tf = epsilon_greedy(tf.constant(q_values), tf.constant(legal), tf.constant(0.0),
                               tf.random.Generator.from_seed(0)).numpy()
    np.testing.assert_array_equal(greedy_numpy, greedy_tf)

    explored = numpy_epsilon_greedy(q_values, legal, 1.0, rng)
    assert all(legal[row, action] > 0 for row, action in enumerate(explored) if legal[row].any())
    assert len(set(explored[:10])) > 1  # Random over all actions where none is legal.


class _Source:
    """A variable source serving given weights."""

    def __init__(self, weights):
        self.weights = weights

    def get_variables(self, names):
        return [self.weights for _ in names]


def test_acting_weights_follow_the_variable_client():
    network = MLPQNetwork((8,), num_actions=3)
    observation = np.ones((1, 4), np.float32)
    network(observation)
    new_weights = [np.full(variable.shape, 0.5, np.float32) for variable in network.variables]
    client = VersionedVariableClient(_Source(new_weights), {"net": network.variables})
    numpy_network = NumpyMLPQNetwork(network)
    before = numpy_network(observation)

    client.update_and_wait()
    assert client.version == 1
    numpy_network.refresh()
    after = numpy_network(observation)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, network(observation).numpy(), rtol=1e-6)
