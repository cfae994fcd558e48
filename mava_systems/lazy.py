"""Package attributes imported on first use, so that a package's light parts (its config) load
without TensorFlow.

A system package's `__init__.py` lists what it exports and where each is defined;
`from mava_systems.qmix import QMIXConfig` then imports only `qmix/config.py` (and
what it imports), while `qmix.QMIX` imports the system (and TensorFlow) when first read.
Command lines build their flags from the configs and check them before that.
"""

import importlib
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]
                 ) -> Tuple[Callable[[str], Any], Callable[[], List[str]], List[str]]:
    """The `__getattr__`, `__dir__` and `__all__` of package `package` whose submodule
    `module` defines each name of `exports[module]` (e.g. {"config": ["QMIXConfig"]})."""
    modules: Dict[str, str] = {name: f"{package}.{module}"
                               for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:  # pylint: disable=invalid-name
        if name in exports:  # A submodule, as `package.module.name` found it when eager.
            return importlib.import_module(f"{package}.{name}")
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(modules[name]), name)

    def __dir__() -> List[str]:  # pylint: disable=invalid-name
        return sorted(set(modules) | set(exports))

    return __getattr__, __dir__, sorted(modules)
