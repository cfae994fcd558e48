"""Tutorial 1: train on a PettingZoo environment of your own, registered as "tutorial/echo_v0".

    .venv/bin/python docs/tutorials/new_environment.py --max_executor_steps=5000
    .venv/bin/python examples/mpe/run_qmix.py --env=tutorial/echo_v0 \
        --env_module=docs/tutorials/new_environment.py
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up lines go to the log.
    console.quiet_terminal()

from absl import app  # noqa: E402  (after the line above)
from gymnasium import spaces
import numpy as np
from pettingzoo import ParallelEnv

from mava_systems import madqn
from mava_systems.launching import launch
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

    # The global state, for QMIX's mixer and MAPPO's centralised critic: a fixed-shape
    # `state_space` (a Box) and `state()` returning an array of it, what the whole team faces.
    @property
    def state_space(self):
        return spaces.Box(0.0, 1.0, (self._num_symbols,), np.float32)

    def state(self):
        return np.eye(self._num_symbols, dtype=np.float32)[self._symbol]

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


# At the top level of the module: the module is recorded in the run's run.json, and
# `python -m mava_systems.evaluate` (or any fresh process) imports it again to find the
# environment. Keep training below `if __name__ == "__main__":` so that importing it only registers.
wrappers.register_environment("tutorial/echo_v0", EchoEnv)

if __name__ == "__main__":
    app.run(launch.example_main(madqn.MADQN, madqn.MADQNConfig, default_env="tutorial/echo_v0"))
