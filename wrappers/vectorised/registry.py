"""Which environments have a vectorised implementation, and building one by name.

Names are the registry's (`"<family>/<env>"`, see `wrappers.make_environment_factory`);
`env_kwargs` are those the family's reference environment takes.
"""

import dataclasses
import difflib
from typing import Any, Callable, Dict, List, Optional

import gymnasium

from wrappers.vectorised.base import BatchedEnvironment

# make(env_name, num_envs, **env_kwargs) -> BatchedEnvironment
BatchedMaker = Callable[..., BatchedEnvironment]


@dataclasses.dataclass(frozen=True)
class VectorisedFamily:
    """A family's vectorised environments.

    Attributes:
      make: `make(env_name, num_envs, **env_kwargs)`, the B environments.
      names: the environment names (the part after "/") it implements.
    """

    make: BatchedMaker
    names: Callable[[], List[str]]


def _lbf_ids() -> List[str]:
    """lbforaging's registered ids with vector observations (those imported with the package,
    and no grid-observation id `lbforaging.register_grid_envs()` may have added)."""
    import lbforaging  # pylint: disable=import-outside-toplevel,unused-import
    return [env_id for env_id, spec in gymnasium.envs.registry.items()
            if str(spec.entry_point).startswith("lbforaging.") and not spec.kwargs.get("grid_observation")]


def _make_lbf(env_name: str, num_envs: int, **env_kwargs: Any) -> BatchedEnvironment:
    from wrappers.vectorised.lbf import VectorisedForaging  # pylint: disable=import-outside-toplevel
    kwargs = {**gymnasium.spec(env_name).kwargs, **env_kwargs}
    try:
        return VectorisedForaging(num_envs, **kwargs)
    except TypeError as error:
        raise ValueError(f"vectorised lbf/{env_name}: {error}") from None


def _make_mpe(env_name: str, num_envs: int, **env_kwargs: Any) -> BatchedEnvironment:
    from wrappers.vectorised.mpe import VectorisedSimpleSpread  # pylint: disable=import-outside-toplevel
    try:
        return VectorisedSimpleSpread(num_envs, **env_kwargs)
    except TypeError as error:
        raise ValueError(f"vectorised mpe/{env_name}: {error}") from None


def _rware_ids() -> List[str]:
    """rware's registered ids with flattened vector observations (those imported with the package,
    and no image-observation id `rware.image_registration()` may have added)."""
    from rware.warehouse import ObservationType  # pylint: disable=import-outside-toplevel
    return [env_id for env_id, spec in gymnasium.envs.registry.items()
            if str(spec.entry_point).startswith("rware.")
            and spec.kwargs.get("observation_type", ObservationType.FLATTENED) == ObservationType.FLATTENED]


def _make_rware(env_name: str, num_envs: int, **env_kwargs: Any) -> BatchedEnvironment:
    from wrappers.vectorised.rware import VectorisedWarehouse  # pylint: disable=import-outside-toplevel
    if "max_episode_steps" in env_kwargs:  # the registry's name for the package's own `max_steps`
        env_kwargs["max_steps"] = env_kwargs.pop("max_episode_steps")
    kwargs = {**gymnasium.spec(env_name).kwargs, **env_kwargs}
    try:
        return VectorisedWarehouse(num_envs, **kwargs)
    except TypeError as error:
        raise ValueError(f"vectorised rware/{env_name}: {error}") from None


_FAMILIES: Dict[str, VectorisedFamily] = {
    "lbf": VectorisedFamily(_make_lbf, _lbf_ids),
    "mpe": VectorisedFamily(_make_mpe, lambda: ["simple_spread_v3"]),
    "rware": VectorisedFamily(_make_rware, _rware_ids),
}


def vectorised_families() -> Dict[str, List[str]]:
    """Every vectorised environment name, by family."""
    return {family: spec.names() for family, spec in _FAMILIES.items()}


def vectorised_implementation(name: str) -> Optional[BatchedMaker]:
    """`make(num_envs, **env_kwargs)` for the vectorised `name`; None if its family has none.

    Raises:
      ValueError: if `name`'s family has vectorised environments but not this one (the
        message lists them, or their number and the closest names).
    """
    family, sep, env_name = name.partition("/")
    spec = _FAMILIES.get(family) if sep else None
    if spec is None:
        return None
    names = spec.names()
    if env_name not in names:
        close = difflib.get_close_matches(env_name, names, n=5, cutoff=0.6)
        listing = (", ".join(sorted(names)) if len(names) <= 30
                   else f"{len(names)} environments")
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise ValueError(f"no vectorised implementation of {name!r}: family {family!r} has "
                         f"{listing}{hint}")
    return lambda num_envs, **env_kwargs: spec.make(env_name, num_envs, **env_kwargs)


def make_vectorised_environment(name: str, num_envs: int, **env_kwargs: Any) -> BatchedEnvironment:
    """`num_envs` environments `name` stepped together (see `BatchedEnvironment`).

    Raises:
      ValueError: if `name` has no vectorised implementation (naming those there are).
    """
    make = vectorised_implementation(name)
    if make is None:
        raise ValueError(f"no vectorised implementation of {name!r}: the vectorised families are "
                         f"{', '.join(sorted(_FAMILIES))}")
    return make(num_envs, **env_kwargs)
