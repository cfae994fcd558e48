"""Environment names, factories and their errors."""

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame is imported by every PettingZoo env
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import importlib  # noqa: E402
import pickle  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from dm_env import specs  # noqa: E402

from wrappers import (  # noqa: E402
                      AECEnvWrapper,
                      EnvironmentFactory,
                      MultiAgentEnvironment,
                      ParallelEnvWrapper,
                      available_environments,
                      make_environment_factory,
                      )
from wrappers.registry import _FAMILIES, _USER  # noqa: E402


def test_available_environments_lists_the_families() -> None:
    available = available_environments()
    # Families a user registered (another test in this process may have, e.g. "tutorial") come on
    # top of the built-in ones.
    assert set(available) - set(_USER) == {"mpe", "sisl", "butterfly", "classic", "debug",
                                          "gymnasium", "lbf", "rware", "mamujoco"}
    assert {"simple_spread_v3", "simple_reference_v3", "simple_v3"} <= set(available["mpe"])
    assert {"pursuit_v5", "multiwalker_v9"} <= set(available["sisl"])
    assert {"cooperative_pong_v6", "knights_archers_zombies_v11", "pistonball_v6"} <= set(available["butterfly"])
    assert {"tictactoe_v3", "connect_four_v3", "rps_v2"} <= set(available["classic"])
    assert available["debug"] == ["line_world_v0", "two_step_v0", "reach_v0", "memory_v0"]
    assert {"CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0"} <= set(available["gymnasium"])
    available["mpe"].clear()  # a copy: the registry is unaffected
    assert available_environments()["mpe"]


def test_every_registered_module_has_the_constructor_used() -> None:
    for family, spec in _FAMILIES.items():
        for env_name, module_path in spec.modules.items():
            module = importlib.import_module(module_path)
            constructor = "parallel_env" if spec.parallel else "env"
            assert callable(getattr(module, constructor, None)), f"{family}/{env_name}"


@pytest.mark.parametrize("name", ["atari/pong_v3", "simple_spread_v3", "", "/simple_spread_v3"])
def test_unknown_family_lists_the_families(name: str) -> None:
    with pytest.raises(ValueError) as error:
        make_environment_factory(name)
    for family in ("mpe", "sisl", "butterfly", "classic", "debug", "gymnasium", "lbf", "rware", "mamujoco"):
        assert family in str(error.value)


def test_unknown_env_lists_the_family_envs() -> None:
    with pytest.raises(ValueError) as error:
        make_environment_factory("mpe/simple_sprad_v3")
    message = str(error.value)
    assert "simple_sprad_v3" in message
    for env_name in available_environments()["mpe"]:
        assert env_name in message
    with pytest.raises(ValueError, match="tictactoe_v3"):
        make_environment_factory("classic/chess_v6")


def test_factory_creation_does_not_build_the_env() -> None:
    # A bad kwarg only fails when the env is built, which proves the factory did not build it.
    factory = make_environment_factory("mpe/simple_spread_v3", no_such_argument=1)
    with pytest.raises(TypeError):
        factory()


def test_factory_is_picklable_and_the_copy_builds_the_same_env() -> None:
    factory = make_environment_factory("mpe/simple_spread_v3", N=2, max_cycles=4)
    copy = pickle.loads(pickle.dumps(factory))
    assert isinstance(copy, EnvironmentFactory)
    assert copy.name == "mpe/simple_spread_v3" and copy.env_kwargs == {"N": 2, "max_cycles": 4}
    original_env, copied_env = factory(seed=3), copy(evaluation=True, seed=3)
    assert copied_env.agents == ["agent_0", "agent_1"]
    np.testing.assert_array_equal(
        original_env.reset().observation["agent_0"].observation,
        copied_env.reset().observation["agent_0"].observation,
    )
    steps = 0
    timestep = copied_env.reset()
    while not timestep.last():
        timestep = copied_env.step({agent: 0 for agent in copied_env.agents})
        steps += 1
    assert steps == 4  # kwargs reach the env


def test_api_choice_per_family() -> None:
    assert isinstance(make_environment_factory("classic/tictactoe_v3")(), AECEnvWrapper)
    for name in ("mpe/simple_spread_v3", "debug/line_world_v0", "classic/rps_v2"):
        env = make_environment_factory(name)()
        assert isinstance(env, MultiAgentEnvironment)
    assert isinstance(make_environment_factory("mpe/simple_spread_v3")(), ParallelEnvWrapper)
    assert isinstance(make_environment_factory("debug/line_world_v0")(), ParallelEnvWrapper)


def test_simple_spread_has_a_global_state_extra() -> None:
    env = make_environment_factory("mpe/simple_spread_v3")(seed=0)
    assert env.extras_spec() == {"env_state": specs.Array((54,), np.float32)}
    timestep = env.reset()
    for _ in range(2):
        state = env.get_extras()["env_state"]
        env.extras_spec()["env_state"].validate(state)
        # PettingZoo's MPE state is the concatenation of all agents' observations.
        np.testing.assert_allclose(state, np.concatenate([timestep.observation[a].observation for a in env.agents]))
        timestep = env.step({agent: 1 for agent in env.agents})


def test_envs_without_state_have_no_extras() -> None:
    env = make_environment_factory("classic/tictactoe_v3")()
    env.reset()
    assert env.extras_spec() == {} and env.get_extras() == {}


def test_every_registered_env_builds_resets_and_steps() -> None:
    rng = np.random.default_rng(0)
    for family, env_names in available_environments().items():
        # Every 100th of LBF's 1920 and every 20th of RWARE's 228 ids (the rest differ in sizes).
        for env_name in env_names[::{"lbf": 100, "rware": 20}.get(family, 1)]:
            env = make_environment_factory(f"{family}/{env_name}")(seed=0)
            timestep = env.reset()
            for _ in range(2):
                actions = {}
                for agent, spec in env.action_spec().items():
                    if isinstance(spec, specs.DiscreteArray):
                        legal = np.flatnonzero(timestep.observation[agent].legal_actions)
                        actions[agent] = rng.choice(legal) if legal.size else 0
                    else:
                        actions[agent] = rng.uniform(spec.minimum, spec.maximum).astype(np.float32)
                timestep = env.step(actions)
                for agent in env.agents:
                    env.observation_spec()[agent].observation.validate(timestep.observation[agent].observation)
            env.close()


@pytest.mark.parametrize("name", ["butterfly/cooperative_pong_v6", "butterfly/pistonball_v6"])
def test_pixel_observations_are_drawn(name: str) -> None:
    # With PettingZoo's default render_mode=None these envs never draw their screen.
    env = make_environment_factory(name, max_cycles=5)(seed=0)
    agent = env.agents[0]
    timestep = env.reset()
    first = timestep.observation[agent].observation
    for _ in range(2):
        timestep = env.step({a: env.environment.action_space(a).sample() for a in env.agents})
    assert first.any()
    assert not np.array_equal(first, timestep.observation[agent].observation)
    env.close()
