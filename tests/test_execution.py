"""Acting: the NumPy path computes what the TensorFlow path does (networks, MADQN's, MAPPO's and
MADDPG's policies, for the same weights and the same noise), follows variable updates, and gives
way to TensorFlow for networks it does not know."""

import dm_env
from dm_env import specs
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from mava_systems import maddpg, mappo
from mava_systems.acting.exploration import ConstantEpsilon
from mava_systems.acting.numpy_networks import NumpyNetworks, numpy_twin
from mava_systems.nodes.variables import VersionedVariableClient
from mava_systems.madqn.execution import MADQNExecutor, epsilon_greedy, numpy_epsilon_greedy
from mava_systems.madqn.networks import MLPQNetwork, make_mlp_q_network
from mava_systems.madqn.networks import make_networks as make_q_networks
from mava_systems.mappo.execution import MAPPOExecutor
from mava_systems.mappo.networks import make_networks as make_mappo_networks
from mava_systems.mappo.training import POLICY_VERSION
from mava_systems.specs import MAEnvironmentSpec
from wrappers import OLT

AGENTS = ["agent_0", "agent_1", "agent_2"]
OBSERVATION_SIZE, NUM_ACTIONS = 6, 5


def environment_spec(action_spec):
    """Three agents with 6-float observations, legal-action masks and `action_spec`."""
    legal_size = action_spec.num_values if isinstance(action_spec, specs.DiscreteArray) else 1
    observation = OLT(specs.Array((OBSERVATION_SIZE,), np.float32),
                      specs.Array((legal_size,), np.float32), specs.Array((), np.float32))
    scalar = specs.Array((), np.float32)
    return MAEnvironmentSpec(
        agents=AGENTS, observations={agent: observation for agent in AGENTS},
        actions={agent: action_spec for agent in AGENTS},
        rewards={agent: scalar for agent in AGENTS},
        discounts={agent: scalar for agent in AGENTS}, extras={})


DISCRETE = specs.DiscreteArray(NUM_ACTIONS)
CONTINUOUS = specs.BoundedArray((2,), np.float32, minimum=[-2.0, 0.0], maximum=[1.0, 4.0])
SHARED = {agent: "agent" for agent in AGENTS}


def stacked_observations(rng, legal_size):
    """{"agent": OLT [3, ...]}: random observations; random legal actions, none in one row."""
    legal = (rng.random((len(AGENTS), legal_size)) < 0.6).astype(np.float32)
    legal[0] = 0.0  # No legal action: every action counts as legal.
    observation = rng.normal(size=(len(AGENTS), OBSERVATION_SIZE)).astype(np.float32)
    return {"agent": OLT(observation, legal, np.zeros(len(AGENTS), np.float32))}


class TFNoise:
    """Draws of a TensorFlow generator, handed out as the NumPy path asks for its noise
    (`np.random.Generator`'s methods): with the generator seeded as the TensorFlow path's,
    both paths see the same noise, in the same order."""

    def __init__(self, seed):
        self._generator = tf.random.Generator.from_seed(seed)

    def random(self, size, dtype=np.float64):
        del dtype
        return self._generator.uniform(size, minval=1e-20, maxval=1.0).numpy()

    def standard_normal(self, size, dtype=np.float64):
        del dtype
        return self._generator.normal(size).numpy()


def randomize(module, seed, scale=0.5):
    """Gives every variable of `module` random values, so that each one matters."""
    rng = np.random.default_rng(seed)
    for variable in module.variables:
        variable.assign(rng.normal(scale=scale, size=variable.shape).astype(np.float32))


@pytest.mark.parametrize("make_module,input_shape", [
    (lambda: MLPQNetwork((32, 16), num_actions=5), (7, 2, 9)),
    (lambda: mappo.networks.CategoricalPolicy(5, (16, 16)), (7, 9)),
    (lambda: mappo.networks.GaussianPolicy(3, (16, 16), init_log_std=-0.5), (7, 9)),
    (lambda: maddpg.networks.make_policy(CONTINUOUS, (32, 16)), (7, 9)),
    (lambda: snt.nets.MLP([8, 4], activation=tf.nn.elu, activate_final=True), (7, 9)),
])
def test_twins_compute_what_the_networks_compute(make_module, input_shape):
    module = make_module()
    inputs = np.random.default_rng(0).normal(size=input_shape).astype(np.float32)
    module(tf.constant(inputs))
    randomize(module, seed=1)
    expected = tf.nest.map_structure(lambda value: value.numpy(), module(tf.constant(inputs)))
    twin = numpy_twin(module)
    got = twin(inputs)
    tf.nest.assert_same_structure(got, expected)
    for got_part, expected_part in zip(tf.nest.flatten(got), tf.nest.flatten(expected)):
        assert got_part.dtype == np.float32
        np.testing.assert_allclose(got_part, expected_part, rtol=1e-5, atol=1e-5)


class DoubledQNetwork(MLPQNetwork):
    """A user's subclass: it may compute something else than its parent."""

    def __call__(self, observation):
        return 2.0 * super().__call__(observation)


def test_layers_the_twins_do_not_know_have_no_twin():
    inputs = tf.zeros([1, 4])
    dropout = snt.nets.MLP([3], dropout_rate=0.5)
    dropout(inputs, is_training=False)
    unknown = [snt.Sequential([snt.Linear(3), lambda values: 2.0 * values]),
               snt.nets.MLP([3, 3], activation=tf.nn.softplus),
               DoubledQNetwork((8,), num_actions=3)]
    for module in unknown:
        module(inputs)
    for module in unknown + [dropout]:
        assert numpy_twin(module) is None, module
    assert numpy_twin(snt.Linear(3)) is None  # No variables yet.
    assert NumpyNetworks.of({"a": snt.nets.MLP([3]), "b": unknown[0]}) is None


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


class TFMADQNExecutor(MADQNExecutor):
    """Changes the TensorFlow policy alone (here: not at all), so acts in TensorFlow."""

    def _batched_policy(self, observations, epsilon):
        return super()._batched_policy(observations, epsilon)


class TFMAPPOExecutor(MAPPOExecutor):
    """As `TFMADQNExecutor`, for MAPPO."""

    def _batched_policy(self, observations, epsilon):
        return super()._batched_policy(observations, epsilon)


class TFMADDPGExecutor(maddpg.MADDPGExecutor):
    """As `TFMADQNExecutor`, for MADDPG."""

    def _batched_policy(self, observations, epsilon):
        return super()._batched_policy(observations, epsilon)


def compare_paths(numpy_executor, tf_executor, legal_size, epsilon=0.0, steps=15, seed=0):
    """Both executors' policy outputs on the same observations, step after step."""
    assert numpy_executor.acts_in_numpy and not tf_executor.acts_in_numpy
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        stacked = stacked_observations(rng, legal_size)
        got = numpy_executor.policy_outputs(stacked, epsilon)
        expected = tf_executor.policy_outputs(stacked, epsilon)
        tf.nest.assert_same_structure(got, expected)
        for got_part, expected_part in zip(tf.nest.flatten(got), tf.nest.flatten(expected)):
            assert got_part.dtype == expected_part.dtype
            np.testing.assert_allclose(got_part, expected_part, rtol=1e-5, atol=1e-5)


def test_madqn_acts_alike_in_numpy_and_tensorflow():
    networks = make_q_networks(environment_spec(DISCRETE), SHARED, make_mlp_q_network)
    compare_paths(MADQNExecutor(networks, ConstantEpsilon(0.0), seed=3),
                  TFMADQNExecutor(networks, ConstantEpsilon(0.0), seed=3), NUM_ACTIONS)


def mappo_networks(action_spec, seed=0):
    tf.random.set_seed(seed)
    return make_mappo_networks(environment_spec(action_spec), SHARED,
                               mappo.networks.mlp_network_factory((16, 16), init_log_std=-0.5),
                               {"agent": specs.Array((OBSERVATION_SIZE,), np.float32)})


@pytest.mark.parametrize("action_spec", [DISCRETE, CONTINUOUS], ids=["discrete", "continuous"])
@pytest.mark.parametrize("greedy", [False, True], ids=["sampling", "greedy"])
def test_mappo_acts_alike_in_numpy_and_tensorflow(action_spec, greedy):
    """The same actions (for the same noise) and log-probabilities of the actions sent."""
    networks = mappo_networks(action_spec)
    numpy_executor = MAPPOExecutor(networks, seed=3, greedy=greedy)
    numpy_executor._rng = TFNoise(3)  # pylint: disable=protected-access
    legal_size = NUM_ACTIONS if action_spec is DISCRETE else 1
    compare_paths(numpy_executor, TFMAPPOExecutor(networks, seed=3, greedy=greedy), legal_size)


def test_maddpg_acts_alike_in_numpy_and_tensorflow():
    builder = maddpg.MADDPGBuilder(
        maddpg.MADDPGConfig(policy_hidden_sizes=(32, 32), critic_hidden_sizes=(8,)),
        environment_spec(CONTINUOUS), SHARED, maddpg.make_default_networks, run_dir="unused")
    networks = builder.make_networks()
    randomize(networks.policies["agent"], seed=2, scale=0.15)
    bounds = {"agent": (np.array(CONTINUOUS.minimum), np.array(CONTINUOUS.maximum))}
    numpy_executor = maddpg.MADDPGExecutor(networks, bounds, ConstantEpsilon(0.3), seed=3)
    numpy_executor._rng = TFNoise(3)  # pylint: disable=protected-access
    tf_executor = TFMADDPGExecutor(networks, bounds, ConstantEpsilon(0.3), seed=3)
    compare_paths(numpy_executor, tf_executor, legal_size=1, epsilon=0.3)
    actions = numpy_executor.select_actions(
        {agent: OLT(np.full(OBSERVATION_SIZE, 9.0, np.float32), np.ones(1, np.float32),
                    np.float32(0)) for agent in AGENTS})
    assert all(np.all(action >= CONTINUOUS.minimum) and np.all(action <= CONTINUOUS.maximum)
               for action in actions.values())


class Source:
    """A variable source serving the policies and policy version of other networks."""

    def __init__(self, networks):
        self.networks = networks

    def get_variables(self, names):
        return [[variable.numpy() for variable in (
                    [self.networks.policy_version] if name == POLICY_VERSION
                    else self.networks.policies[name].variables)]
                for name in names]


def greedy_outputs(executor, stacked):
    """(actions, their log-probabilities) of the agents' network."""
    return tuple(np.copy(value) for value in executor.policy_outputs(stacked)["agent"])


def test_acting_weights_follow_the_variable_client_and_episode_starts():
    acting, served = mappo_networks(DISCRETE, seed=0), mappo_networks(DISCRETE, seed=1)
    served.policy_version.assign(7)
    client = VersionedVariableClient(Source(served), {
        "agent": acting.policies["agent"].variables, POLICY_VERSION: [acting.policy_version]})
    executor = MAPPOExecutor(acting, variable_client=client, greedy=True)
    reference = TFMAPPOExecutor(served, greedy=True)
    stacked = stacked_observations(np.random.default_rng(4), NUM_ACTIONS)
    stacked["agent"].observation[:] *= 3.0
    before = greedy_outputs(executor, stacked)
    assert executor.policy_version == 0

    client.update_and_wait()  # Copies the served variables: new weights for the NumPy path.
    assert client.version == 1
    after = greedy_outputs(executor, stacked)
    expected = greedy_outputs(reference, stacked)
    assert not np.allclose(before[1], after[1])
    np.testing.assert_array_equal(after[0], expected[0])
    np.testing.assert_allclose(after[1], expected[1], rtol=1e-5, atol=1e-5)
    assert executor.policy_version == 7

    # Variables changed by other means: read on `refresh_weights()`, not before.
    randomize(acting.policies["agent"], seed=5)
    np.testing.assert_allclose(greedy_outputs(executor, stacked)[1], after[1])
    executor.refresh_weights()
    assert not np.allclose(greedy_outputs(executor, stacked)[1], after[1])

    # Without a variable client, the weights are read again as each episode starts.
    alone = MAPPOExecutor(acting, greedy=True)
    first = greedy_outputs(alone, stacked)
    randomize(acting.policies["agent"], seed=6)
    acting.policy_version.assign(9)
    np.testing.assert_allclose(greedy_outputs(alone, stacked)[1], first[1])
    alone.observe_first(dm_env.restart({agent: None for agent in AGENTS}))
    assert not np.allclose(greedy_outputs(alone, stacked)[1], first[1])
    assert alone.policy_version == 9


class CountingSource(Source):
    """A variable source that counts its fetches of all the variables and of the version alone."""

    def __init__(self, networks):
        super().__init__(networks)
        self.fetches = 0
        self.version_fetches = 0

    def get_variables(self, names):
        if list(names) == [POLICY_VERSION]:
            self.version_fetches += 1
        else:
            self.fetches += 1
        return super().get_variables(names)


def test_a_versioned_client_copies_only_variables_of_a_new_step():
    acting, served = mappo_networks(DISCRETE, seed=0), mappo_networks(DISCRETE, seed=1)
    source = CountingSource(served)
    client = VersionedVariableClient(source, {
        "agent": acting.policies["agent"].variables, POLICY_VERSION: [acting.policy_version]},
        version_key=POLICY_VERSION)
    weights = acting.policies["agent"].variables
    client.update_and_wait()  # The first fetch is copied, whatever its step.
    assert client.version == 1 and int(acting.policy_version.numpy()) == 0
    np.testing.assert_array_equal(weights[0].numpy(), served.policies["agent"].variables[0].numpy())

    assert (source.fetches, source.version_fetches) == (1, 0)

    weights[0].assign(weights[0] + 1.0)  # A change the source did not make (to see a copy).
    client.update_and_wait()  # The same step: only the version fetched, nothing copied.
    assert (source.fetches, source.version_fetches) == (1, 1) and client.version == 1
    assert not np.array_equal(weights[0].numpy(), served.policies["agent"].variables[0].numpy())

    served.policy_version.assign(3)  # The source's next step: fetched and copied.
    client.update_and_wait()
    assert (source.fetches, source.version_fetches) == (2, 2)
    assert client.version == 2 and int(acting.policy_version.numpy()) == 3
    np.testing.assert_array_equal(weights[0].numpy(), served.policies["agent"].variables[0].numpy())

    with pytest.raises(ValueError, match="version_key 'missing' must name one variable"):
        VersionedVariableClient(source, {"agent": weights}, version_key="missing")


class OwnPolicy(snt.Module):
    """A user's policy the NumPy twins do not know."""

    def __init__(self):
        super().__init__()
        self._linear = snt.Linear(NUM_ACTIONS)

    def __call__(self, observation):
        return tf.nn.softplus(self._linear(tf.cast(observation, tf.float32)))


def test_networks_the_twins_do_not_know_act_in_tensorflow():
    mlp = mappo.networks.make_mlp_networks
    networks = make_mappo_networks(
        environment_spec(DISCRETE), SHARED,
        lambda observation, action, critic: (OwnPolicy(), mlp(observation, action, critic)[1]),
        {"agent": specs.Array((OBSERVATION_SIZE,), np.float32)})
    executor = MAPPOExecutor(networks, seed=0)
    assert not executor.acts_in_numpy
    stacked = stacked_observations(np.random.default_rng(0), NUM_ACTIONS)
    actions = executor.select_actions(
        {agent: OLT(stacked["agent"].observation[i], stacked["agent"].legal_actions[i],
                    np.float32(0)) for i, agent in enumerate(AGENTS)})
    for i, agent in enumerate(AGENTS[1:], start=1):  # Row 0 has no legal action.
        assert stacked["agent"].legal_actions[i][actions[agent]] == 1.0

    q_networks = make_q_networks(environment_spec(DISCRETE), SHARED,
                                 lambda observation, action: DoubledQNetwork((8,),
                                                                             action.num_values))
    assert not MADQNExecutor(q_networks, ConstantEpsilon(0.0)).acts_in_numpy
    default = make_q_networks(environment_spec(DISCRETE), SHARED, make_mlp_q_network)
    assert MADQNExecutor(default, ConstantEpsilon(0.0)).acts_in_numpy
