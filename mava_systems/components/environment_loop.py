"""Runs a multi-agent environment with an executor, counting and logging each episode."""

import threading
import time
from typing import Any, Callable, Dict, Optional, Protocol

from acme.utils import counting, loggers
import dm_env
import numpy as np

from mava_systems.components.counting import complete_counts
from mava_systems.components.lifecycle import ProgramStopping, program_stop_event
from wrappers import MultiAgentEnvironment


class Executor(Protocol):
    """What the loop needs of an executor.

    An executor with a true `observes_extras` attribute also gets the
    environment's extras (`environment.get_extras()`, e.g. `{"env_state": s}`)
    after every reset and step, as a second argument of `observe_first` and a
    third of `observe`.
    """

    def select_actions(self, observations: Dict[str, Any]) -> Dict[str, Any]: ...
    def observe_first(self, timestep: dm_env.TimeStep) -> None: ...
    def observe(self, actions: Dict[str, Any], next_timestep: dm_env.TimeStep) -> None: ...
    def update(self, wait: bool = False) -> None: ...


class EnvironmentLoop:
    """Plays episodes: the executor acts, observes and updates its variables every step."""

    def __init__(
        self,
        environment: MultiAgentEnvironment,
        executor: Executor,
        counter: Optional[counting.Counter] = None,
        logger: Optional[loggers.Logger] = None,
        extra_log_fn: Optional[Callable[[], Dict[str, Any]]] = None,
        stop_event: Optional[threading.Event] = None,
    ):
        self._environment = environment
        self._executor = executor
        self._counter = counter or counting.Counter()
        self._logger = logger or loggers.NoOpLogger()
        self._extra_log_fn = extra_log_fn
        self._stop_event = stop_event or program_stop_event()
        self._with_extras = bool(getattr(executor, "observes_extras", False))

    def _extras(self) -> tuple:
        """The environment's extras as further arguments of the executor's observe calls (if it
        wants them)."""
        return (self._environment.get_extras(),) if self._with_extras else ()

    def run_episode(self) -> Dict[str, Any]:
        """Plays one episode and returns its statistics (also logged).

        Raises:
          ProgramStopping: when the program stops during the episode.
        """
        start = time.time()
        timestep = self._environment.reset()
        self._executor.observe_first(timestep, *self._extras())
        agents = list(timestep.observation)
        returns = np.zeros(len(agents), dtype=np.float64)
        # Per agent, the steps it could act in (any legal action): all of them for agents
        # that stay in a parallel environment, its own turns in a turn-based one.
        lengths = np.zeros(len(agents), dtype=np.int64)
        steps = 0
        while not timestep.last():
            if self._stop_event.is_set():
                raise ProgramStopping()
            lengths += [np.any(timestep.observation[agent].legal_actions) for agent in agents]
            actions = self._executor.select_actions(timestep.observation)
            timestep = self._environment.step(actions)
            self._executor.observe(actions, timestep, *self._extras())
            self._executor.update()
            returns += [timestep.reward[agent] for agent in agents]
            steps += 1
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        counts = self._counter.increment(episodes=1, steps=steps)
        elapsed = time.time() - start
        result = {
            "episode_length": steps,
            "episode_return": float(returns.sum()),
            "steps_per_second": steps / elapsed if elapsed > 0 else 0.0,
            **{f"episode_return/{agent}": float(value) for agent, value in zip(agents, returns)},
            **{f"episode_length/{agent}": int(value) for agent, value in zip(agents, lengths)},
            **complete_counts(counts),
        }
        if self._extra_log_fn is not None:
            result.update(self._extra_log_fn())
        self._logger.write(result)
        return result

    def run(self, num_episodes: Optional[int] = None) -> None:
        """Plays episodes until `num_episodes` were played or the program stops."""
        played = 0
        try:
            while num_episodes is None or played < num_episodes:
                self.run_episode()
                played += 1
        except ProgramStopping:
            pass
