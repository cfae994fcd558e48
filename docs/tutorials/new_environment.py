"""Tutorial 1: train MADQN on a PettingZoo environment of your own.

    .venv/bin/python docs/tutorials/new_environment.py --max_executor_steps=5000
"""

from mava_systems import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

from typing import Optional  # noqa: E402  (after the line above)

from absl import app
from gymnasium import spaces
import numpy as np
from pettingzoo import ParallelEnv

from mava_systems import launch, madqn
import wrappers


class EchoEnv(ParallelEnv):
    """Both agents see the same random symbol each step; each earns 1 for repeating it."""

    metadata = {"name": "echo_v0"}

    def __init__(self, num_symbols: int = 3, max_cycles: int = 5):
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents = []
        self._num_symbols, self._max_cycles = num_symbols, max_cycles
        self._rng, self._symbol, self._steps = None, 0, 0

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (self._num_symbols,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(self._num_symbols)

    def reset(self, seed=None, options=None):
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self.agents, self._steps = list(self.possible_agents), 0
        return self._observe(), {agent: {} for agent in self.agents}

    def step(self, actions):
        rewards = {agent: float(actions[agent] == self._symbol) for agent in self.agents}
        self._steps += 1
        done = self._steps >= self._max_cycles
        agents, observations = self.agents, self._observe()
        if done:
            self.agents = []
        return (observations, rewards, {agent: False for agent in agents},
                {agent: done for agent in agents}, {agent: {} for agent in agents})

    def _observe(self):
        self._symbol = int(self._rng.integers(self._num_symbols))
        one_hot = np.eye(self._num_symbols, dtype=np.float32)[self._symbol]
        return {agent: one_hot for agent in self.possible_agents}


class EchoFactory:
    """Makes the wrapped environment; every node calls it to make its own copy."""

    def __call__(self, evaluation: bool = False, seed: Optional[int] = None):
        return wrappers.ParallelEnvWrapper(EchoEnv(), seed=seed)


def main(argv):
    del argv  # Unused.
    system = madqn.MADQN(environment_factory=EchoFactory(),
                         config=launch.config_from_flags(madqn.MADQNConfig),
                         **launch.topology_from_flags())
    launch.run(system)


if __name__ == "__main__":
    launch.define_flags(default_env="unused: EchoFactory makes the environment")
    launch.define_config_flags(madqn.MADQNConfig)
    app.run(main)
