"""What the experiment needs to know of a registered system class, read from the class itself.

Systems differ in how their acting nodes are named: multi-agent systems have
executors (`num_executors`, `max_executor_steps`), Acme-style single-agent ones
actors (`num_actors`, `max_actor_steps`). The name is the system's
`executors_group`, checked against its constructor, so a new system needs no
entry anywhere to join an experiment.
"""

import inspect
from typing import Any, Optional


def acting_node_name(system_class: Any) -> str:
    """"executor" or "actor": the name in the system's `num_<name>s`/`max_<name>_steps` arguments.

    Raises:
      ValueError: if the constructor does not take the arguments its group name implies.
    """
    name = system_class.executors_group
    parameters = inspect.signature(system_class.__init__).parameters
    missing = [argument for argument in (f"num_{name}s", f"max_{name}_steps")
               if argument not in parameters]
    if missing:
        raise ValueError(f"{system_class.__qualname__} has executors_group {name!r} but its "
                         f"constructor takes no {', '.join(missing)}")
    return name


def default_num_caches(system_class: Any) -> Optional[int]:
    """The constructor's default `num_caches`, or None if the system fixes its caches itself."""
    parameter = inspect.signature(system_class.__init__).parameters.get("num_caches")
    if parameter is None:
        return None
    return parameter.default if parameter.default is not inspect.Parameter.empty else 0


def step_limit_flag(system_class: Any) -> str:
    """The example flag that sets the system's step limit, e.g. `max_executor_steps`."""
    return f"max_{acting_node_name(system_class)}_steps"
