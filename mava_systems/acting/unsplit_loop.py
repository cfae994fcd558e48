"""The environment loop of a vectorised environment that never splits the batch.

`UnsplitEnvironmentLoop` steps a `wrappers.vectorised.BatchedEnvironment` with
a batched executor (`BatchedExecutor`, e.g. `mappo.batched_execution`): the
batched environment's arrays go to one policy call and the executor writes one
block of rows for all B environments per step; no per-environment timestep is
made. Everything else is `VectorisedEnvironmentLoop`'s: the batched reset step
after an episode's end is neither counted nor written, each environment's
episodes are counted and logged one row each, and with a `step_limit` an
environment starts an episode only while the count is below it. It writes
exactly what `VectorisedEnvironmentLoop` writes through the batched adders of
the same executor (same seeds, same items).
"""

import time
from typing import Any, Dict, List, Optional, Protocol, Sequence

import numpy as np

from mava_systems.acting.environment_loop import EpisodeStatistics, call_environment
from mava_systems.acting.step_counting import StepCounting
from mava_systems.acting.vectorised_loop import VectorisedEnvironmentLoop
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event

FIRST = 0  # dm_env.StepType values of the batched step types.
LAST = 2


class BatchedExecutor(Protocol):
    """Acts for and writes the B environments of one batched environment, in arrays.

    `observe` gets each batched step: `actions` ([B, num_agents], None after the
    reset) led to `batched`; `starting` ([B] bool) marks the environments whose
    episode starts at this step and `stepped` those whose running episode took it;
    with `write`, the step's block of rows goes to replay.
    """

    num_environments: int
    num_steps: int

    def select_actions(self, batched: Any) -> np.ndarray:
        """The actions of every environment and agent ([B, num_agents] ints) at `batched`."""

    def observe(self, actions: Optional[np.ndarray], batched: Any, stepped: np.ndarray,
                starting: np.ndarray, write: bool) -> None:
        """Records a batched step (see the class)."""

    def update(self, wait: bool = False) -> None:
        """Fetches the latest variables."""


class BatchedEpisodeStatistics:
    """`EpisodeStatistics` of B environments' running episodes, kept in arrays."""

    def __init__(self, agents: Sequence[str], num_envs: int):
        self._agents = list(agents)
        self._starts = np.zeros(num_envs)
        self._steps = np.zeros(num_envs, np.int64)
        self._returns = np.zeros((num_envs, len(self._agents)))  # float64, as Python floats add.
        self._lengths = np.zeros((num_envs, len(self._agents)), np.int64)

    def start(self, index: int) -> None:
        """Environment `index` starts an episode (its clock too)."""
        self._starts[index] = time.time()
        self._steps[index] = 0
        self._returns[index] = 0.0
        self._lengths[index] = 0

    def step(self, previous: Any, batched: Any, stepped: np.ndarray) -> None:
        """Adds the step from `previous` to `batched` of the environments `stepped` marks: their
        agents that could act at `previous` (any legal action) and the rewards."""
        if stepped.any():
            self._lengths[stepped] += previous.legal_actions[stepped].any(axis=-1)
            self._returns[stepped] += batched.reward[stepped].astype(np.float64)
            self._steps[stepped] += 1

    def finished(self, index: int) -> EpisodeStatistics:
        """Environment `index`'s episode, ended now."""
        return EpisodeStatistics.finished(self._agents, self._starts[index], time.time(),
                                          self._returns[index], self._lengths[index],
                                          self._steps[index])


class UnsplitEnvironmentLoop(VectorisedEnvironmentLoop):
    """`VectorisedEnvironmentLoop` with a `BatchedExecutor`: arrays from the environment to the
    policy and to replay (see the module's docstring).

    Rows are written while every environment runs an episode: once one has
    finished at the step limit, nothing more is (as the batched writer's lanes
    would wait for its rows); the last episodes, at most one per environment,
    are not trained on.
    """

    def __init__(self, environment: Any, executor: BatchedExecutor, *args: Any, **kwargs: Any):
        super().__init__(environment, executor, *args, **kwargs)
        self._batched: Any = None  # The last batched step.
        self._running = np.zeros(executor.num_environments, bool)
        self._writing = True
        self._statistics = BatchedEpisodeStatistics(self._agents, executor.num_environments)

    def _reset_done(self) -> bool:
        return self._batched is not None

    def _idle(self) -> bool:
        return not self._running.any() and all(self._finished)

    def step(self) -> int:
        """One policy call and one batched step of every environment; returns how many
        environment steps were taken in running episodes (those counted)."""
        if self._stop_event.is_set():
            raise ProgramStopping()
        self.counting.settle(wait=False)
        actions = self._executor.select_actions(self._batched)
        taken = self._receive(self._call("step", actions), actions)
        self._executor.update()
        return taken

    def _receive(self, batched: Any, actions: Optional[np.ndarray]) -> int:
        stepped = self._running.copy()  # Running episodes took this step (none ended before).
        if actions is not None:
            self._statistics.step(self._batched, batched, stepped)
        step_type = batched.step_type
        starting = np.zeros_like(stepped)
        write = self._writing and actions is not None
        for index in np.flatnonzero((step_type == FIRST) | (stepped & (step_type == LAST))):
            if step_type[index] == FIRST:
                starting[index] = self._start(index)
            else:
                self._end_episode(index)
        self._executor.observe(actions, batched, stepped, starting, write)
        self._batched = batched
        return int(stepped.sum())

    def _start(self, index: int) -> bool:
        """Starts environment `index`'s episode unless the limit is reached; whether it did."""
        if self._finished[index]:
            return False
        if self.counting.reply_needed():
            self.counting.settle()
        if self.counting.limit_reached():
            self._finished[index] = True
            self._writing = False
            return False
        self._running[index] = True
        self._statistics.start(index)
        return True

    def _end_episode(self, index: int) -> None:
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        self.counting.count(self._statistics.finished(index),
                            self._extra_log_fn() if self._extra_log_fn is not None else {},
                            max_unanswered=len(self._running))
        self._running[index] = False


class BatchedEvaluationRounds:
    """The evaluator's rounds on a vectorised environment of N environments, one greedy episode
    each, played at once: environment i starts from evaluation seed `seeds[i]` every round, so
    every round plays the same N episodes (a `nodes.evaluation.Evaluator`'s `loop`).

    `start_round()` plays the round (one policy call per batched step, until every environment
    ended its episode) and counts its episodes in environment order; `run_episode()` returns
    their rows in turn (playing a round when none is left).
    """

    def __init__(self, environment: Any, executor: BatchedExecutor, seeds: Sequence[int],
                 counter: Any = None, stop_event: Optional[Any] = None):
        if environment.num_envs != executor.num_environments or len(seeds) != environment.num_envs:
            raise ValueError(f"a batched environment of {environment.num_envs} environments and "
                             f"{len(seeds)} seeds for an executor acting for "
                             f"{executor.num_environments}")
        self._environment = environment
        self._executor = executor
        self._seeds = [int(seed) for seed in seeds]
        self._stop_event = stop_event or program_stop_event()
        self.counting = StepCounting(counter, stop_event=self._stop_event)
        self._rows: List[Dict[str, Any]] = []

    def start_round(self) -> None:
        """Plays the round's episodes (see the class)."""
        count = len(self._seeds)
        statistics = BatchedEpisodeStatistics(self._environment.agents, count)
        batched = call_environment(self._environment, "reset", self._seeds, label=" (evaluation)")
        running = np.ones(count, bool)
        self._executor.observe(None, batched, np.zeros(count, bool), running.copy(), False)
        for index in range(count):
            statistics.start(index)
        finished: List[Optional[EpisodeStatistics]] = [None] * count
        while running.any():
            if self._stop_event.is_set():
                raise ProgramStopping()
            actions = self._executor.select_actions(batched)
            previous, batched = batched, call_environment(self._environment, "step", actions,
                                                          label=" (evaluation)")
            stepped = running.copy()
            statistics.step(previous, batched, stepped)
            self._executor.observe(actions, batched, stepped, np.zeros(count, bool), False)
            for index in np.flatnonzero(stepped & (batched.step_type == LAST)):
                finished[index] = statistics.finished(index)
                running[index] = False
        self._rows = [self.counting.count_now(episode, {}) for episode in finished]

    def run_episode(self) -> Dict[str, Any]:
        """The next episode's row of the round (see the class)."""
        if not self._rows:
            self.start_round()
        return self._rows.pop(0)
