"""The evaluator plays every round with the variable source's latest variables."""

import time

from acme.utils import counting, loggers
import numpy as np
import pytest

from mava_systems import madqn
from mava_systems.nodes.evaluation import Evaluator


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


class CPUBoundLoop:
    """An environment loop whose every episode takes `cpu_s` seconds of this thread's CPU."""

    def __init__(self, cpu_s):
        self.cpu_s = cpu_s

    def run_episode(self):
        started = time.thread_time()
        while time.thread_time() - started < self.cpu_s:
            pass
        return {"episode_return": 1.0, "episode_length": 1}


def test_rounds_keep_to_the_cpu_budget():
    """After a round the evaluator waits `interval_s`, or long enough that the round's CPU time
    is at most `max_cpu_share` of the time until the next round starts."""
    loop = CPUBoundLoop(cpu_s=0.0)
    evaluator = Evaluator(loop, lambda: None, counting.Counter(), loggers.NoOpLogger(),
                          episodes=2, interval_s=0.5, max_cpu_share=0.1)
    assert evaluator.wait_s() == 0.5  # Before any round.
    evaluator.evaluate()
    assert evaluator.wait_s() == 0.5  # A cheap round: the interval.
    loop.cpu_s = 0.05
    evaluator.evaluate()  # 2 episodes: at least 0.1 s of CPU.
    wait_s = evaluator.wait_s()
    assert 0.9 <= wait_s <= 2.0  # 9 times the round's CPU time (share 0.1), not the interval.
    with pytest.raises(ValueError, match="max_cpu_share"):
        Evaluator(loop, lambda: None, counting.Counter(), loggers.NoOpLogger(), episodes=1,
                  interval_s=1.0, max_cpu_share=0.0)


def test_the_system_evaluator_takes_its_budget_from_the_config(line_world_factory, tmp_run_dir):
    config = madqn.MADQNConfig(evaluation_episodes=1, evaluation_interval_s=0.0,
                               evaluation_max_cpu_share=1e-6)
    system = madqn.MADQN(line_world_factory, config=config, run_dir=tmp_run_dir)
    evaluator = system.evaluator(ConstantSource(system.builder.make_networks(), 0.0),
                                 counting.Counter())
    assert evaluator.wait_s() == 0.0
    evaluator.evaluate()
    # A round takes some CPU time; a millionth of a core makes the wait a million times that.
    assert evaluator.wait_s() > 1.0
