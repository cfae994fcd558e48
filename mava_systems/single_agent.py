"""Checks that a single-agent system was given a one-agent environment with the right kind of actions."""

from typing import Any

from dm_env import specs

from mava_systems.specs import MAEnvironmentSpec


def single_agent_spec(environment_factory: Any, system: str, discrete: bool,
                      seed: int = 0) -> MAEnvironmentSpec:
    """The spec of the environment `environment_factory` makes, checked for `system`.

    Raises:
      ValueError: naming the problem, if the environment does not have exactly
        one agent, or its actions are not discrete (when `discrete`) or not a
        continuous float vector (otherwise).
    """
    if not callable(environment_factory):
        raise ValueError(f"environment_factory must be callable, got {environment_factory!r}")
    environment = environment_factory(evaluation=False, seed=seed)
    try:
        spec = MAEnvironmentSpec.from_environment(environment)
    finally:
        environment.close()
    if len(spec.agents) != 1:
        raise ValueError(
            f"{system} is a single-agent system but {environment_factory!r} has "
            f"{len(spec.agents)} agents {spec.agents}; use a multi-agent system (e.g. MADQN)")
    (agent,) = spec.agents
    action_spec = spec.actions[agent]
    is_discrete = isinstance(action_spec, specs.DiscreteArray)
    if discrete and not is_discrete:
        raise ValueError(
            f"{system} needs discrete actions, but {environment_factory!r} has continuous actions "
            f"{action_spec}; use a continuous-action system such as DMPO")
    if not discrete and (is_discrete or not isinstance(action_spec, specs.BoundedArray)
                         or len(action_spec.shape) != 1):
        raise ValueError(
            f"{system} needs continuous actions (a bounded float vector), but {environment_factory!r} "
            f"has actions {action_spec}; use a discrete-action system such as DQN")
    return spec
