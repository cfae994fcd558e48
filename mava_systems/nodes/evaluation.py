"""The evaluator: rounds of greedy episodes, every few seconds (the clock schedule) or with the
variables of given executor steps (see `step_evaluation.StepEvaluator`)."""

import threading
import time
from typing import Any, Callable, Dict, Optional

from acme.utils import counting, loggers
import launchpad as lp
import numpy as np

from mava_systems.nodes.counting import complete_counts
from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.nodes.lifecycle import ProgramStopping, run_watched


# The counts an evaluator row of a snapshot takes from the snapshot's time (the rest are now's).
SNAPSHOT_COUNT_KEYS = ("executor_steps", "executor_episodes", "trainer_steps")


class FixedSeedLoop:
    """Episodes of a fresh environment made with the same seed at each round's start, so every
    round plays the same episode seeds (the environment's first reset takes the seed, later
    resets continue its generator)."""

    def __init__(self, make_environment: Callable[[], Any],
                 make_loop: Callable[[Any], EnvironmentLoop]):
        self._make_environment = make_environment
        self._make_loop = make_loop
        self._environment: Optional[Any] = None
        self._loop: Optional[EnvironmentLoop] = None

    def start_round(self) -> None:
        """Replaces the environment by a fresh one, made with the seed."""
        if self._environment is not None:
            self._environment.close()
        self._environment = self._make_environment()
        self._loop = self._make_loop(self._environment)

    def run_episode(self) -> Dict[str, Any]:
        """Plays the round's next episode (see `EnvironmentLoop.run_episode`)."""
        if self._loop is None:
            self.start_round()
        return self._loop.run_episode()


class Evaluator:
    """Plays `episodes` greedy episodes every `interval_s` and logs their mean return.

    Its budget: at most `max_cpu_share` of one core. After a round it waits
    `interval_s`, or longer when the round's CPU time (its thread's) would
    otherwise exceed that share of the time from its start to the next one's.
    """

    def __init__(self, loop: Any, fetch_variables: Callable[[], None],
                 counter: counting.Counter, logger: loggers.Logger, episodes: int,
                 interval_s: float, max_cpu_share: float = 1.0,
                 videos: Optional[Any] = None,
                 load_variables: Optional[Callable[[Any], None]] = None):
        """`fetch_variables()` must copy the source's latest variables into the loop's executor.

        (An executor's own `update(wait=True)` would not do: its variable client only
        fetches every `variable_update_period` calls.) `loop` plays episodes
        (`run_episode()`); if it has a `start_round()`, that is called before each
        round (see `FixedSeedLoop`). `videos` (a `recording.EvaluationVideos`), if
        given, may record an episode after each round. `load_variables(variables)`
        copies a snapshot's variables (see `evaluate`) into the executor.
        """
        self._loop = loop
        self._fetch_variables = fetch_variables
        self._counter = counter
        self._logger = logger
        self._episodes = episodes
        self._interval_s = interval_s
        if not 0.0 < max_cpu_share <= 1.0:
            raise ValueError(f"max_cpu_share must be in (0, 1], got {max_cpu_share}")
        self._max_cpu_share = max_cpu_share
        self._last_round_cpu_s = 0.0
        self._lock = threading.Lock()  # Rounds of `run` and `final_evaluation` take turns.
        self._final_done = False
        self._videos = videos
        self._load_variables = load_variables

    def evaluate(self, final: bool = False, snapshot: Optional[Any] = None,
                 step: Optional[int] = None) -> dict:
        """Fetches the latest variables (or loads `snapshot`'s), plays one round and logs its
        summary.

        The summary's `final` is 1 for the round played at the program's step
        limit (see `final_evaluation`), else 0. Its counts are the counter's
        now; with a `snapshot` (a `step_evaluation.Snapshot`), the executor and
        trainer counts are the snapshot's, its executor steps exactly its step;
        a given `step` is logged as the executor steps.
        """
        with self._lock:
            return self._evaluate(final, snapshot, step)

    def final_evaluation(self) -> dict:
        """Plays one last round with the trainer's latest variables; later rounds are skipped.

        The coordinator calls it when the program reaches its step limit, just
        before stopping the program, so the evaluator's last row describes the
        final policy.
        """
        self._final_done = True
        return self.evaluate(final=True)

    def wait_s(self) -> float:
        """Seconds to wait after the last round: `interval_s`, or long enough that the round
        took at most `max_cpu_share` of one core from its start to the next round's."""
        return max(self._interval_s,
                   self._last_round_cpu_s * (1.0 / self._max_cpu_share - 1.0))

    def _evaluate(self, final: bool, snapshot: Optional[Any], step: Optional[int]) -> dict:
        started = time.thread_time()
        try:
            return self._play_round(final, snapshot, step)
        finally:
            self._last_round_cpu_s = time.thread_time() - started

    def _play_round(self, final: bool, snapshot: Optional[Any], step: Optional[int]) -> dict:
        if snapshot is None:
            self._fetch_variables()
        elif self._load_variables is None:
            raise ValueError("this evaluator cannot load snapshots (no load_variables)")
        else:
            self._load_variables(snapshot.variables)
        start_round = getattr(self._loop, "start_round", None)
        if start_round is not None:
            start_round()
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
            **self._round_counts(snapshot, step),
            "final": int(final),
        }
        self._logger.write(result)
        if self._videos is not None:
            self._videos.after_round(int(result.get("executor_steps", 0)), final)
        return result

    def _round_counts(self, snapshot: Optional[Any], step: Optional[int]) -> Dict[str, Any]:
        counts = complete_counts(self._counter.get_counts())
        if snapshot is not None:
            counts.update({key: snapshot.counts.get(key, 0) for key in SNAPSHOT_COUNT_KEYS})
            step = snapshot.step
        if step is not None:
            counts["executor_steps"] = step
        return counts

    def run(self) -> None:
        """Evaluates every `interval_s` until the program stops (or its final round was played)."""
        run_watched(self._run, "evaluator loop")

    def _run(self) -> None:
        try:
            while not self._final_done:
                self.evaluate()
                if lp.wait_for_stop(self.wait_s()):
                    return
            lp.wait_for_stop()
        except ProgramStopping:
            return
