"""The names launchers give a Launchpad program's nodes: "<group>/<index>", e.g. "executor/0"."""

from typing import Any, Iterator, List, Tuple


def named_nodes(program: Any) -> Iterator[Tuple[str, str, Any]]:
    """(name, group, node) of every node of `program`, group by group, e.g. ("executor/0",
    "executor", <node>)."""
    for group, nodes in program.groups.items():
        for index, node in enumerate(nodes):
            yield f"{group}/{index}", group, node


def node_names(program: Any) -> List[str]:
    """The name of every node of `program`, e.g. ["replay/0", "executor/0"]."""
    return [name for name, _, _ in named_nodes(program)]


def group_of(node_name: str) -> str:
    """"executor" for "executor/0"."""
    return node_name.rsplit("/", 1)[0]
