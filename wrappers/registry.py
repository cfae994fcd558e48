"""Environment names (`"<family>/<env>"`) and picklable factories building wrapped environments."""

import importlib
from typing import Any, Dict, List, NamedTuple, Optional

from wrappers.base import MultiAgentEnvironment
from wrappers.pettingzoo_aec import AECEnvWrapper
from wrappers.pettingzoo_parallel import ParallelEnvWrapper


class _Family(NamedTuple):
    """Where a family's environments live and which PettingZoo API to use for them."""

    modules: Dict[str, str]  # env name -> module path
    parallel: bool  # True: module.parallel_env(**kwargs); False: module.env(**kwargs) (AEC)


def _family(package: str, names: List[str], parallel: bool) -> _Family:
    return _Family({name: f"{package}.{name}" for name in names}, parallel)


_FAMILIES: Dict[str, _Family] = {
    "mpe": _family(
        "mpe2",
        [
            "simple_v3",
            "simple_adversary_v3",
            "simple_crypto_v3",
            "simple_push_v3",
            "simple_reference_v3",
            "simple_speaker_listener_v4",
            "simple_spread_v3",
            "simple_tag_v3",
            "simple_world_comm_v3",
            "collect_treasure_v1",
            "simple_formation_v1",
            "simple_line_v1",
        ],
        parallel=True,
    ),
    "sisl": _family("pettingzoo.sisl", ["pursuit_v5", "multiwalker_v9"], parallel=True),
    "butterfly": _family(
        "pettingzoo.butterfly",
        ["cooperative_pong_v6", "knights_archers_zombies_v11", "pistonball_v6"],
        parallel=True,
    ),
    "classic": _family("pettingzoo.classic", ["tictactoe_v3", "connect_four_v3", "rps_v2"], parallel=False),
    "debug": _Family({"line_world_v0": "wrappers.debug_envs"}, parallel=True),
}


# PettingZoo 1.27's pixel-observation butterfly envs only draw their screen inside render():
# with render_mode=None their observations never change (all zeros for cooperative_pong).
# "rgb_array" draws off-screen; it opens no window.
_DEFAULT_KWARGS: Dict[str, Dict[str, Any]] = {
    "butterfly/cooperative_pong_v6": {"render_mode": "rgb_array"},
    "butterfly/pistonball_v6": {"render_mode": "rgb_array"},
}


def available_environments() -> Dict[str, List[str]]:
    """Every known environment name, by family: {"mpe": ["simple_v3", ...], ...}."""
    return {family: list(spec.modules) for family, spec in _FAMILIES.items()}


def _resolve(name: str) -> _Family:
    """The family of `name`; raises ValueError listing the valid names if it is unknown."""
    family, sep, env_name = name.partition("/")
    if not sep or family not in _FAMILIES:
        raise ValueError(
            f"unknown environment family in {name!r}: names look like '<family>/<env>' "
            f"with family one of {sorted(_FAMILIES)}"
        )
    spec = _FAMILIES[family]
    if env_name not in spec.modules:
        raise ValueError(
            f"unknown environment {name!r}: family {family!r} has {', '.join(sorted(spec.modules))}"
        )
    return spec


class EnvironmentFactory:
    """A picklable recipe for a wrapped environment: its name and constructor kwargs.

    The name is checked when the factory is made; the environment's module is only
    imported when the factory is called.
    """

    def __init__(self, name: str, **env_kwargs: Any):
        _resolve(name)
        self.name = name
        self.env_kwargs = dict(env_kwargs)

    def __call__(self, evaluation: bool = False, seed: Optional[int] = None) -> MultiAgentEnvironment:
        """A new wrapped environment.

        Args:
          evaluation: whether the environment is for evaluation; it is built the same way.
          seed: if given, the first reset uses it and the action spaces are seeded from it.
        """
        family = _resolve(self.name)
        module = importlib.import_module(family.modules[self.name.partition("/")[2]])
        kwargs = {**_DEFAULT_KWARGS.get(self.name, {}), **self.env_kwargs}
        if family.parallel:
            return ParallelEnvWrapper(module.parallel_env(**kwargs), seed=seed)
        return AECEnvWrapper(module.env(**kwargs), seed=seed)

    def __repr__(self) -> str:
        kwargs = "".join(f", {key}={value!r}" for key, value in self.env_kwargs.items())
        return f"EnvironmentFactory({self.name!r}{kwargs})"


def make_environment_factory(name: str, **env_kwargs: Any) -> EnvironmentFactory:
    """A factory for the environment `name` (`"<family>/<env>"`, see `available_environments`).

    Raises ValueError, listing the available names, if `name` is unknown.
    """
    return EnvironmentFactory(name, **env_kwargs)
