"""Environment names (`"<family>/<env>"`), the families that build them, and picklable factories.

Built-in families: PettingZoo's (mpe, sisl, butterfly, classic), the debug environments,
single-agent Gymnasium ids ("gymnasium/<EnvId>"), Level-Based Foraging ("lbf/<EnvId>") and
Robotic Warehouse ("rware/<EnvId>"), Multi-Agent MuJoCo ("mamujoco/<Scenario>-<agent_conf>").
`register_environment` and `register_family` add a
user's own; the module that registers them is recorded, so a fresh process (a `local_mp`
node, `python -m mava_systems.evaluate`) imports it again to find them.
"""

import dataclasses
import difflib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Union

import gymnasium
from pettingzoo.utils.env import AECEnv, ParallelEnv

from wrappers import mamujoco
from wrappers.base import MultiAgentEnvironment
from wrappers.gymnasium_env import SingleAgentParallelEnv
from wrappers.gymnasium_multiagent import TupleSpaceParallelEnv, is_tuple_space_env
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



# Makes a family's environment: make(env_name, **env_kwargs) returns a PettingZoo
# ParallelEnv or AECEnv, a Gymnasium Env (single-agent, or multi-agent with Tuple spaces)
# or a ready MultiAgentEnvironment.
EnvMaker = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class EnvironmentFamily:
    """How one family of environments is listed, checked and built.

    Attributes:
      make: `make(env_name, **env_kwargs)`: the raw environment (see `EnvMaker`).
      names: every environment name the family accepts (None: any name; `make` checks it).
      listed: the names `available_environments` shows (default: `names`).
      registration: where a user's family was registered (a module, or a script's path);
        None for the built-in families.
      check: for a family of unlisted names, `check(env_name)` raises ValueError naming the
        problem with a name (the valid ones listed) before anything is built.
    """

    make: EnvMaker
    names: Optional[Callable[[], Sequence[str]]] = None
    listed: Optional[Callable[[], Sequence[str]]] = None
    registration: Optional[str] = None
    check: Optional[Callable[[str], Any]] = None


def _pettingzoo_family(family: str, spec: _Family) -> EnvironmentFamily:
    def make(env_name: str, **env_kwargs: Any) -> Any:
        module = importlib.import_module(spec.modules[env_name])
        kwargs = {**_DEFAULT_KWARGS.get(f"{family}/{env_name}", {}), **env_kwargs}
        return module.parallel_env(**kwargs) if spec.parallel else module.env(**kwargs)

    return EnvironmentFamily(make, names=lambda: list(spec.modules))


def _gymnasium_ids(entry_point_prefix: str = "", package: Optional[str] = None) -> List[str]:
    """Registered Gymnasium ids whose entry point starts with `entry_point_prefix`, once
    `package` (which registers them on import) is imported."""
    if package is not None:
        importlib.import_module(package)
    return [env_id for env_id, spec in gymnasium.envs.registry.items()
            if str(spec.entry_point).startswith(entry_point_prefix)]


def _gymnasium_family(package: Optional[str] = None, entry_point_prefix: str = "",
                      listed_prefix: Optional[str] = None, step_limit: Optional[str] = None,
                      **make_kwargs: Any) -> EnvironmentFamily:
    """A family of registered Gymnasium ids (those `package` registers, or all of them).

    `step_limit` names the env's own episode-length argument: `max_episode_steps`, which
    `gymnasium.make` takes for a time-limit wrapper that could only shorten episodes, sets
    it instead.
    """
    def make(env_id: str, **env_kwargs: Any) -> Any:
        if package is not None:
            importlib.import_module(package)
        spec = gymnasium.spec(env_id)
        if step_limit is not None and "max_episode_steps" in env_kwargs:
            spec = dataclasses.replace(spec, kwargs={**spec.kwargs,
                                                     step_limit: env_kwargs.pop("max_episode_steps")})
        return gymnasium.make(spec, **{**make_kwargs, **env_kwargs})

    listed = None if listed_prefix is None else (lambda: _gymnasium_ids(listed_prefix, package))
    return EnvironmentFamily(make, names=lambda: _gymnasium_ids(entry_point_prefix, package),
                             listed=listed)


# "gymnasium/<EnvId>": any registered single-agent Gymnasium environment, as one agent "agent_0".
GYMNASIUM = "gymnasium"

_BUILTIN: Dict[str, EnvironmentFamily] = {
    **{family: _pettingzoo_family(family, spec) for family, spec in _FAMILIES.items()},
    GYMNASIUM: _gymnasium_family(listed_prefix="gymnasium.envs.classic_control"),
    # Level-Based Foraging (lbforaging 2.0.0): every id registered on import, "-2s" (sight 2,
    # partially observable) included. Its env checker is for single-agent envs: it would warn
    # about the list of rewards on every first step.
    # `max_episode_steps` sets the episode length (50 by default).
    "lbf": _gymnasium_family("lbforaging", "lbforaging.", step_limit="max_episode_steps",
                             disable_env_checker=True),
    # Robotic Warehouse (rware 2.0.0): every id registered on import (vector observations).
    # `max_episode_steps` (or the package's own `max_steps`) sets the episode length (500).
    "rware": _gymnasium_family("rware", "rware.", step_limit="max_steps", disable_env_checker=True),
    # Multi-Agent MuJoCo (gymnasium-robotics 1.4.2): "<Scenario>-<agent_conf>", e.g. "HalfCheetah-2x3";
    # ManySegmentSwimmer/ManySegmentAnt take any "<agents>x<segments>" conf, so names are checked.
    "mamujoco": EnvironmentFamily(mamujoco.make, listed=mamujoco.fixed_names, check=mamujoco.parse_name),
}
_USER: Dict[str, EnvironmentFamily] = {}
# Environments registered one by one (`register_environment`), by family, then env name.
_USER_ENVIRONMENTS: Dict[str, Dict[str, EnvironmentFamily]] = {}


def _families() -> Dict[str, EnvironmentFamily]:
    return {**_BUILTIN, **_USER}


def available_environments() -> Dict[str, List[str]]:
    """Every known environment name, by family: {"mpe": ["simple_v3", ...], ...}.

    For "gymnasium" it lists the classic-control environments, which need no
    extra packages; any other registered Gymnasium id is accepted too. A user's
    family registered without a list of names is listed with none.
    """
    available = {}
    for family, spec in _families().items():
        names = spec.listed or spec.names
        available[family] = list(names()) if names is not None else []
    return available


# Scripts whose registrations were imported again by path, under these module names.
_SCRIPT_MODULE_PREFIX = "_mava_environments_of_"


def importable_as(module_name: str, file_name: Optional[str]) -> bool:
    """Whether a fresh process finds `file_name` by importing `module_name` (a top-level name
    is looked up on sys.path; a module of a package is taken to be importable)."""
    if "." in module_name or not file_name:
        return True
    try:
        spec = importlib.machinery.PathFinder.find_spec(module_name)
        return spec is not None and spec.origin is not None and os.path.samefile(spec.origin, file_name)
    except (OSError, ImportError, ValueError):
        return False


def loaded_module(file_name: str) -> Optional[Any]:
    """The module already imported from the file `file_name` (under any name), or None: a file
    given both as an environment and as a system module is imported once."""
    path = os.path.abspath(file_name)
    for module in list(sys.modules.values()):
        loaded_from = getattr(module, "__file__", None)
        if isinstance(loaded_from, str) and os.path.abspath(loaded_from) == path:
            return module
    return None


def _caller_registration(depth: int) -> Optional[str]:
    """Where the code `depth` frames up is: its module's name, or for a script (`__main__`, or
    a file imported by path under a name no fresh process would find) its file's absolute path;
    None in an interactive session."""
    frame = sys._getframe(depth + 1)  # pylint: disable=protected-access
    module_name = frame.f_globals.get("__name__", "")
    file_name = frame.f_globals.get("__file__")
    if module_name == "__main__" or not importable_as(module_name, file_name):
        return os.path.abspath(file_name) if file_name else None
    return module_name or None


def import_registration(registration: Optional[str]) -> None:
    """Imports the module (a name, or a `.py` file's path) that registers a user's environments.

    Raises:
      ValueError: if it cannot be imported.
    """
    if not registration:
        return
    try:
        if registration.endswith(".py"):
            registration = os.path.abspath(registration)
            digest = hashlib.sha1(registration.encode()).hexdigest()[:8]
            module_name = f"{_SCRIPT_MODULE_PREFIX}{digest}"
            if module_name in sys.modules or loaded_module(registration) is not None:
                return
            spec = importlib.util.spec_from_file_location(module_name, registration)
            if spec is None or not os.path.exists(registration):
                raise ImportError(f"no file {registration}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[module_name]
                raise
        else:
            importlib.import_module(registration)
    except Exception as error:  # pylint: disable=broad-except
        raise ValueError(f"cannot import {registration!r}, which registers the environment: "
                         f"{type(error).__name__}: {error}") from None


def _check_family_name(family: str) -> None:
    if not family or "/" in family:
        raise ValueError(f"bad environment family name {family!r}: a non-empty name without '/'")
    if family in _BUILTIN:
        raise ValueError(f"environment family {family!r} is built in; register under another name")


def _check_registration(name: str, holder: Optional[EnvironmentFamily], registration: Optional[str]) -> None:
    if holder is not None and holder.registration != registration:
        raise ValueError(f"{name!r} is already registered by {holder.registration}; "
                         f"register {registration}'s under another name")


def register_family(family: str, make: EnvMaker,
                    names: Union[None, Sequence[str], Callable[[], Sequence[str]]] = None) -> None:
    """Registers a user's environment family: `make_environment_factory("<family>/<env>")`
    then builds `make(env, **env_kwargs)`, in every process.

    Call it at the top level of a module (or of a script that trains under
    `if __name__ == "__main__":`): that module is recorded (in the factory and the
    run's run.json) and imported again wherever the family is not yet known, so
    Launchpad's processes, resume and `python -m mava_systems.evaluate` find it.

    Args:
      family: the family's name (the part before "/"); not a built-in family's.
      make: `make(env_name, **env_kwargs)` returning a PettingZoo `ParallelEnv` or
        `AECEnv`, a Gymnasium `Env` (single-agent, or multi-agent with Tuple spaces),
        or a `MultiAgentEnvironment` (used as it is: seeding it is then `make`'s job).
      names: the accepted environment names, or a function listing them (None: any name).

    Raises:
      ValueError: for a bad or built-in family name, or one another module registered.
    """
    _check_family_name(family)
    if family in _USER_ENVIRONMENTS:
        raise ValueError(f"environment family {family!r} holds environments registered one by "
                         "one (register_environment); register the family under another name")
    registration = _caller_registration(1)
    _check_registration(family, _USER.get(family), registration)
    listed = (lambda: list(names)) if names is not None and not callable(names) else names
    _USER[family] = EnvironmentFamily(make, names=listed, registration=registration)


def register_environment(name: str, make: Callable[..., Any]) -> None:
    """Registers a user's environment `name` ("<family>/<env>"), built by `make(**env_kwargs)`.

    `make` returns what a family's `make` does (see `register_family`); the
    registering module is recorded and imported again in a fresh process in the
    same way.

    Raises:
      ValueError: for a bad name, a built-in family, or a name another module registered.
    """
    family, sep, env_name = name.partition("/")
    if not sep or not env_name:
        raise ValueError(f"bad environment name {name!r}: expected '<family>/<env>'")
    _check_family_name(family)
    if family in _USER and family not in _USER_ENVIRONMENTS:
        raise ValueError(f"environment family {family!r} is registered as a whole "
                         "(register_family); register the environment under another family")
    registration = _caller_registration(1)
    environments = _USER_ENVIRONMENTS.setdefault(family, {})
    _check_registration(name, environments.get(env_name), registration)
    environments[env_name] = EnvironmentFamily(lambda _, **kwargs: make(**kwargs), registration=registration)
    _USER[family] = EnvironmentFamily(
        lambda env_name, **kwargs: environments[env_name].make(env_name, **kwargs),
        names=lambda: list(environments))


def _registration_of(name: str) -> Optional[str]:
    family, _, env_name = name.partition("/")
    single = _USER_ENVIRONMENTS.get(family, {}).get(env_name)
    spec = single or _families().get(family)
    return spec.registration if spec is not None else None


def _unknown_environment(name: str, family: str, env_name: str, names: Sequence[str]) -> ValueError:
    close = difflib.get_close_matches(env_name, names, n=5, cutoff=0.6)
    if len(names) <= 30:
        listing = f"family {family!r} has {', '.join(sorted(names))}"
    else:
        listing = f"family {family!r} has {len(names)} environments"
    hint = f"; close matches: {', '.join(close)}" if close else ""
    return ValueError(f"unknown environment {name!r}: {listing}{hint}")


def _resolve(name: str, registration: Optional[str] = None) -> EnvironmentFamily:
    """The family of `name`; its `registration` is imported first if the family is unknown.

    Raises:
      ValueError: listing the families, or the family's environments and the close matches.
    """
    family, sep, env_name = name.partition("/")
    if sep and family not in _families() and registration:
        import_registration(registration)
    families = _families()
    if not sep or family not in families:
        raise ValueError(
            f"unknown environment family in {name!r}: names look like '<family>/<env>' "
            f"with family one of {sorted(families)}, or a family registered with "
            "wrappers.register_environment/register_family (the examples and the experiment "
            "command import the module that registers it with --env_module)")
    spec = families[family]
    if spec.names is not None:
        names = list(spec.names())
        if env_name not in names:
            raise _unknown_environment(name, family, env_name, names)
    if spec.check is not None:
        spec.check(env_name)
    return spec


def wrap_environment(env: Any, seed: Optional[int] = None, name: str = "") -> MultiAgentEnvironment:
    """`env` as a `MultiAgentEnvironment`, by its API (see `EnvMaker`); `seed` as the factory's."""
    if isinstance(env, MultiAgentEnvironment):
        return env
    if isinstance(env, ParallelEnv):
        return ParallelEnvWrapper(env, seed=seed, state_reader=state_reader(name))
    if isinstance(env, AECEnv):
        return AECEnvWrapper(env, seed=seed, state_reader=state_reader(name))
    if is_tuple_space_env(env):
        return ParallelEnvWrapper(TupleSpaceParallelEnv(env), seed=seed)
    if isinstance(env, gymnasium.Env):
        return ParallelEnvWrapper(SingleAgentParallelEnv(env), seed=seed)
    raise ValueError(f"environment {name or env!r}: expected a PettingZoo ParallelEnv or AECEnv, "
                     f"a Gymnasium Env or a MultiAgentEnvironment, got {type(env).__name__}")


class EnvironmentFactory:
    """A picklable recipe for a wrapped environment: its name and constructor kwargs.

    The name is checked when the factory is made; the environment's module is only
    imported when the factory is called. For a user's environment the factory also
    holds `registration`, the module that registers it, imported again where needed.
    """

    def __init__(self, name: str, **env_kwargs: Any):
        _resolve(name)
        self.name = name
        self.env_kwargs = dict(env_kwargs)
        self.registration = _registration_of(name)

    def __call__(self, evaluation: bool = False, seed: Optional[int] = None) -> MultiAgentEnvironment:
        """A new wrapped environment.

        Args:
          evaluation: whether the environment is for evaluation; it is built the same way.
          seed: if given, the first reset uses it and the action spaces are seeded from it.
        """
        family = _resolve(self.name, getattr(self, "registration", None))
        env = family.make(self.name.partition("/")[2], **self.env_kwargs)
        return wrap_environment(env, seed=seed, name=self.name)

    def __repr__(self) -> str:
        kwargs = "".join(f", {key}={value!r}" for key, value in self.env_kwargs.items())
        return f"EnvironmentFactory({self.name!r}{kwargs})"


def make_environment_factory(name: str, **env_kwargs: Any) -> EnvironmentFactory:
    """A factory for the environment `name` (`"<family>/<env>"`, see `available_environments`).

    "gymnasium/<EnvId>" (e.g. "gymnasium/CartPole-v1") is a single-agent Gymnasium
    environment presented as a multi-agent one with the single agent "agent_0".
    "lbf/<EnvId>" and "rware/<EnvId>" are Level-Based Foraging and Robotic Warehouse
    tasks, e.g. "lbf/Foraging-8x8-2p-2f-coop-v3" and "rware/rware-tiny-2ag-v2".

    Raises ValueError, listing the available names, if `name` is unknown.
    """
    return EnvironmentFactory(name, **env_kwargs)
