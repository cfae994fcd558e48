"""The evaluator node's object of a `DistributedSystem`: by executor steps or on the clock.

Both schedules play rounds of greedy episodes with one set of variables per
round (the executor's own periodic variable updates are off) on the same
evaluation seeds every round, and log them against the executor steps.
"""

from typing import Any, Callable, Tuple

from acme.utils import counting

from mava_systems.acting.environment_loop import EnvironmentLoop
from mava_systems.nodes.evaluation import Evaluator, FixedSeedLoop
from mava_systems.nodes.step_evaluation import StepEvaluator

# The evaluator's seed is the run's seed plus this (executors take the run's seed plus 1, 2, ...).
EVALUATOR_SEED_OFFSET = 10_000


class FixedVariables:
    """An executor whose `update()` does nothing: the evaluator sets its variables per round."""

    def __init__(self, executor: Any):
        self._executor = executor

    def update(self, wait: bool = False) -> None:
        """Keeps the variables the round started with."""
        del wait

    def __getattr__(self, name: str) -> Any:
        return getattr(self._executor, name)


def snapshot_functions(variable_source: Any, variable_client: Any
                       ) -> Tuple[Callable[[], Any], Callable[[Any], None]]:
    """`take()`, fetching the variables `variable_client` follows from `variable_source`, and
    `load(variables)`, copying them into its variables as its own fetches do."""
    # Acme's VariableClient keeps its keys and its copy as private members; a fetch of our own
    # goes through the same two.
    keys = list(variable_client._keys)  # pylint: disable=protected-access
    return (lambda: variable_source.get_variables(keys),
            variable_client._copy)  # pylint: disable=protected-access


def make_evaluator(system: Any, variable_source: Any, counter: Any) -> Any:
    """`system`'s evaluator node object: a `StepEvaluator` when its config evaluates by steps
    (`counter` must then be the counter node keeping the schedule), else an `Evaluator` on the
    clock."""
    config = system.config
    seed = config.seed + EVALUATOR_SEED_OFFSET
    executor, variable_client = system.greedy_executor(variable_source, seed)
    executor = FixedVariables(executor)
    # Synced at every episode: a round logs the counts as they stand when it ends.
    evaluator_counter = counting.Counter(counter, prefix="evaluator", time_delta=0.0)
    batched_rounds = getattr(system, "batched_evaluation_rounds", None)
    loop = batched_rounds and batched_rounds(executor, variable_client, seed,
                                             config.episodes_per_evaluation, evaluator_counter)
    if loop is None:
        loop = FixedSeedLoop(
            lambda: system.environment_factory(evaluation=True, seed=seed),
            lambda environment: EnvironmentLoop(environment, executor, evaluator_counter))
    take, load = snapshot_functions(variable_source, variable_client)
    by_steps = config.evaluates_by_steps
    evaluator = Evaluator(loop, variable_client.update_and_wait, evaluator_counter,
                          system.node_logger("evaluator", "executor_steps"),
                          config.episodes_per_evaluation,
                          0.0 if by_steps else config.evaluation_interval_s,
                          config.evaluation_max_cpu_share,
                          videos=system.evaluation_videos(executor), load_variables=load)
    if not by_steps:
        return evaluator
    if system.evaluates_served_variables:
        # The variables the executor acted with at each step (see nodes/lockstep.py).
        keys = list(variable_client._keys)  # pylint: disable=protected-access
        return StepEvaluator(evaluator, counter,
                             lambda step: variable_source.served_variables(keys, step),
                             step_limit=system.max_executor_steps, snapshot_of_step=True)
    return StepEvaluator(evaluator, counter, take, step_limit=system.max_executor_steps)
