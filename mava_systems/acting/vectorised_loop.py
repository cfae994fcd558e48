"""The environment loop of a vectorised environment: B environments stepped in one call.

`VectorisedEnvironmentLoop` drives a `wrappers.vectorised.BatchedEnvironment`
with a `MultiEnvironmentExecutor`: every iteration makes one policy call for
all B environments and one batched environment step, and hands each
environment's step to that environment's stream (its own adder: one Reverb
writer per environment), exactly as `MultiEnvironmentLoop` does for B separate
environments. The difference is the reset: a batched environment resets
itself, the step after an environment's LAST timestep ignoring its actions and
returning the FIRST timestep of its next episode. That step is no environment
step (it is neither counted nor written); its policy row is computed and
dropped, drawing that environment's random numbers once more than a separate
executor would.
"""

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import dm_env
import numpy as np

from mava_systems.acting.environment_loop import EpisodeStatistics, call_environment
from mava_systems.acting.multi_environment import MultiEnvironmentExecutor
from mava_systems.acting.step_counting import StepCounting
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event, run_watched
from mava_systems.nodes.replay import close_this_threads_writers


class VectorisedEnvironmentLoop:
    """`MultiEnvironmentLoop` for the B environments of one batched environment.

    Each environment's episodes are counted and logged one row each (see
    `step_counting`). With a `step_limit`, an environment starts an episode (its
    batched FIRST step is observed) only while the counter's count is below the
    limit, so a program stops within one episode per environment of its limit;
    an environment past it keeps being stepped with the others, unobserved.
    Once none runs, the loop waits for the program to stop. A batched step that
    raises stops the loop with `EnvironmentFailure` (all B environments share
    the call: none can be dropped alone).
    """

    def __init__(self, environment: Any, executor: MultiEnvironmentExecutor,
                 seeds: Sequence[int], extra_log_fn: Optional[Callable[[], Dict[str, Any]]] = None,
                 stop_event: Optional[threading.Event] = None, **counting_options: Any):
        """`environment` is a `BatchedEnvironment` (or one wrapped, e.g. `BatchedAgentIDs`) of
        B = `executor.num_environments` environments, reset with `seeds` (one each);
        `counting_options` are `StepCounting`'s (counter, logger, step_limit, steps_key)."""
        self._extra_log_fn = extra_log_fn
        self._stop_event = stop_event or program_stop_event()
        self.counting = StepCounting(stop_event=self._stop_event, **counting_options)
        count = executor.num_environments
        if environment.num_envs != count or len(seeds) != count:
            raise ValueError(f"a batched environment of {environment.num_envs} environments and "
                             f"{len(seeds)} seeds for an executor acting for {count}")
        self._environment = environment
        self._executor = executor
        self._seeds = [int(seed) for seed in seeds]
        self._agents = list(environment.agents)
        self._with_extras = getattr(executor, "observes_extras", False)
        # Per environment: its last timestep and extras, its running episode (None: none).
        self._timesteps: List[Optional[Tuple[dm_env.TimeStep, Dict[str, Any]]]] = [None] * count
        self._episodes: List[Optional[EpisodeStatistics]] = [None] * count
        self._finished = [False] * count  # No new episode: the step limit was reached.

    def run(self, num_steps: Optional[int] = None) -> None:
        """Steps the environments until at least `num_steps` environment steps were taken, the
        step limit is reached or the program stops; at the step limit it waits for the program
        to stop."""
        run_watched(lambda: self._run(num_steps), "environment loop")

    def _run(self, num_steps: Optional[int]) -> None:
        taken = 0
        try:
            self.counting.read_first_counts()
            if not self._reset_done():  # A later `run` continues.
                self._receive(self._call("reset", self._seeds), actions=None)
            while num_steps is None or taken < num_steps:
                if self._idle():
                    self.counting.settle()
                    self.counting.wait_at_the_limit()
                    return
                taken += self.step()
            self.counting.flush()
        except ProgramStopping:
            pass
        finally:
            self.counting.close()
            if self._stop_event.is_set():
                close_this_threads_writers()

    def _reset_done(self) -> bool:
        """Whether the environments were reset (by an earlier `run`)."""
        return self._timesteps[0] is not None

    def _idle(self) -> bool:
        """Whether no environment runs an episode nor may start one (the limit was reached)."""
        return not any(episode is not None for episode in self._episodes) and all(self._finished)

    def step(self) -> int:
        """One policy call and one batched step of every environment; returns how many
        environment steps were taken in running episodes (those counted)."""
        if self._stop_event.is_set():
            raise ProgramStopping()
        self.counting.settle(wait=False)
        actions = self._executor.select_actions(
            [timestep.observation for timestep, _ in self._timesteps])
        batched = self._call("step", np.array(
            [[agent_actions[agent] for agent in self._agents] for agent_actions in actions]))
        taken = self._receive(batched, actions)
        self._executor.update()
        return taken

    def _receive(self, batched: Any, actions: Optional[List[Dict[str, Any]]]) -> int:
        """Hands each environment's step of `batched` (taken with `actions`, None after the
        reset) to its stream and its episode; how many running episodes it stepped."""
        taken = 0
        for index in range(len(self._timesteps)):
            timestep, extras = self._environment.timestep(batched, index)
            episode = self._episodes[index]
            if timestep.first():
                self._start_episode(index, timestep, extras)
            elif episode is not None:
                episode.before_step(self._timesteps[index][0])
                self._executor.observe(index, actions[index], timestep, *self._extras(extras))
                episode.after_step(timestep)
                taken += 1
                if timestep.last():
                    self._end_episode(index)
            self._timesteps[index] = (timestep, extras)
        return taken

    def _start_episode(self, index: int, timestep: dm_env.TimeStep,
                       extras: Dict[str, Any]) -> None:
        """Starts environment `index`'s episode at its FIRST step, unless the limit is reached."""
        if self._finished[index]:
            return
        if self.counting.reply_needed():
            self.counting.settle()
        if self.counting.limit_reached():
            self._finished[index] = True
            return
        self._executor.observe_first(index, timestep, *self._extras(extras))
        self._episodes[index] = EpisodeStatistics(timestep)

    def _end_episode(self, index: int) -> None:
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        episode = self._episodes[index]
        episode.end()
        self.counting.count(episode,
                            self._extra_log_fn() if self._extra_log_fn is not None else {},
                            max_unanswered=len(self._episodes))
        self._episodes[index] = None

    def _extras(self, extras: Dict[str, Any]) -> tuple:
        return (extras,) if self._with_extras else ()

    def _call(self, method: str, *args: Any) -> Any:
        return call_environment(self._environment, method, *args, label=" (vectorised)")
