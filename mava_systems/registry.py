"""Every system by name: a system class registers itself when it is defined.

A class deriving from `DistributedSystem` that sets its own `system_name`
joins the registry (see `DistributedSystem.__init_subclass__`); a subclass that
keeps its parent's name does not replace the parent. Tools that take a system
by name (`evaluate`, experiment grids) look it up here, so a new system joins
them by being defined, not by editing those tools.
"""

import importlib
import os
import pkgutil
from typing import Dict, List, Type

_SYSTEMS: Dict[str, Type] = {}


def register(system_class: Type) -> Type:
    """Registers `system_class` under its `system_name`; returns it (usable as a decorator).

    Raises:
      ValueError: if the name is empty, or another class (not a re-definition
        of the same one, as when a module is run again) already holds it.
    """
    name = system_class.system_name
    if not name:
        raise ValueError(f"{system_class.__qualname__} has no system_name to register under")
    holder = _SYSTEMS.get(name)
    if holder is not None and class_path(holder) != class_path(system_class):
        raise ValueError(f"system name {name!r} is taken by {class_path(holder)}; "
                         f"give {class_path(system_class)} another system_name")
    _SYSTEMS[name] = system_class
    return system_class


def load_builtin_systems() -> None:
    """Imports every system package of mava_systems (a subpackage with a `system` module)."""
    package_dir = os.path.dirname(__file__)
    for module in pkgutil.iter_modules([package_dir]):
        if module.ispkg and os.path.exists(os.path.join(package_dir, module.name, "system.py")):
            importlib.import_module(f"mava_systems.{module.name}")


def system_names() -> List[str]:
    """The names of every registered system, built-in ones included, sorted."""
    load_builtin_systems()
    return sorted(_SYSTEMS)


def system_class(name: str) -> Type:
    """The system class registered as `name`.

    Raises:
      ValueError: naming the available systems, if none is registered as `name`.
    """
    load_builtin_systems()
    if name not in _SYSTEMS:
        raise ValueError(f"unknown system {name!r}; available: {', '.join(sorted(_SYSTEMS))}")
    return _SYSTEMS[name]


def class_path(cls: Type) -> str:
    """`module:QualifiedName` of a class, as recorded in run.json."""
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(path: str) -> Type:
    """The class a `class_path` names.

    Raises:
      ImportError: if its module cannot be imported or does not define it.
    """
    module_name, _, qualified_name = path.partition(":")
    target = importlib.import_module(module_name)
    for part in qualified_name.split("."):
        if not hasattr(target, part):
            raise ImportError(f"{module_name} defines no {qualified_name}")
        target = getattr(target, part)
    return target
