"""Environment names (`"<family>/<env>"`) and picklable factories building wrapped environments."""

import importlib
from typing import Any, Dict, List, NamedTuple, Optional

from wrappers.base import MultiAgentEnvironment
from wrappers.gymnasium_env import SingleAgentParallelEnv
from wrappers.pettingzoo_aec import AECEnvWrapper
from wrappers.pettingzoo_parallel import ParallelEnvWrapper
from wrappers.states import state_reader


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
    "debug": _Family({"line_world_v0": "wrappers.debug_envs", "two_step_v0": "wrappers.two_step_game",
                       "reach_v0": "wrappers.reach", "memory_v0": "wrappers.memory_game"},
                      parallel=True),
}


# PettingZoo 1.27's pixel-observation butterfly envs only draw their screen inside render():
# with render_mode=None their observations never change (all zeros for cooperative_pong).
# "rgb_array" draws off-screen; it opens no window.
_DEFAULT_KWARGS: Dict[str, Dict[str, Any]] = {
    "butterfly/cooperative_pong_v6": {"render_mode": "rgb_array"},
    "butterfly/pistonball_v6": {"render_mode": "rgb_array"},
}


# "gymnasium/<EnvId>": any registered single-agent Gymnasium environment, as one agent "agent_0".
GYMNASIUM = "gymnasium"


def _gymnasium_ids(classic_control_only: bool = False) -> List[str]:
    import gymnasium  # pylint: disable=import-outside-toplevel

    return [env_id for env_id, spec in gymnasium.envs.registry.items()
            if not classic_control_only or "classic_control" in str(spec.entry_point)]


def available_environments() -> Dict[str, List[str]]:
    """Every known environment name, by family: {"mpe": ["simple_v3", ...], ...}.

    For "gymnasium" it lists the classic-control environments, which need no
    extra packages; any other registered Gymnasium id is accepted too.
    """
    available = {family: list(spec.modules) for family, spec in _FAMILIES.items()}
    available[GYMNASIUM] = _gymnasium_ids(classic_control_only=True)
    return available


def _resolve(name: str) -> Optional[_Family]:
    """The family of `name` (None for Gymnasium); raises ValueError listing the valid names if unknown."""
    family, sep, env_name = name.partition("/")
    if not sep or (family not in _FAMILIES and family != GYMNASIUM):
        raise ValueError(
            f"unknown environment family in {name!r}: names look like '<family>/<env>' "
            f"with family one of {sorted([*_FAMILIES, GYMNASIUM])}"
        )
    if family == GYMNASIUM:
        if env_name not in _gymnasium_ids():
            raise ValueError(
                f"unknown environment {name!r}: {env_name!r} is not a registered Gymnasium id; "
                f"classic-control ones are {', '.join(_gymnasium_ids(classic_control_only=True))}")
        return None
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
        if family is None:
            import gymnasium  # pylint: disable=import-outside-toplevel

            env = gymnasium.make(self.name.partition("/")[2], **self.env_kwargs)
            return ParallelEnvWrapper(SingleAgentParallelEnv(env), seed=seed)
        module = importlib.import_module(family.modules[self.name.partition("/")[2]])
        kwargs = {**_DEFAULT_KWARGS.get(self.name, {}), **self.env_kwargs}
        if family.parallel:
            return ParallelEnvWrapper(module.parallel_env(**kwargs), seed=seed, state_reader=state_reader(self.name))
        return AECEnvWrapper(module.env(**kwargs), seed=seed, state_reader=state_reader(self.name))

    def __repr__(self) -> str:
        kwargs = "".join(f", {key}={value!r}" for key, value in self.env_kwargs.items())
        return f"EnvironmentFactory({self.name!r}{kwargs})"


def make_environment_factory(name: str, **env_kwargs: Any) -> EnvironmentFactory:
    """A factory for the environment `name` (`"<family>/<env>"`, see `available_environments`).

    "gymnasium/<EnvId>" (e.g. "gymnasium/CartPole-v1") is a single-agent Gymnasium
    environment presented as a multi-agent one with the single agent "agent_0".

    Raises ValueError, listing the available names, if `name` is unknown.
    """
    return EnvironmentFactory(name, **env_kwargs)
