"""Gymnasium-Robotics' Multi-Agent MuJoCo environments, completed for the wrappers.

Imported only when a `mamujoco/...` environment is built: it imports MuJoCo, which reads
`MUJOCO_GL` on import. Unless the user set it, it is set here to the first headless backend whose
libraries load (EGL, then OSMesa), or to "disable" (no rendering; MuJoCo still simulates).
"""

import ctypes
import os
from typing import Any, Dict, Optional, Sequence, Tuple

# Headless backends, in order of preference, and the libraries each loads.
BACKEND_LIBRARIES: Dict[str, Sequence[str]] = {"egl": ("libEGL.so.1", "libOpenGL.so.0"),
                                               "osmesa": ("libOSMesa.so.8",)}
# The Debian packages that provide each headless backend (Debian 12 names).
BACKEND_PACKAGES: Dict[str, str] = {
    "egl": "libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri",
    "osmesa": "libosmesa6",
}


def _loads(library: str) -> bool:
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def headless_backend() -> str:
    """The first of BACKEND_LIBRARIES whose libraries all load here, or "disable"."""
    for backend, libraries in BACKEND_LIBRARIES.items():
        if all(_loads(library) for library in libraries):
            return backend
    return "disable"


if "MUJOCO_GL" not in os.environ:
    os.environ["MUJOCO_GL"] = headless_backend()

# pylint: disable=wrong-import-position

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium_robotics.envs.multiagent_mujoco.mujoco_multi import MultiAgentMujocoEnv  # noqa: E402

_RENDER_MODES = ("rgb_array", "depth_array")


def rendering_problem() -> Optional[str]:
    """Why MuJoCo cannot render off-screen here (naming the missing library), or None if it can."""
    backend = os.environ.get("MUJOCO_GL", "")
    try:
        import mujoco  # pylint: disable=import-outside-toplevel

        context = mujoco.GLContext(16, 16)
        context.make_current()
        context.free()
    except Exception as error:  # pylint: disable=broad-except  (any failure means: no rendering)
        wanted = BACKEND_PACKAGES.get(backend, BACKEND_PACKAGES["egl"])
        libraries = ", ".join(BACKEND_LIBRARIES.get(backend, BACKEND_LIBRARIES["egl"]))
        return (f"MuJoCo cannot render off-screen (MUJOCO_GL={backend!r}; {type(error).__name__}: {error}): "
                f"it needs {libraries}, from the Debian packages {wanted} "
                "(scripts/install_render_libraries.sh installs them as root)")
    return None


class MaMuJoCoEnv(MultiAgentMujocoEnv):
    """Gymnasium-Robotics' `MultiAgentMujocoEnv` with a global state space and a split team reward.

    - `state_space`/`state()`: the full observation of the single-agent MuJoCo task.
    - Rewards: each agent receives the task's reward divided by the number of agents, so a
      return summed over the agents is the MuJoCo task's return.
    - Rendering: a render mode that draws off-screen is refused (ValueError) at construction, naming the
      missing library, when this machine cannot render.
    """

    def __init__(self, scenario: str, agent_conf: str, render_mode: Optional[str] = None, **kwargs: Any):
        if render_mode in _RENDER_MODES:
            problem = rendering_problem()
            if problem is not None:
                raise ValueError(problem)
        super().__init__(scenario, agent_conf, render_mode=render_mode, **kwargs)
        self.scenario, self.agent_conf, self.render_mode = scenario, agent_conf, render_mode
        space = self.single_agent_env.observation_space
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, space.shape, np.float32)

    def step(self, actions: Dict[str, np.ndarray]) -> Tuple[Dict[str, Any], ...]:
        """Steps the task with every agent's action; rewards are the task's split evenly."""
        observations, rewards, terminations, truncations, infos = super().step(actions)
        share = 1.0 / len(self.possible_agents)
        return observations, {agent: reward * share for agent, reward in rewards.items()}, \
            terminations, truncations, infos

    def state(self) -> np.ndarray:
        """The task's full observation."""
        return np.asarray(super().state(), np.float32)
