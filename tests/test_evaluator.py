"""The evaluator plays every round with the variable source's latest variables."""

from acme.utils import counting
import numpy as np

from mava_systems import madqn


class ConstantSource:
    """A variable source whose every variable is filled with `value`; counts its calls."""

    def __init__(self, networks, value):
        self._shapes = {key: [variable.shape for variable in network.variables]
                        for key, network in networks.q_networks.items()}
        self.value = value
        self.calls = 0

    def get_variables(self, names):
        self.calls += 1
        return [[np.full(shape, self.value, np.float32) for shape in self._shapes[name]]
                for name in names]


def test_each_round_starts_with_the_sources_latest_variables(line_world_factory, tmp_run_dir):
    # variable_update_period is far above the steps of a round (2 episodes of 10 steps).
    config = madqn.MADQNConfig(evaluation_episodes=2, variable_update_period=1000)
    system = madqn.MADQN(line_world_factory, config=config, run_dir=tmp_run_dir)
    made = []
    make_networks = system.builder.make_networks
    system.builder.make_networks = lambda: made.append(make_networks()) or made[-1]
    source = ConstantSource(make_networks(), value=0.25)

    evaluator = system.evaluator(source, counting.Counter())
    networks = made[-1]
    for expected_calls, value in [(1, 0.25), (2, -0.5)]:
        source.value = value
        result = evaluator.evaluate()
        assert source.calls == expected_calls
        for network in networks.q_networks.values():
            for variable in network.variables:
                np.testing.assert_array_equal(variable.numpy(), value)
    assert set(result) >= {"evaluation_return", "evaluation_return/agent_0",
                           "evaluation_return/agent_1", "evaluation_episode_length"}
    assert result["evaluation_episode_length"] == 10
