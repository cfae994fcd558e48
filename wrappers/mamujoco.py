"""Multi-Agent MuJoCo names: the `mamujoco/<Scenario>-<agent_conf>` family and its checks.

The environments themselves (`wrappers.mamujoco_env`) import MuJoCo; this module does not, so a
name is checked, and refused with the valid ones listed, before anything heavy is imported.
"""

import re
from typing import Any, Dict, List, Tuple

# Gymnasium-Robotics 1.4.2's scenarios and the agent factorizations (agent_conf) it defines.
SCENARIOS: Dict[str, Tuple[str, ...]] = {
    "HalfCheetah": ("2x3", "6x1"),
    "Ant": ("2x4", "2x4d", "4x2"),
    "Hopper": ("3x1",),
    "Walker2d": ("2x3",),
    "Humanoid": ("9|8",),
    "HumanoidStandup": ("9|8",),
    "Reacher": ("2x1",),
    "Swimmer": ("2x1",),
    "Pusher": ("3p",),
    "CoupledHalfCheetah": ("1p1",),
}
# Scenarios built for any "<agents>x<segments per agent>" conf (a body of agents x segments).
MANY_SEGMENT_SCENARIOS = ("ManySegmentSwimmer", "ManySegmentAnt")
_MANY_SEGMENT_CONF = re.compile(r"[1-9][0-9]*x[1-9][0-9]*")


def fixed_names() -> List[str]:
    """Every `<Scenario>-<agent_conf>` of the scenarios with a fixed list of factorizations."""
    return [f"{scenario}-{conf}" for scenario, confs in SCENARIOS.items() for conf in confs]


def _valid_names() -> str:
    return (f"{', '.join(fixed_names())}, or {' / '.join(MANY_SEGMENT_SCENARIOS)}-<agents>x<segments per "
            "agent> (e.g. ManySegmentSwimmer-4x2)")


def parse_name(env_name: str) -> Tuple[str, str]:
    """The scenario and agent conf of `env_name` ("HalfCheetah-2x3" -> ("HalfCheetah", "2x3")).

    Raises:
      ValueError: naming the problem and listing the valid names.
    """
    scenario, sep, conf = env_name.partition("-")
    if not sep:
        raise ValueError(f"mamujoco environment {env_name!r}: expected '<Scenario>-<agent_conf>', "
                         f"one of {_valid_names()}")
    if scenario in SCENARIOS:
        if conf not in SCENARIOS[scenario]:
            raise ValueError(f"mamujoco environment {env_name!r}: unknown agent conf {conf!r} for "
                             f"{scenario}, which has {', '.join(SCENARIOS[scenario])}")
        return scenario, conf
    if scenario in MANY_SEGMENT_SCENARIOS:
        if _MANY_SEGMENT_CONF.fullmatch(conf) is None:
            raise ValueError(f"mamujoco environment {env_name!r}: {scenario}'s agent conf is "
                             f"'<agents>x<segments per agent>' with positive numbers, e.g. '4x2'")
        return scenario, conf
    raise ValueError(f"mamujoco environment {env_name!r}: unknown scenario {scenario!r}; "
                     f"the names are {_valid_names()}")


def make(env_name: str, **env_kwargs: Any) -> Any:
    """The PettingZoo parallel environment `env_name` ("<Scenario>-<agent_conf>").

    `env_kwargs` go to Gymnasium-Robotics' `MultiAgentMujocoEnv` (e.g. `agent_obsk`,
    `render_mode`) and through it to the Gymnasium MuJoCo task (e.g. `max_episode_steps`).
    """
    scenario, conf = parse_name(env_name)
    from wrappers import mamujoco_env  # pylint: disable=import-outside-toplevel  (imports MuJoCo)

    return mamujoco_env.MaMuJoCoEnv(scenario, conf, **env_kwargs)
