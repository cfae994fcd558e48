"""A user's environments and families: registration, names, errors, and finding them in a fresh process."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import wrappers
from wrappers import debug_envs, registry
from program_helpers import ROOT


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts and ends with no user registrations."""
    saved = dict(registry._USER), {k: dict(v) for k, v in registry._USER_ENVIRONMENTS.items()}
    yield
    registry._USER.clear()
    registry._USER.update(saved[0])
    registry._USER_ENVIRONMENTS.clear()
    registry._USER_ENVIRONMENTS.update(saved[1])


def test_a_registered_environment_is_built_wrapped_and_seeded():
    wrappers.register_environment("mine/line_v0", lambda **kwargs: debug_envs.parallel_env(**kwargs))
    factory = wrappers.make_environment_factory("mine/line_v0", max_cycles=3)
    assert factory.registration == __name__  # This (importable) test module.
    assert "line_v0" in wrappers.available_environments()["mine"]
    env = factory(seed=4)
    assert isinstance(env, wrappers.ParallelEnvWrapper)
    assert env.extras_spec()["env_state"].shape == (20,)
    timestep, steps = env.reset(), 0
    while not timestep.last():
        timestep = env.step({agent: 0 for agent in env.agents})
        steps += 1
    assert steps == 3  # The kwargs reach `make`.
    first = factory(seed=4).reset().observation["agent_0"].observation
    np.testing.assert_array_equal(first, factory(seed=4).reset().observation["agent_0"].observation)


def test_a_registered_family_checks_its_names():
    made = []

    def make(env_name, **kwargs):
        made.append((env_name, kwargs))
        return debug_envs.parallel_env(**kwargs)

    wrappers.register_family("lines", make, names=["short_v0", "long_v0"])
    assert sorted(wrappers.available_environments()["lines"]) == ["long_v0", "short_v0"]
    wrappers.make_environment_factory("lines/long_v0", length=7)()
    assert made == [("long_v0", {"length": 7})]
    with pytest.raises(ValueError, match="unknown environment 'lines/lng_v0'.*close matches: long_v0"):
        wrappers.make_environment_factory("lines/lng_v0")


def test_bad_registrations_are_refused():
    make = debug_envs.parallel_env
    with pytest.raises(ValueError, match="'mpe' is built in"):
        wrappers.register_environment("mpe/mine_v0", make)
    with pytest.raises(ValueError, match="'lbf' is built in"):
        wrappers.register_family("lbf", make)
    with pytest.raises(ValueError, match="expected '<family>/<env>'"):
        wrappers.register_environment("no_family", make)
    wrappers.register_environment("mine/line_v0", make)
    wrappers.register_environment("mine/line_v0", make)  # Again from the same module: fine.
    registry._USER_ENVIRONMENTS["mine"]["line_v0"] = registry.EnvironmentFamily(
        make, registration="someone_else")
    with pytest.raises(ValueError, match="already registered by someone_else"):
        wrappers.register_environment("mine/line_v0", make)
    with pytest.raises(ValueError, match="holds environments registered one by one"):
        wrappers.register_family("mine", make)


def test_an_unregistered_family_names_the_way_to_register():
    with pytest.raises(ValueError, match="register_environment.*--env_module"):
        wrappers.make_environment_factory("nobody/task_v0")


SCRIPT = """
    import wrappers
    from wrappers import debug_envs

    wrappers.register_environment("script/line_v0", lambda **kwargs: debug_envs.parallel_env(**kwargs))

    if __name__ == "__main__":
        import pickle, sys
        with open(sys.argv[1], "wb") as out:
            pickle.dump(wrappers.make_environment_factory("script/line_v0", max_cycles=2), out)
        print("pickled")
"""

LOADER = """
import pickle, sys
factory = pickle.load(open(sys.argv[1], "rb"))
env = factory(seed=0)
timestep, steps = env.reset(), 0
while not timestep.last():
    timestep = env.step({agent: 0 for agent in env.agents})
    steps += 1
print(factory.name, env.agents, steps)
"""


def test_a_factory_pickled_by_a_script_builds_its_environment_in_a_fresh_process(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    pickled = str(tmp_path / "factory.pkl")
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    first = subprocess.run([sys.executable, str(script), pickled], capture_output=True, text=True,
                           env=env, cwd=str(tmp_path), timeout=120)
    assert first.returncode == 0 and "pickled" in first.stdout, first.stderr
    with open(pickled, "rb") as handle:
        assert pickle.load(handle).registration == str(script)  # A script: its path.
    # A process that never ran the script (as a Launchpad node): importing it registers again,
    # and its training part (under `if __name__ == "__main__":`) does not run.
    second = subprocess.run([sys.executable, "-c", LOADER, pickled], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["script/line_v0", "['agent_0',", "'agent_1']", "2"]
