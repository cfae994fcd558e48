"""The evaluator: greedy rounds of episodes with the latest variables, every few seconds."""

from typing import Callable

from acme.utils import counting, loggers
import launchpad as lp
import numpy as np

from mava_systems.components.counting import complete_counts
from mava_systems.components.environment_loop import EnvironmentLoop
from mava_systems.components.lifecycle import ProgramStopping


class Evaluator:
    """Plays `episodes` greedy episodes every `interval_s` and logs their mean return."""

    def __init__(self, loop: EnvironmentLoop, fetch_variables: Callable[[], None],
                 counter: counting.Counter, logger: loggers.Logger, episodes: int,
                 interval_s: float):
        """`fetch_variables()` must copy the source's latest variables into the loop's executor.

        (An executor's own `update(wait=True)` would not do: its variable client only
        fetches every `variable_update_period` calls.)
        """
        self._loop = loop
        self._fetch_variables = fetch_variables
        self._counter = counter
        self._logger = logger
        self._episodes = episodes
        self._interval_s = interval_s

    def evaluate(self) -> dict:
        """Fetches the latest variables, plays one round and logs its summary."""
        self._fetch_variables()
        episodes = [self._loop.run_episode() for _ in range(self._episodes)]
        returns = [episode["episode_return"] for episode in episodes]
        result = {
            "evaluation_return": float(np.mean(returns)),
            "evaluation_return_std": float(np.std(returns)),
            "evaluation_episode_length": float(np.mean([episode["episode_length"]
                                                        for episode in episodes])),
            # Per agent, as the executors' `episode_return/<agent>`.
            **{key.replace("episode_return/", "evaluation_return/"): float(np.mean(
                [episode.get(key, 0.0) for episode in episodes]))
               for key in episodes[0] if key.startswith("episode_return/")},
            **complete_counts(self._counter.get_counts()),
        }
        self._logger.write(result)
        return result

    def run(self) -> None:
        """Evaluates until the program stops."""
        try:
            while True:
                self.evaluate()
                if lp.wait_for_stop(self._interval_s):
                    return
        except ProgramStopping:
            return
