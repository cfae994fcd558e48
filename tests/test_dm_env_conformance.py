"""dm_env's own conformance suite (`dm_env.test_utils.EnvironmentTestMixin`) on every environment family.

Each family's environment is made through `wrappers.make_environment_factory`,
as systems make it, with short episodes so that the longer action sequence
reaches LAST (and the FIRST that must follow it) twice. Actions are random
legal ones, chosen from the last observation.
"""

from typing import Any, Dict, Iterator, Optional

from absl.testing import absltest
import dm_env
from dm_env import specs, test_utils
import numpy as np

import wrappers
from wrappers.agent_ids import AgentIDObservations


class WrappedEnvironmentConformance(test_utils.EnvironmentTestMixin):
    """The dm_env contract on one registered environment; subclasses name it."""

    env_name = ""
    env_kwargs: Dict[str, Any] = {}
    sequence_length = 40

    def make_object_under_test(self) -> dm_env.Environment:
        self._rng = np.random.default_rng(0)
        self._last: Optional[dm_env.TimeStep] = None
        return wrappers.make_environment_factory(self.env_name, **self.env_kwargs)(seed=0)

    def step_environment(self, action=None):
        step = super().step_environment(action)
        self._last = step
        return step

    def reset_environment(self):
        step = super().reset_environment()
        self._last = step
        return step

    def make_action_sequence(self) -> Iterator[Dict[str, Any]]:
        # Lazy: each action is chosen after the previous step's timestep is known.
        for _ in range(self.sequence_length):
            yield self._random_legal_actions()

    def _random_legal_actions(self) -> Dict[str, Any]:
        actions = {}
        for agent, spec in self.environment.action_spec().items():
            if isinstance(spec, specs.DiscreteArray):
                legal = (np.flatnonzero(self._last.observation[agent].legal_actions)
                         if self._last is not None else np.arange(spec.num_values))
                choices = legal if legal.size else np.arange(spec.num_values)
                actions[agent] = np.int32(self._rng.choice(choices))
            else:
                actions[agent] = self._rng.uniform(spec.minimum, spec.maximum).astype(spec.dtype)
        return actions

    def test_the_action_sequence_reaches_the_end_of_an_episode(self):
        self.reset_environment()
        step_types = [self.step_environment(action).step_type
                      for action in self.make_action_sequence()]
        self.assertIn(dm_env.StepType.LAST, step_types)
        last = step_types.index(dm_env.StepType.LAST)
        if last + 1 < len(step_types):
            self.assertIs(step_types[last + 1], dm_env.StepType.FIRST)


# One test case per environment family (class name prefix: env name, constructor kwargs).
# Turn-based tic-tac-toe ends within 9 turns of random legal moves.
FAMILY_CASES = {
    "MPE": ("mpe/simple_spread_v3", {"max_cycles": 5}),
    "MPEContinuous": ("mpe/simple_spread_v3", {"max_cycles": 5, "continuous_actions": True}),
    "SISL": ("sisl/pursuit_v5", {"max_cycles": 5}),
    "Butterfly": ("butterfly/cooperative_pong_v6", {"max_cycles": 5}),
    "Classic": ("classic/tictactoe_v3", {}),
    "Gymnasium": ("gymnasium/CartPole-v1", {"max_episode_steps": 8}),
    "Debug": ("debug/line_world_v0", {"max_cycles": 4}),
    # Gymnasium multi-agent Tuple-space envs: LBF through a Gymnasium time limit, RWARE its own.
    "LBF": ("lbf/Foraging-8x8-2p-2f-coop-v3", {"max_episode_steps": 8}),
    "LBFPartiallyObservable": ("lbf/Foraging-2s-8x8-2p-2f-coop-v3", {"max_episode_steps": 8}),
    "RWARE": ("rware/rware-tiny-2ag-v2", {"max_steps": 8}),
    "Memory": ("debug/memory_v0", {"delay": 3}),
}
for _label, (_name, _kwargs) in FAMILY_CASES.items():
    globals()[f"{_label}ConformanceTest"] = type(
        f"{_label}ConformanceTest", (WrappedEnvironmentConformance, absltest.TestCase),
        {"env_name": _name, "env_kwargs": _kwargs})


class AgentIDsConformanceTest(WrappedEnvironmentConformance, absltest.TestCase):
    """The agent-ID observation wrapper keeps the contract too."""

    env_name = "debug/line_world_v0"
    env_kwargs = {"max_cycles": 4}

    def make_object_under_test(self) -> dm_env.Environment:
        return AgentIDObservations(super().make_object_under_test())


if __name__ == "__main__":
    absltest.main()
