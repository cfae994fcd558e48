"""Multi-Agent MuJoCo (`mamujoco/<Scenario>-<agent_conf>`): names, specs, observations, the global
state, rewards, episode ends, rendering, and a short MADDPG program through the example."""

import os
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from dm_env import specs

import program_helpers
import wrappers
from wrappers import mamujoco
from wrappers import mamujoco_env

NAMES = mamujoco.fixed_names() + ["ManySegmentSwimmer-4x2", "ManySegmentAnt-2x3"]
# The single-agent Gymnasium task each scenario factorizes (CoupledHalfCheetah is the package's own).
TASKS = {"HalfCheetah": "HalfCheetah-v5", "Ant": "Ant-v5", "Hopper": "Hopper-v5", "Walker2d": "Walker2d-v5",
         "Humanoid": "Humanoid-v5", "HumanoidStandup": "HumanoidStandup-v5", "Reacher": "Reacher-v5",
         "Swimmer": "Swimmer-v5", "Pusher": "Pusher-v5"}


def random_actions(env, rng):
    return {agent: rng.uniform(spec.minimum, spec.maximum).astype(np.float32)
            for agent, spec in env.action_spec().items()}


def test_the_issue_scenarios_are_listed():
    listed = wrappers.available_environments()["mamujoco"]
    assert {"HalfCheetah-2x3", "HalfCheetah-6x1", "Ant-2x4", "Ant-2x4d", "Ant-4x2", "Hopper-3x1",
            "Walker2d-2x3", "Humanoid-9|8", "HumanoidStandup-9|8", "Reacher-2x1", "Swimmer-2x1",
            "Pusher-3p", "CoupledHalfCheetah-1p1"} == set(listed)


@pytest.mark.parametrize("name", NAMES)
def test_specs_observations_and_state_match_the_task(name):
    env = wrappers.make_environment_factory(f"mamujoco/{name}")(seed=0)
    raw = env.environment
    task = raw.single_agent_env
    assert env.agents == [f"agent_{i}" for i in range(len(raw.agent_action_partitions))]
    action_specs = env.action_spec()
    # The agents' continuous actions partition the task's action vector.
    assert sum(spec.shape[0] for spec in action_specs.values()) == task.action_space.shape[0]
    for spec in action_specs.values():
        assert isinstance(spec, specs.BoundedArray) and spec.dtype == np.float32
        np.testing.assert_array_equal(spec.minimum, task.action_space.low[0])
    assert env.extras_spec()["env_state"].shape == task.observation_space.shape
    timestep = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        for agent in env.agents:
            env.observation_spec()[agent].observation.validate(timestep.observation[agent].observation)
        state = env.get_extras()["env_state"]
        # The global state is the single-agent task's full observation.
        np.testing.assert_allclose(state, task.unwrapped._get_obs(), rtol=1e-6, atol=1e-6)
        timestep = env.step(random_actions(env, rng))
    env.close()


def observation_sizes(**env_kwargs):
    env = wrappers.make_environment_factory("mamujoco/HalfCheetah-2x3", **env_kwargs)()
    return [spec.observation.shape[0] for spec in env.observation_spec().values()]


def test_agent_obsk_sets_how_far_each_agent_sees():
    # obsk=0: an agent's own joints (and the body's global readings); 1 and 2 add the positions of
    # the joints 1 and 2 hops away in the body's graph.
    near, default, far = observation_sizes(agent_obsk=0), observation_sizes(), observation_sizes(agent_obsk=2)
    assert default == observation_sizes(agent_obsk=1)
    assert all(a < b < c for a, b, c in zip(near, default, far)), (near, default, far)


def test_each_agent_gets_an_even_share_of_the_task_reward():
    env = wrappers.make_environment_factory("mamujoco/HalfCheetah-2x3")(seed=3)
    task = gymnasium.make("HalfCheetah-v5")
    env.reset()
    task.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        actions = random_actions(env, rng)
        timestep = env.step(actions)
        _, reward, *_ = task.step(env.environment.map_local_actions_to_global_action(actions))
        rewards = list(timestep.reward.values())
        assert rewards[0] == pytest.approx(rewards[1])
        assert sum(rewards) == pytest.approx(reward, rel=1e-5, abs=1e-6)


def test_the_time_limit_is_a_truncation_with_discount_one():
    env = wrappers.make_environment_factory("mamujoco/HalfCheetah-2x3")(seed=0)
    rng = np.random.default_rng(0)
    timestep, steps = env.reset(), 0
    while not timestep.last():
        timestep = env.step(random_actions(env, rng))
        steps += 1
    assert steps == 1000  # Gymnasium's *-v5 tasks end after 1000 steps; HalfCheetah never falls.
    assert all(float(discount) == 1.0 for discount in timestep.discount.values())
    short = wrappers.make_environment_factory("mamujoco/HalfCheetah-2x3", max_episode_steps=30)(seed=0)
    timestep, steps = short.reset(), 0
    while not timestep.last():
        timestep, steps = short.step(random_actions(short, rng)), steps + 1
    assert steps == 30


def test_a_fall_ends_the_episode_with_discount_zero():
    env = wrappers.make_environment_factory("mamujoco/Hopper-3x1")(seed=0)
    timestep, steps = env.reset(), 0
    while not timestep.last():  # Full torque on every joint topples the hopper.
        timestep = env.step({agent: np.ones(spec.shape, np.float32) for agent, spec in env.action_spec().items()})
        steps += 1
    assert steps < 1000
    assert all(float(discount) == 0.0 for discount in timestep.discount.values())


@pytest.mark.parametrize("name, problem", [
    ("mamujoco/HalfCheetah-2x4", "unknown agent conf '2x4' for HalfCheetah, which has 2x3, 6x1"),
    ("mamujoco/Cheetah-2x3", "unknown scenario 'Cheetah'"),
    ("mamujoco/HalfCheetah", "expected '<Scenario>-<agent_conf>'"),
    ("mamujoco/ManySegmentAnt-0x3", "'<agents>x<segments per agent>'"),
    ("mamujoco/Humanoid-9x8", "which has 9|8"),
])
def test_bad_names_are_refused_before_anything_is_built(name, problem):
    with pytest.raises(ValueError) as error:
        wrappers.make_environment_factory(name)
    assert problem in str(error.value)
    if "scenario" in problem or "expected" in problem:
        for listed in ("HalfCheetah-2x3", "Ant-4x2", "Humanoid-9|8", "ManySegmentSwimmer"):
            assert listed in str(error.value)


RENDERING = mamujoco_env.rendering_problem()


@pytest.mark.skipif(RENDERING is not None, reason=f"{RENDERING}")
def test_render_draws_an_image_headless():
    env = wrappers.make_environment_factory("mamujoco/Ant-4x2", render_mode="rgb_array")(seed=0)
    env.reset()
    frame = env.render()
    env.close()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.std() > 10  # a scene, not a blank image


def test_without_a_rendering_library_a_render_mode_is_refused_naming_it():
    code = ("import wrappers\n"
            "try:\n"
            "    wrappers.make_environment_factory('mamujoco/Swimmer-2x1', render_mode='rgb_array')()\n"
            "except ValueError as error:\n"
            "    print('refused:', error)\n"
            "env = wrappers.make_environment_factory('mamujoco/Swimmer-2x1')(seed=0)\n"
            "env.reset(); env.step({a: s.generate_value() for a, s in env.action_spec().items()})\n"
            "print('simulates')\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=program_helpers.ROOT, capture_output=True,
                            text=True, timeout=120, env=dict(os.environ, MUJOCO_GL="disable"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused: MuJoCo cannot render off-screen" in result.stdout
    assert "libEGL.so.1" in result.stdout and "libegl1" in result.stdout
    assert "simulates" in result.stdout


def train_on_swimmer(example, run_dir):
    """Runs `example` (of examples/mamujoco) briefly on Swimmer-2x1 (25-step episodes); checks
    that it finished with finite critic losses and full episodes; the trainer's rows."""
    output = program_helpers.run_example(
        os.path.join("mamujoco", example), run_dir, "--env=mamujoco/Swimmer-2x1",
        '--env_kwargs={"max_episode_steps": 25}', "--max_executor_steps=300", "--min_replay_size=50",
        "--batch_size=16", "--evaluation_interval_s=1", "--terminal_log_interval_s=5",
        "--policy_hidden_sizes=16", "--critic_hidden_sizes=16", timeout=600)
    assert "Finished." in output
    trainer_rows = program_helpers.read_csv(run_dir, "trainer")
    assert trainer_rows and int(trainer_rows[-1]["trainer_steps"]) > 0
    assert all(np.isfinite(float(row["critic_loss"])) for row in trainer_rows)
    assert int(program_helpers.read_csv(run_dir, "executor_0")[-1]["episode_length"]) == 25
    return trainer_rows


def test_maddpg_trains_on_swimmer_through_the_example_and_records_a_gif(tmp_path):
    run_dir = str(tmp_path / "run")
    train_on_swimmer("run_maddpg.py", run_dir)
    if RENDERING is None:
        gif = str(tmp_path / "swimmer.gif")
        recorded = program_helpers.evaluate_checkpoint(run_dir, f"--record={gif}")
        assert recorded["frames"] == 26 and recorded["episode_lengths"] == [25]
        assert os.path.getsize(gif) > 0


def test_masac_trains_on_swimmer_through_the_example_and_its_checkpoint_evaluates(tmp_path):
    run_dir = str(tmp_path / "run")
    trainer_rows = train_on_swimmer("run_masac.py", run_dir)
    assert all(float(row["temperature"]) > 0.0 for row in trainer_rows)
    evaluated = program_helpers.evaluate_checkpoint(run_dir, "--episodes=2")
    assert evaluated["episodes"] == 2 and int(evaluated["trainer_steps"]) > 0
    assert np.all(np.isfinite(evaluated["returns"]))
