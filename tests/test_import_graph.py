"""The library's modules import one another without circles, at module level or inside functions."""

import ast
import os
from typing import Dict, List, Set

import mava_systems

PACKAGE_DIR = os.path.dirname(mava_systems.__file__)


def _module_files() -> Dict[str, str]:
    files = {}
    for directory, _, names in os.walk(PACKAGE_DIR):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, PACKAGE_DIR)[:-3]
                module = "mava_systems." + relative.replace(os.sep, ".")
                files[module[:-len(".__init__")] if module.endswith(".__init__") else module] = path
    return files


def _imports(files: Dict[str, str]) -> Dict[str, Set[str]]:
    """Each module's imports of other library modules (not of its own packages)."""
    graph = {}
    for module, path in files.items():
        with open(path) as source:
            tree = ast.parse(source.read())
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[module] = {target for target in targets
                         if target in files and target != module and target != "mava_systems"
                         and not module.startswith(target + ".")}
    return graph


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_every_module_and_its_imports():
    graph = _imports(_module_files())
    assert "mava_systems.runs.checkpointing" in graph["mava_systems.runs.replay_checkpointing"]
    assert "mava_systems.runs.checkpoint_files" in graph["mava_systems.runs.disk_space"]


def test_a_circle_of_imports_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_library_module_imports_itself_back_through_others():
    assert _cycles(_imports(_module_files())) == []
