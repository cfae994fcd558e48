"""Several environments per executor: one batched policy call for all of them, one replay
stream each.

An executor node with `num_envs_per_executor` N > 1 steps N environments
together (`MultiEnvironmentLoop`). Its `MultiEnvironmentExecutor` stacks the N
environments' agent observations into the rows of one policy call (the NumPy
twins' or TensorFlow's), and hands each environment's rows to that environment's
own single-environment executor (its stream), which writes to its own adder.
On the NumPy path every environment's random draws come from its own generator
(`RowSplitGenerator`), so each stream writes exactly the items a separate
executor with that environment's seed would write. Recurrent agents keep one
state per (environment, agent) in that environment's stream: the policy call
takes the streams' states stacked as the observations are, each stream advances
its own from the call's rows, resets them when its environment's episode starts
and stores them with its environment's sequences.
"""

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from absl import logging
import dm_env
import numpy as np
import tree

from mava_systems.acting.environment_loop import (MAX_FAILED_EPISODES, EnvironmentFailure,
                                                  EpisodeStatistics, call_environment)
from mava_systems.acting.step_counting import StepCounting
from mava_systems.nodes.lifecycle import ProgramStopping, program_stop_event, run_watched
from mava_systems.nodes.replay import close_this_threads_writers


class RowSplitGenerator:
    """A NumPy random generator whose draws come block by block from one generator each.

    A draw of shape `(N * rows, ...)` is the concatenation of draws of shape
    `(rows, ...)` from each of the N generators in turn: rows of a batch that
    holds N environments' agents one environment after the other get exactly
    the numbers that environment's own generator would give it alone.
    Any `np.random.Generator` method taking the shape first (`random`,
    `standard_normal`, `uniform`'s `size=` is not supported) works.
    """

    def __init__(self, generators: Sequence[np.random.Generator]):
        self.generators = list(generators)

    def __getattr__(self, name: str) -> Callable[..., np.ndarray]:
        methods = [getattr(generator, name) for generator in self.generators]

        def draw(shape: Any, *args: Any, **kwargs: Any) -> np.ndarray:
            shape = tuple(np.atleast_1d(shape))
            if shape[0] % len(methods):
                raise ValueError(f"{shape[0]} rows do not split over {len(methods)} generators")
            block = (shape[0] // len(methods),) + shape[1:]
            return np.concatenate([method(block, *args, **kwargs) for method in methods])

        return draw


def row_generator(seed: Union[int, Sequence[int]]) -> Any:
    """NumPy's generator of `seed`, or with a sequence of seeds a `RowSplitGenerator` of theirs."""
    if np.ndim(seed) == 0:
        return np.random.default_rng(seed)
    return RowSplitGenerator([np.random.default_rng(one) for one in seed])


def environment_seeds(base_seed: int, executor_id: int, num_envs: int,
                      start_step: int, resume_stride: int) -> List[int]:
    """The seeds of executor `executor_id`'s `num_envs` environments (and of their streams).

    Environment j takes the seed executor `executor_id * num_envs + j` would
    have with one environment each (so with one environment, the executor's
    own seed), shifted by `resume_stride` per step the executor had taken when
    it (re)started, so a resumed executor does not replay old episodes.
    """
    return [(base_seed + 1 + executor_id * num_envs + index + resume_stride * start_step) % 2**31
            for index in range(num_envs)]


def concatenate_rows(parts: Sequence[Any]) -> Any:
    """Nests of the same structure as one nest, each leaf the parts' leaves' rows in turn
    (`split_rows` undoes it)."""
    return tree.map_structure(lambda *rows: np.concatenate(rows), *parts)


def split_rows(outputs: Any, num_parts: int) -> List[Any]:
    """`outputs` (a nest of arrays whose rows hold `num_parts` equal blocks in turn) as one nest
    per block."""
    leaves = [np.split(np.asarray(leaf), num_parts) for leaf in tree.flatten(outputs)]
    return [tree.unflatten_as(outputs, [parts[index] for parts in leaves])
            for index in range(num_parts)]


class MultiEnvironmentExecutor:
    """Acts for N environments in one policy call; environment j's steps go to `streams[j]`.

    `actor` computes the policy (its networks, variable client, schedule; with
    the N streams' seeds, see `MADQNExecutor`) and `streams` are N executors of
    the same class, each with its own adder and seed, that stack their
    environment's data and write it to replay. Exploration: every environment
    follows the actor's schedule at the number of steps each environment has
    taken (they step together, so they share it): N environments explore as N
    executors with that schedule would.
    """

    def __init__(self, actor: Any, streams: Sequence[Any]):
        self.actor = actor
        self.streams = list(streams)

    @property
    def num_environments(self) -> int:
        """How many environments this executor acts for."""
        return len(self.streams)

    @property
    def observes_extras(self) -> bool:
        """Whether `observe_first` and `observe` want the environment's extras."""
        return bool(getattr(self.streams[0], "observes_extras", False))

    @property
    def num_steps(self) -> int:
        """Steps each environment has taken (where the exploration schedule stands)."""
        return max(stream.num_steps for stream in self.streams)

    @num_steps.setter
    def num_steps(self, steps: int) -> None:
        for stream in self.streams:
            stream.num_steps = steps

    @property
    def epsilon(self) -> float:
        """The exploration rate every environment uses at its current step."""
        self.actor.num_steps = self.num_steps
        return self.actor.epsilon

    @property
    def recurrent(self) -> bool:
        """Whether the streams carry recurrent states (`states`, see `RecurrentMADQNExecutor`)."""
        return hasattr(self.streams[0], "states")

    def select_actions(self, observations: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Each environment's agents' actions, from one policy call on all their observations
        (and, for recurrent agents, on each environment's states, which its stream advances)."""
        batch = concatenate_rows([stream.stacked_observation(observation)
                                  for stream, observation in zip(self.streams, observations)])
        if self.recurrent:
            states = concatenate_rows([stream.states.current for stream in self.streams])
            outputs = self.actor.policy_outputs(batch, self.epsilon, states)
        else:
            outputs = self.actor.policy_outputs(batch, self.epsilon)
        return [stream.actions_from_outputs(part, self.actor)
                for stream, part in zip(self.streams, split_rows(outputs, len(self.streams)))]

    def observe_first(self, index: int, timestep: dm_env.TimeStep, *extras: Any) -> None:
        """Starts an episode of environment `index` in its stream."""
        self.streams[index].observe_first(timestep, *extras)

    def observe(self, index: int, actions: Dict[str, Any], next_timestep: dm_env.TimeStep,
                *extras: Any) -> None:
        """Records a step of environment `index` in its stream."""
        self.streams[index].observe(actions, next_timestep, *extras)

    def abandon_episode(self, index: int) -> None:
        """Forgets environment `index`'s unwritten steps (its environment failed)."""
        self.streams[index].abandon_episode()

    def update(self, wait: bool = False) -> None:
        """Fetches the source's latest variables for the actor (see `MADQNExecutor.update`)."""
        self.actor.update(wait)


class MultiEnvironmentLoop:
    """`EnvironmentLoop` for N environments stepped together by a `MultiEnvironmentExecutor`.

    Every iteration, each running environment takes one step, all acting from
    one policy call; an environment whose episode ended counts and logs it
    (a row per episode, as `EnvironmentLoop`'s) and starts the next one at
    once. With a `step_limit`, an environment starts an episode only while the
    counter's count is below the limit, so a program stops within one episode
    per environment of its limit; once no environment runs, the loop waits for
    the program to stop. A failing environment drops its episode and starts
    another; `MAX_FAILED_EPISODES` failures in a row of one environment raise
    `EnvironmentFailure`.

    Episode counts go to the counter without waiting for its replies (see
    `step_counting`): each row is logged once its reply is read, at the start of
    an iteration after it came, and the loop waits for the replies before
    starting an episode only near the step limit, or before sending more than
    one count per environment the counter has not answered.
    """

    def __init__(self, environments: Sequence[Any], executor: MultiEnvironmentExecutor,
                 extra_log_fn: Optional[Callable[[], Dict[str, Any]]] = None,
                 stop_event: Optional[threading.Event] = None, **counting_options: Any):
        """`counting_options` are `StepCounting`'s (counter, logger, step_limit, steps_key)."""
        self._extra_log_fn = extra_log_fn
        self._stop_event = stop_event or program_stop_event()
        self.results: List[Dict[str, Any]] = []  # Every finished episode's statistics.
        self.counting = StepCounting(stop_event=self._stop_event, on_row=self.results.append,
                                     **counting_options)
        if len(environments) != executor.num_environments:
            raise ValueError(f"{len(environments)} environments for an executor acting for "
                             f"{executor.num_environments}")
        self._environments = list(environments)
        self._executor = executor
        self._with_extras = executor.observes_extras
        count = len(self._environments)
        self._timesteps: List[Optional[dm_env.TimeStep]] = [None] * count
        self._episodes: List[Optional[EpisodeStatistics]] = [None] * count
        self._finished = [False] * count  # No new episode: the step limit was reached.
        self._failures = [0] * count

    def run(self, num_steps: Optional[int] = None) -> None:
        """Steps the environments until `num_steps` environment steps were taken, the step limit
        is reached or the program stops; at the step limit it waits for the program to stop."""
        run_watched(lambda: self._run(num_steps), "environment loop")

    def _run(self, num_steps: Optional[int]) -> None:
        taken = 0
        try:
            self.counting.read_first_counts()
            while num_steps is None or taken < num_steps:
                if not self._start_episodes():
                    self.counting.settle()
                    self.counting.wait_at_the_limit()
                    return
                taken += self._step_running()
            self.counting.flush()
        except ProgramStopping:
            pass
        finally:
            self.counting.close()
            if self._stop_event.is_set():
                close_this_threads_writers()

    def step(self) -> int:
        """Starts episodes where none runs (and the limit allows), then steps every running
        environment once; returns how many stepped."""
        return self._step_running() if self._start_episodes() else 0

    def _step_running(self) -> int:
        if self._stop_event.is_set():
            raise ProgramStopping()
        running = [index for index, episode in enumerate(self._episodes) if episode is not None]
        if not running:
            return 0
        placeholder = self._timesteps[running[0]].observation
        actions = self._executor.select_actions([
            self._timesteps[index].observation if index in running else placeholder
            for index in range(len(self._environments))])
        for index in running:
            self._step_environment(index, actions[index])
        self._executor.update()
        return len(running)

    def _start_episodes(self) -> bool:
        """Resets every environment that has no episode and may start one; whether any runs."""
        self.counting.settle(wait=False)
        for index, episode in enumerate(self._episodes):
            if episode is not None or self._finished[index]:
                continue
            if self.counting.reply_needed():
                self.counting.settle()
            if self.counting.limit_reached():
                self._finished[index] = True
                continue
            try:
                timestep = self._call(index, "reset")
            except EnvironmentFailure as failure:
                self._failed(index, failure)
                continue
            self._executor.observe_first(index, timestep, *self._extras(index))
            self._timesteps[index] = timestep
            self._episodes[index] = EpisodeStatistics(timestep)
        return any(episode is not None for episode in self._episodes) or not all(self._finished)

    def _step_environment(self, index: int, actions: Dict[str, Any]) -> None:
        episode = self._episodes[index]
        episode.before_step(self._timesteps[index])
        try:
            timestep = self._call(index, "step", actions)
        except EnvironmentFailure as failure:
            self._failed(index, failure)
            return
        self._executor.observe(index, actions, timestep, *self._extras(index))
        episode.after_step(timestep)
        self._timesteps[index] = timestep
        if timestep.last():
            self._end_episode(index)

    def _end_episode(self, index: int) -> None:
        if self._stop_event.is_set():
            raise ProgramStopping()  # Before the counter call: the counter may be gone.
        episode = self._episodes[index]
        episode.end()
        self.counting.count(episode,
                            self._extra_log_fn() if self._extra_log_fn is not None else {},
                            max_unanswered=len(self._environments))
        self._episodes[index] = None
        self._failures[index] = 0

    def _failed(self, index: int, failure: EnvironmentFailure) -> None:
        """Drops environment `index`'s episode; raises after too many failures in a row."""
        self._episodes[index] = None
        self._executor.abandon_episode(index)
        self._failures[index] += 1
        if self._failures[index] >= MAX_FAILED_EPISODES:
            raise EnvironmentFailure(f"{failure}; {self._failures[index]} episodes in a row "
                                     "failed, stopping") from failure
        logging.error("%s; the episode is dropped and a new one starts", failure,
                      exc_info=failure.__cause__)

    def _extras(self, index: int) -> tuple:
        return (self._environments[index].get_extras(),) if self._with_extras else ()

    def _call(self, index: int, method: str, *args: Any) -> dm_env.TimeStep:
        return call_environment(self._environments[index], method, *args, label=f" #{index}")

