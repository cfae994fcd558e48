"""What a node's handles become on Ray: proxies that reach the other nodes' actors.

A Courier handle becomes a `CourierProxy`: `proxy.method(*args)` calls the
method on the object of the node's actor (`proxy.futures.method(*args)` returns
a `concurrent.futures.Future` instead). A Reverb handle becomes a
`reverb.Client` of the address the replay actor serves at, asked when the
node is constructed, so a node made after a replay restart gets the new one.
"""

import concurrent.futures
import copy
import time
from typing import Any, Callable, Dict, Tuple

from launchpad.nodes import base as lp_base
from launchpad.nodes import dereference
import ray
import tree

# How long a call waits for a node that is restarting before it gives up.
RESTART_WAIT_S = 180.0
_RETRY_INTERVAL_S = 0.25


def _retrying(function: Callable[[], Any], what: str) -> Any:
    """`function()`, retried while the actor it reaches is restarting (up to `RESTART_WAIT_S`)."""
    deadline = time.monotonic() + RESTART_WAIT_S
    while True:
        try:
            return function()
        except (ray.exceptions.RayActorError, ValueError) as error:
            # RayActorError: the actor died during the call or is restarting; ValueError:
            # `ray.get_actor` found no actor of that name yet.
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: the node did not come back within "
                                   f"{RESTART_WAIT_S:.0f} s ({error})") from error
            time.sleep(_RETRY_INTERVAL_S)


class NodeRef(dereference.Dereferenceable):
    """A picklable reference to the actor of node `name` (e.g. "trainer/0")."""

    def __init__(self, name: str, namespace: str):
        self.name = name
        self.namespace = namespace
        self._actor = None

    def actor(self) -> Any:
        """The node's Ray actor handle (looked up once; Ray follows its restarts)."""
        if self._actor is None:
            self._actor = _retrying(lambda: ray.get_actor(self.name, namespace=self.namespace),
                                    f"finding node {self.name}")
        return self._actor

    def __getstate__(self) -> Dict[str, Any]:
        return {"name": self.name, "namespace": self.namespace, "_actor": None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CourierRef(NodeRef):
    """Stands for a Courier handle; dereferences to a `CourierProxy`."""

    def dereference(self) -> "CourierProxy":
        return CourierProxy(self)


class ReverbRef(NodeRef):
    """Stands for a Reverb handle; dereferences to a `reverb.Client` of the replay's address."""

    def dereference(self) -> Any:
        import reverb  # pylint: disable=g-import-not-at-top  (TensorFlow: only where needed)
        return reverb.Client(self.address())

    def address(self) -> str:
        """`host:port` the replay actor serves at (waits until it does)."""
        return _retrying(lambda: ray.get(self.actor().address.remote()),
                         f"asking {self.name} for its address")


class _Futures:
    """`proxy.futures.method(*args)`: the call's `concurrent.futures.Future`."""

    def __init__(self, ref: CourierRef):
        self._ref = ref

    def __getattr__(self, method: str) -> Callable[..., concurrent.futures.Future]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args, **kwargs) -> concurrent.futures.Future:
            return self._ref.actor().call.remote(method, args, kwargs).future()

        return call


class CourierProxy:
    """Calls the public methods of another node's object through its Ray actor.

    A call made while that node restarts waits for it to come back (see
    `RESTART_WAIT_S`). Thread-safe, like a Courier client.
    """

    def __init__(self, ref: CourierRef):
        self._ref = ref
        self.futures = _Futures(ref)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args, **kwargs) -> Any:
            return _retrying(
                lambda: ray.get(self._ref.actor().call.remote(method, args, kwargs)),
                f"{self._ref.name}.{method}")

        return call

    def __reduce__(self) -> Tuple[Any, ...]:
        return (CourierProxy, (self._ref,))


def substitute_handles(structure: Any, refs: Dict[int, NodeRef]) -> Any:
    """`structure` with every Launchpad handle (also in `lp.Deferred`) replaced by its `NodeRef`.

    `refs` maps `id(address)` of each node's address to the reference of its actor.
    """

    def substitute(item: Any) -> Any:
        if isinstance(item, dereference.Deferred):
            # pylint: disable=protected-access
            deferred = copy.copy(item)
            deferred._args, deferred._kwargs = substitute_handles(
                (item._args, item._kwargs), refs)
            return deferred
        if isinstance(item, lp_base.Handle):
            address = getattr(item, "_address", None)
            if id(address) not in refs:
                raise ValueError(f"the Ray launcher cannot pass a {type(item).__name__} "
                                 "(only handles of the program's Courier and Reverb nodes)")
            return refs[id(address)]
        return item

    return tree.map_structure(substitute, structure)
