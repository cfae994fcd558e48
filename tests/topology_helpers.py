"""Reading a built Launchpad program: which node a handle refers to, and who reads from whom.

Launchpad's `program.add_node` returns a new handle wrapping the node's own
`Address` object, so a handle in another node's arguments is matched to its
node by `handle._address is node._address`.
"""

import cloudpickle
import launchpad as lp
from launchpad.nodes.reverb.node import ReverbHandle

from mava_systems.nodes.cacher import CacherNode, VariableCache


def node_of(handle, program):
    """The one node of `program` that `handle` refers to."""
    found = [node for node in program.get_all_nodes() if handle._address is node._address]
    assert len(found) == 1, (handle, found)
    return found[0]


def check_cachers(program, source, count):
    """`count` distinct caches in the cacher group, each in front of `source`, 2 s refresh, 4 s stale."""
    cachers = program.groups.get("cacher", [])
    assert len(cachers) == count
    for cacher in cachers:
        assert isinstance(cacher, CacherNode) and cacher._constructor is VariableCache
        (source_handle,) = cacher._args
        assert node_of(source_handle, program) is source
        assert cacher._kwargs == {"refresh_interval_ms": 2000, "stale_after_ms": 4000}
    assert len({id(cacher._address) for cacher in cachers}) == count
    return cachers


def check_replay(program, system):
    """The single Reverb node of the replay group, serving `system.replay`."""
    (replay,) = program.groups["replay"]
    assert isinstance(replay, lp.ReverbNode) and replay._priority_tables_fn == system.replay
    return replay


def is_handle_of(handle, node):
    """Whether `handle` refers to `node` (Reverb handles included)."""
    if isinstance(node, lp.ReverbNode):
        return isinstance(handle, ReverbHandle) and handle._address is node._address
    return handle._address is node._address


def check_picklable(program):
    """Every node's constructor and arguments survive cloudpickle (local_mp pickles them)."""
    for nodes in program.groups.values():
        for node in nodes:
            payload = (node._priority_tables_fn if isinstance(node, lp.ReverbNode)
                       else (node._constructor, node._args, node._kwargs))
            cloudpickle.loads(cloudpickle.dumps(payload))
