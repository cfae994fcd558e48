"""How the wrappers read an environment's global state, with repairs for envs whose `state()` breaks.

A state reader takes the PettingZoo environment and returns its global state as a float32 array
of the env's `state_space` shape.
"""

from typing import Any, Callable, Dict

import numpy as np

StateReader = Callable[[Any], np.ndarray]


def pettingzoo_state(env: Any) -> np.ndarray:
    """The env's own `state()`."""
    return env.state()


def multiwalker_state(env: Any) -> np.ndarray:
    """multiwalker's global state (every walker's own 24 readings, then the package's x, y, angle).

    PettingZoo's `state()` raises AttributeError once a fallen walker has been removed from the
    world (`remove_on_fall`, the default), i.e. on the last step of every episode that ends in a
    fall. A removed walker's observation is all zeros in the env itself; its part of the state is
    zeros here too. Everything else is what PettingZoo's `state()` computes.
    """
    world = env.unwrapped.env
    size = (int(np.prod(env.state_space.shape)) - 3) // world.n_walkers
    walker_parts = [
        np.zeros(size, np.float32) if walker.hull is None else np.asarray(walker.get_observation(), np.float32)
        for walker in world.walkers
    ]
    package = world.package
    package_part = np.array([package.position.x, package.position.y, package.angle], np.float32)
    return np.concatenate(walker_parts + [package_part])


# Environment name -> its state reader, where PettingZoo's own `state()` cannot be used as it is.
STATE_READERS: Dict[str, StateReader] = {
    "sisl/multiwalker_v9": multiwalker_state,
}


def state_reader(name: str) -> StateReader:
    """The state reader for the environment called `name` ("<family>/<env>")."""
    return STATE_READERS.get(name, pettingzoo_state)
