"""Every system by name: a system class registers itself when it is defined.

A class deriving from `DistributedSystem` that sets its own `system_name`
joins the registry (see `DistributedSystem.__init_subclass__`); a subclass that
keeps its parent's name does not replace the parent. Tools that take a system
by name (`evaluate`, experiment grids) look it up here, so a new system joins
them by being defined, not by editing those tools.
"""

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
from typing import Any, Dict, Iterator, List, Mapping, Type

from absl import flags

from wrappers import registry as wrappers_registry

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
    for path in _system_modules():
        importlib.import_module(f"mava_systems.{os.path.basename(os.path.dirname(path))}.system")


def _system_modules() -> List[str]:
    """The paths of mava_systems' system modules (each system package's `system.py`)."""
    package_dir = os.path.dirname(__file__)
    return [os.path.join(package_dir, module.name, "system.py")
            for module in pkgutil.iter_modules([package_dir])
            if module.ispkg and os.path.exists(os.path.join(package_dir, module.name, "system.py"))]


def builtin_system_paths() -> Dict[str, str]:
    """The names mava_systems' own systems register under, each with its class's "module:Class"
    path, read from their modules' source (`system_name = "..."` in a class body) without
    importing them (nor TensorFlow): for command lines to refuse an unknown name at once and
    define a system's flags before importing it."""
    paths = {}
    for path in _system_modules():
        module = f"mava_systems.{os.path.basename(os.path.dirname(path))}.system"
        for node in ast.walk(ast.parse(_read(path))):
            if isinstance(node, ast.ClassDef):
                name = _constant_assigned(node, "system_name")
                if name is not _NOT_DECLARED:
                    paths[name] = f"{module}:{node.name}"
    return dict(sorted(paths.items()))


def builtin_system_names() -> List[str]:
    """The names mava_systems' own systems register under, sorted (see `builtin_system_paths`)."""
    return list(builtin_system_paths())


_NOT_DECLARED = object()


def _constant_assigned(class_node: ast.ClassDef, attribute: str) -> Any:
    """The literal `class_node`'s body assigns to `attribute`, or `_NOT_DECLARED`."""
    for statement in class_node.body:
        if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                and any(isinstance(target, ast.Name) and target.id == attribute
                        for target in statement.targets)):
            return statement.value.value
    return _NOT_DECLARED


def declared_attribute(path: str, attribute: str, default: Any = None) -> Any:
    """The literal value class `path` ("module:Class") assigns to `attribute` in its body, or
    the nearest base class does (bases searched depth first, left to right, among classes whose
    modules can be found), read from source without importing the class (nor TensorFlow):
    `default` if none does. For command lines to define their flags before importing a system.

    Raises:
      ImportError: if the module's source or the class cannot be found.
    """
    module_name, _, class_name = path.partition(":")
    value = _declared(module_name, class_name,
                      lambda node, resolve: _constant_assigned(node, attribute), set())
    return default if value is _NOT_DECLARED else value


def declared_class(path: str, attribute: str) -> str:
    """The "module:Class" path of the class that class `path` (or its nearest base, as
    `declared_attribute` searches) assigns by name to `attribute` (e.g. `config_class =
    MADQNConfig`), read from source.

    Raises:
      ImportError: if no such assignment of an imported or local class is found.
    """
    def assigned(node: ast.ClassDef, resolve) -> Any:
        for statement in node.body:
            if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name)
                    and any(isinstance(target, ast.Name) and target.id == attribute
                            for target in statement.targets)):
                found = resolve(statement.value)
                return _NOT_DECLARED if found is None else ":".join(found)
        return _NOT_DECLARED

    module_name, _, class_name = path.partition(":")
    value = _declared(module_name, class_name, assigned, set())
    if value is _NOT_DECLARED:
        raise ImportError(f"{path} assigns no class to {attribute} in source")
    return value


NO_PARAMETER = object()  # `declared_parameter_default`: the constructor takes no such argument.
REQUIRED = object()  # `declared_parameter_default`: the argument has no default.


def declared_parameter_default(path: str, parameter: str) -> Any:
    """The literal default of class `path`'s constructor argument `parameter`, read from source
    along the constructors that pass `**kwargs` on to their bases (as
    `experiment.systems.constructor_parameters` reads signatures): `NO_PARAMETER` if no
    constructor takes it, `REQUIRED` if it has no default.

    Raises:
      ImportError: if a module's source or a class cannot be found, or a default is not a
        literal.
    """
    def default_in(node: ast.ClassDef, resolve) -> Any:
        del resolve
        init = next((statement for statement in node.body
                     if isinstance(statement, ast.FunctionDef) and statement.name == "__init__"),
                    None)
        if init is None:
            return _NOT_DECLARED  # Inherited: the bases'.
        arguments = init.args
        positional = arguments.posonlyargs + arguments.args
        defaults = dict(zip([argument.arg for argument in positional[len(positional)
                                                                      - len(arguments.defaults):]],
                            arguments.defaults))
        defaults.update({argument.arg: default for argument, default
                         in zip(arguments.kwonlyargs, arguments.kw_defaults) if default})
        names = [argument.arg for argument in positional + arguments.kwonlyargs]
        if parameter in names:
            if parameter not in defaults:
                return REQUIRED
            try:
                return ast.literal_eval(defaults[parameter])
            except ValueError as error:
                raise ImportError(f"{path}: the default of {parameter} is not a literal") \
                    from error
        return _NOT_DECLARED if arguments.kwarg else NO_PARAMETER

    module_name, _, class_name = path.partition(":")
    value = _declared(module_name, class_name, default_in, set())
    return NO_PARAMETER if value is _NOT_DECLARED else value


def _declared(module_name: str, class_name: str, lookup, seen: set) -> Any:
    """`lookup(class node, resolve)` for the class, else for its bases in turn (depth first),
    where `resolve(name node)` gives the (module, class) a local name stands for, or None."""
    if (module_name, class_name) in seen:
        return _NOT_DECLARED
    seen.add((module_name, class_name))
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ImportError(f"no source of module {module_name}")
    tree = ast.parse(_read(spec.origin))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if class_name not in classes:
        raise ImportError(f"{module_name} defines no class {class_name}")
    imported = {}  # Local name: (module, name) of `from module import name [as local]`.
    modules = {}  # Local name: module of `import module [as local]`.
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.update({alias.asname or alias.name: (node.module, alias.name)
                             for alias in node.names})
        elif isinstance(node, ast.Import):
            modules.update({alias.asname or alias.name: alias.name for alias in node.names})

    def resolve(node: ast.expr) -> Any:
        if isinstance(node, ast.Name) and node.id in classes:
            return (module_name, node.id)
        if isinstance(node, ast.Name) and node.id in imported:
            return imported[node.id]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            return (modules[node.value.id], node.attr)
        return None

    value = lookup(classes[class_name], resolve)
    if value is not _NOT_DECLARED:
        return value
    for base in classes[class_name].bases:
        found = resolve(base)
        if found is None:
            continue
        try:
            value = _declared(*found, lookup, seen)
        except (ImportError, ValueError):  # A base outside source we can read.
            continue
        if value is not _NOT_DECLARED:
            return value
    return _NOT_DECLARED


def known_system_names() -> List[str]:
    """The names of mava_systems' own systems and of those imported modules registered so far,
    sorted, without importing any system."""
    return sorted(set(builtin_system_names()) | set(_SYSTEMS))


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


# What a module that can be imported without launching anything holds.
_MAIN_GUARD = re.compile(r"""__name__\s*==\s*["']__main__["']""")
# The start of the module name a launching script is imported under when a run of one of its
# classes is reloaded (then the script's name and a digest of its path).
SCRIPT_MODULE_PREFIX = "mava_systems_script_"


def recorded_location(cls: Type) -> Dict[str, str]:
    """How run.json records `cls` so that another process (`evaluate`, a resume) imports it:
    `system_class` (its `class_path`) and, for a class defined in the launching script,
    `system_script` (the script's absolute path; its `module` part is then `__main__`).

    A script is recorded only if it guards its launch with `if __name__ == "__main__":`, so
    that importing it launches nothing. A run started with `python -m package.module` records
    the module's importable name.

    Raises:
      ValueError: saying to move the class into a module, if it sets its own `system_name`
        but no other process could import it (defined in a function, in an interactive
        session, or in a script without that guard). A class that keeps its parent's name is
        recorded as it is: it is rebuilt as its parent when it cannot be imported.
    """
    location = {"system_class": class_path(cls)}
    problem = None
    module = sys.modules.get(cls.__module__)
    if "<locals>" in cls.__qualname__:
        problem = "is defined inside a function"
    elif cls.__module__ != "__main__" and not wrappers_registry.importable_as(
            cls.__module__, getattr(module, "__file__", None)):
        location["system_script"] = os.path.abspath(module.__file__)  # Imported by its path.
    elif cls.__module__ == "__main__":
        main = sys.modules["__main__"]
        spec = getattr(main, "__spec__", None)
        script = getattr(main, "__file__", None)
        if spec is not None and spec.name and spec.name != "__main__":
            location["system_class"] = f"{spec.name}:{cls.__qualname__}"
            script = spec.origin
        elif script:
            location["system_script"] = os.path.abspath(script)
        if not script or not os.path.exists(script):
            problem = "is defined in an interactive session"
        elif not _MAIN_GUARD.search(_read(script)):
            problem = (f"is defined in {script}, which launches on import (it has no "
                       f"`if __name__ == \"__main__\":` guard)")
    if problem and cls.__dict__.get("system_name"):
        raise ValueError(
            f"system class {cls.__qualname__} ({cls.system_name!r}) {problem}, so evaluate and "
            f"resumes could not load it: move it into a module (or a script whose launch is under "
            f"`if __name__ == \"__main__\":`)")
    return location


@contextlib.contextmanager
def _flags_set_aside() -> Iterator[None]:
    """Lets a script define absl flags on import (as `launch.example_main` does) that this process
    has too (e.g. `--run_dir`), and drops them afterwards: this process's flags are kept."""
    before = {name: flags.FLAGS[name] for name in flags.FLAGS}
    made_overridable = [flag for flag in set(before.values()) if not flag.allow_override]
    for flag in made_overridable:
        flag.allow_override = True
    try:
        yield
    finally:
        for flag in made_overridable:
            flag.allow_override = False
        for name in list(flags.FLAGS):
            if flags.FLAGS[name] is not before.get(name):
                delattr(flags.FLAGS, name)
        for name, flag in before.items():
            if name not in flags.FLAGS:
                flags.FLAGS[name] = flag


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as source:
        return source.read()


def import_script(script: str, flags_aside: bool = True) -> Any:
    """The module a `.py` file defines, imported by its path (once per process, under a name made
    of its stem and a digest of its path, unless already imported under another name).

    With `flags_aside`, absl flags the file defines as it is imported are dropped afterwards
    (see `_flags_set_aside`), and so are those of libraries it imports first: a module imported
    before anything is launched (a system module) keeps them.

    Raises:
      ImportError: if the file is gone; whatever its code raises.
    """
    script = os.path.abspath(script)
    if not os.path.exists(script):
        raise ImportError(f"no file {script}")
    loaded = wrappers_registry.loaded_module(script)
    if loaded is not None:
        return loaded
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(script))[0])
    digest = hashlib.sha1(script.encode()).hexdigest()[:8]
    name = f"{SCRIPT_MODULE_PREFIX}{stem}_{digest}"  # Scripts of one name in two folders differ.
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(script))  # Its sibling modules, as when it ran.
    try:
        with _flags_set_aside() if flags_aside else contextlib.nullcontext():
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path.remove(os.path.dirname(script))
    return module


def import_recorded_class(location: Mapping[str, Any]) -> Type:
    """The class `recorded_location` recorded: imported from its module, or from its script.

    Raises:
      ImportError: if the module or script cannot be imported or does not define it.
    """
    path, script = location["system_class"], location.get("system_script")
    if not script:
        return import_class(path)
    if not os.path.exists(script):
        raise ImportError(f"the script {script} that defines {path.partition(':')[2]} is gone")
    module = import_script(script)
    return import_class(f"{module.__name__}:{path.partition(':')[2]}")


def import_system_module(module: str) -> List[str]:
    """Imports a researcher's module (a name, or a `.py` file's path) that defines system classes;
    returns the names of the systems it defines (they join the registry as they are defined).

    Raises:
      ValueError: if the file is missing, the module cannot be imported, or it defines no system.
    """
    if module.endswith(".py") and not os.path.isfile(module):
        raise ValueError(f"system module {module!r}: no such file")
    try:
        imported = (import_script(module, flags_aside=False) if module.endswith(".py")
                    else importlib.import_module(module))
    except Exception as error:  # pylint: disable=broad-except
        raise ValueError(f"cannot import the system module {module!r}: "
                         f"{type(error).__name__}: {error}") from None
    load_builtin_systems()
    names = sorted(name for name, cls in _SYSTEMS.items() if cls.__module__ == imported.__name__)
    if not names:
        raise ValueError(f"system module {module!r} defines no system: a class deriving from "
                         "mava_systems.system.DistributedSystem with its own system_name "
                         f"(registered systems: {', '.join(sorted(_SYSTEMS))})")
    return names


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
