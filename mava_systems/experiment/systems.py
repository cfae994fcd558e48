"""What the experiment needs to know of a registered system class, read from the class itself.

Systems differ in how their acting nodes are named: multi-agent systems have
executors (`num_executors`, `max_executor_steps`), Acme-style single-agent ones
actors (`num_actors`, `max_actor_steps`). The name is the system's
`executors_group`, checked against its constructor, so a new system needs no
entry anywhere to join an experiment.
"""

import inspect
from typing import Any, Dict, Optional

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def constructor_parameters(system_class: Any) -> Dict[str, inspect.Parameter]:
    """The constructor's named parameters, with those its `**kwargs` pass on to base classes'.

    A subclass such as `QMIX(*args, mixer_factory=None, **kwargs)` takes MADQN's
    arguments too: the first definition of each name along the MRO wins.
    """
    parameters: Dict[str, inspect.Parameter] = {}
    for cls in system_class.__mro__:
        if "__init__" not in cls.__dict__:
            continue
        signature = inspect.signature(cls.__dict__["__init__"])
        for name, parameter in signature.parameters.items():
            if parameter.kind in _NAMED and name != "self":
                parameters.setdefault(name, parameter)
        if not any(parameter.kind == inspect.Parameter.VAR_KEYWORD
                   for parameter in signature.parameters.values()):
            break
    return parameters


def acting_node_name(system_class: Any) -> str:
    """"executor" or "actor": the name in the system's `num_<name>s`/`max_<name>_steps` arguments.

    Raises:
      ValueError: if the constructor does not take the arguments its group name implies.
    """
    name = system_class.executors_group
    parameters = constructor_parameters(system_class)
    missing = [argument for argument in (f"num_{name}s", f"max_{name}_steps")
               if argument not in parameters]
    if missing:
        raise ValueError(f"{system_class.__qualname__} has executors_group {name!r} but its "
                         f"constructor takes no {', '.join(missing)}")
    return name


def default_num_caches(system_class: Any) -> Optional[int]:
    """The constructor's default `num_caches`, or None if the system fixes its caches itself."""
    parameter = constructor_parameters(system_class).get("num_caches")
    if parameter is None:
        return None
    return parameter.default if parameter.default is not inspect.Parameter.empty else 0


def step_limit_flag(system_class: Any) -> str:
    """The example flag that sets the system's step limit, e.g. `max_executor_steps`."""
    return f"max_{acting_node_name(system_class)}_steps"
