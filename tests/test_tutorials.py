"""The documentation's tutorials run as written (docs/tutorials/*, included into the pages).

Each tutorial runs as a subprocess with few executor steps, and its terminal shows
none of the libraries' start-up lines (they go to the run's output.log); the
log-cosh loss of tutorial 2 is also checked directly against a hand-made batch,
and MAA2C and VDN-S learn above random play, and weighted QMIX the two-step game, in this process.
"""

import csv
import importlib.util
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from acme import types as acme_types
from mava_systems import qmix, vdn
from mava_systems.terminal import console
from mava_systems.acting.random_policy import random_policy_return
import wrappers
from test_mappo import train_in_process
from test_value_decomposition_training import train_on_uniform_play
from wrappers.two_step_game import ADDITIVE_RETURN, OPTIMAL_RETURN

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "docs", "tutorials")
FAST = ["--lp_launch_type=local_mt", "--min_replay_size=100", "--batch_size=32",
        "--evaluation_interval_s=0.5", "--progress_interval_s=0"]


# Library lines a quiet terminal never shows (see `console.quiet_terminal`): TensorFlow's,
# absl's, Gym's notice (`console.is_startup_noise`), Reverb's and Python warnings.
LIBRARY_LINE = re.compile(r"\[reverb/|WARNING:(absl|tensorflow)|.*(Warning:|cuda|CUDA)")


def library_lines(output):
    """The lines of `output` that come from the libraries rather than the framework."""
    return [line for line in output.splitlines()
            if console.is_startup_noise(line) or LIBRARY_LINE.match(line)]


def run(command, timeout=300, quiet=True, **env):
    """Runs `command` from the repository root as a user would (TensorFlow's logging not
    silenced); returns its standard output, failing on a non-zero exit or (when `quiet`) a
    library line on the terminal."""
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", PYTHON=sys.executable, **env)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"exit code {result.returncode}:\n{output[-5000:]}"
    assert not (quiet and library_lines(output)), library_lines(output)[:20]
    return result.stdout


def read_csv(run_dir, node):
    with open(os.path.join(run_dir, "logs", node, "logs.csv")) as csv_file:
        return list(csv.DictReader(csv_file))


def load_tutorial(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TUTORIALS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_1_new_environment_trains_on_the_echo_game(tmp_path):
    run_dir = str(tmp_path / "echo")
    run([sys.executable, os.path.join(TUTORIALS, "new_environment.py"), *FAST, "--n_step=1",
         "--max_executor_steps=1000", f"--run_dir={run_dir}"])
    assert {int(row["episode_length"]) for row in read_csv(run_dir, "executor_0")} == {5}
    returns = [float(row["evaluation_return"]) for row in read_csv(run_dir, "evaluator")]
    # Random play scores 10/3 on average and perfect play 10.
    assert max(returns) >= 7.0, returns
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    assert description["environment_name"] == "tutorial/echo_v0"
    assert description["environment_registration"] == os.path.join(TUTORIALS, "new_environment.py")
    # A fresh process finds the script's environment through run.json and evaluates the run.
    result = json.loads(run([sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}",
                             "--episodes=3"]).strip().splitlines()[-1])
    assert result["episodes"] == 3 and 0.0 <= result["mean_return"] <= 10.0
    if returns[-1] == 10.0:  # The final round's weights are (near) those checkpointed last.
        assert result["mean_return"] >= 7.0, result


def test_1_the_echo_environment_rewards_repeating_the_symbol():
    load_tutorial("new_environment")  # Registers tutorial/echo_v0.
    environment = wrappers.make_environment_factory("tutorial/echo_v0")(seed=0)
    assert environment.extras_spec()["env_state"].shape == (3,)  # The tutorial's global state.
    timestep = environment.reset()
    total = 0.0
    while not timestep.last():
        symbol = int(np.argmax(timestep.observation["agent_0"].observation))
        timestep = environment.step({"agent_0": symbol, "agent_1": (symbol + 1) % 3})
        total += timestep.reward["agent_0"] - timestep.reward["agent_1"]
    assert total == 5.0


def test_2_log_cosh_trainer_is_used_and_grows_linearly_for_large_errors(tmp_path):
    tutorial = load_tutorial("log_cosh_madqn")
    errors = np.array([0.5, -2.0, 3.0])
    np.testing.assert_allclose(tutorial.log_cosh(tf.constant(errors)).numpy(),
                               np.log(np.cosh(errors)), rtol=1e-6)
    system = tutorial.LogCoshMADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                                   run_dir=str(tmp_path / "run"))
    networks = system.builder.make_networks()
    trainer = system.builder.make_trainer(networks, iter([]), checkpoint=False)
    assert isinstance(trainer, tutorial.LogCoshMADQNTrainer)

    batch, agents, size = 4, 2, 10  # line_world: 2 agents, observations of 10, 3 actions.
    observation = wrappers.OLT(observation=tf.ones([batch, agents, size]),
                               legal_actions=tf.ones([batch, agents, 3]),
                               terminal=tf.zeros([batch, agents, 1]))
    transitions = acme_types.Transition(
        observation={"agent": observation}, action={"agent": tf.zeros([batch, agents], tf.int32)},
        reward={"agent": tf.fill([batch, agents], 100.0)},  # TD errors far beyond 1.
        discount={"agent": tf.ones([batch, agents])}, next_observation={"agent": observation})
    loss, td_error, _ = trainer.network_loss("agent", transitions)
    assert np.all(np.abs(td_error.numpy()) > 50)
    np.testing.assert_allclose(loss.numpy(), np.abs(td_error.numpy()) - np.log(2.0), rtol=1e-5)


def run_tutorial_program(script, run_dir, loss_key, flags=FAST):
    """Runs a tutorial's system for 400 steps; checks it trained with finite `loss_key` losses.
    Returns the trainer's rows."""
    run([sys.executable, os.path.join(TUTORIALS, script), *flags, "--max_executor_steps=400",
         f"--run_dir={run_dir}"])
    rows = read_csv(run_dir, "trainer")
    assert rows and int(rows[-1]["trainer_steps"]) > 0
    assert all(np.isfinite(float(row[loss_key])) for row in rows)
    return rows


def test_2_log_cosh_madqn_runs_as_a_program(tmp_path):
    run_tutorial_program("log_cosh_madqn.py", str(tmp_path / "log_cosh"), "loss/agent")


def test_3_resume_then_evaluate_and_plot(tmp_path):
    run_dir = str(tmp_path / "line_world")
    output = run(["bash", os.path.join(TUTORIALS, "resume_and_evaluate.sh")],
                 timeout=400, STEPS="300", RUN_DIR=run_dir)
    assert f"Starting a fresh run in {run_dir}" in output
    assert f"Resuming the run in {run_dir} from trainer step" in output
    assert "Changed since the last launch: config.learning_rate, max_executor_steps" in output
    evaluation = json.loads(next(line for line in output.splitlines()
                                 if line.startswith('{"checkpoint"')))
    assert evaluation["episodes"] == 20
    assert evaluation["checkpoint"].startswith(os.path.join(run_dir, "checkpoints", "trainer"))
    assert int(read_csv(run_dir, "executor_0")[-1]["executor_steps"]) >= 600
    assert os.path.getsize(os.path.join(run_dir, "curves.png")) > 10_000


def test_4_multi_process(tmp_path):
    run_dir = str(tmp_path / "mp")
    # A trainer that trains (rather than waits for min_replay_size) stops within Launchpad's
    # 10 s notice even on a loaded machine.
    output = run(["bash", os.path.join(TUTORIALS, "multi_process.sh"), "--min_replay_size=100",
                  "--batch_size=32"], timeout=400, ENV="debug/line_world_v0", STEPS="400",
                 RUN_DIR=run_dir)
    assert "(launch type local_mp)" in output and "Finished." in output
    for executor in ("executor_0", "executor_1"):
        assert read_csv(run_dir, executor), executor
    assert int(read_csv(run_dir, "trainer")[-1]["trainer_steps"]) > 0
    with open(os.path.join(run_dir, "config.json")) as config_file:
        saved = json.load(config_file)
    assert (saved["num_executors"], saved["num_caches"]) == (2, 1)


def test_5_the_state_weighted_mixer_is_a_monotonic_weighted_sum(tmp_path):
    tutorial = load_tutorial("state_weighted_mixer")
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    system = qmix.QMIX(factory, mixer_factory=tutorial.make_state_weighted_sum,
                       run_dir=str(tmp_path / "run"))
    mixer = system.builder.make_mixer()
    assert isinstance(mixer, tutorial.StateWeightedSum)
    states = tf.random.normal([16, 20])  # line_world's state: 2 agents x 10.
    q_values = tf.random.normal([16, 2])
    weights = tf.nn.softplus(mixer.weights(states)).numpy()
    expected = (weights * q_values.numpy()).sum(axis=1) + mixer.bias(states).numpy()[:, 0]
    np.testing.assert_allclose(mixer(q_values, states).numpy(), expected, rtol=1e-5)
    assert np.all(weights >= 0)
    subclassed = tutorial.StateWeightedQMIX(factory, run_dir=str(tmp_path / "run"))
    assert isinstance(subclassed.builder.make_mixer(), tutorial.StateWeightedSum)


def test_5_state_weighted_qmix_runs_as_a_program(tmp_path):
    run_dir = str(tmp_path / "weighted")
    run_tutorial_program("state_weighted_mixer.py", run_dir, "loss")  # One team loss.
    with open(os.path.join(run_dir, "run.json")) as run_file:
        # The state-weighted sum's variables: weights [20, 2] and [2], bias [20, 1] and [1].
        assert sorted(json.load(run_file)["mixer_variables"]) == [[1], [2], [20, 1], [20, 2]]


def evaluate_run(run_dir):
    """`python -m mava_systems.evaluate` on the run: its JSON result."""
    output = run([sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={run_dir}",
                  "--episodes=3"], quiet=False)
    return json.loads(output.splitlines()[-1])


def recorded_class(run_dir):
    with open(os.path.join(run_dir, "run.json")) as run_file:
        description = json.load(run_file)
    return description["system"], description["system_class"], description.get("system_script")


def test_6_maa2c_trains_with_its_own_policy_loss_and_learns_the_line_world(tmp_path):
    tutorial = load_tutorial("maa2c")
    factory = wrappers.make_environment_factory("debug/line_world_v0")
    config = tutorial.MAA2CConfig(batch_size=8, sequence_length=11, learning_rate=3e-3,
                                  critic_learning_rate=1e-3, seed=1)
    system = tutorial.MAA2C(factory, config=config, run_dir=str(tmp_path / "run"))
    assert isinstance(system.builder.make_trainer(system.builder.make_networks(), iter([]),
                                                  checkpoint=False), tutorial.MAA2CTrainer)
    tf.random.set_seed(0)
    returns = train_in_process(system, 6000)  # About 15 s.
    random_return = random_policy_return(factory, episodes=50).mean_return  # About -3.2.
    assert np.mean(returns[-3:]) > random_return + 0.6, (returns, random_return)


MAPPO_FAST = ["--lp_launch_type=local_mt", "--batch_size=4", "--sequence_length=11",
              "--max_queue_size=8", "--trainer_log_interval_s=0",
              "--evaluation_interval_s=0.5", "--progress_interval_s=0"]


def test_6_maa2c_runs_as_a_program_and_its_run_evaluates(tmp_path):
    run_dir = str(tmp_path / "maa2c")
    rows = run_tutorial_program("maa2c.py", run_dir, "policy_loss/agent", MAPPO_FAST)
    assert "entropy/agent" in rows[-1] and "clip_fraction/agent" not in rows[-1]
    assert recorded_class(run_dir) == ("maa2c", "__main__:MAA2C",
                                       os.path.join(TUTORIALS, "maa2c.py"))
    assert -16.0 <= evaluate_run(run_dir)["mean_return"] <= 0.0  # Loaded from the script.


def test_7_vdn_s_adds_a_state_bias_and_learns_the_two_step_game(tmp_path):
    tutorial = load_tutorial("vdn_s")
    system = tutorial.VDNS(wrappers.make_environment_factory("debug/line_world_v0"),
                           run_dir=str(tmp_path / "run"))
    assert "env_state" in system.builder.replay_environment_extras_spec()  # Replay keeps it.
    mixer = system.builder.make_mixer()
    assert isinstance(mixer, tutorial.StateBiasedSum)
    states, q_values = tf.random.normal([16, 20]), tf.random.normal([16, 2])
    np.testing.assert_allclose(
        mixer(q_values, states).numpy(),
        q_values.numpy().sum(axis=1) + mixer.state_value(states).numpy()[:, 0], rtol=1e-5)
    # Random play returns (7 + 2.5) / 2 on average; an additive value, 7 (2A), at least.
    greedy_return, trainer = train_on_uniform_play(tutorial.VDNS, vdn.VDNConfig, str(tmp_path))
    assert greedy_return >= ADDITIVE_RETURN > 4.75
    assert "target_module/mixer" in trainer.state  # The state bias has weights to track.


def test_7_vdn_s_runs_as_a_program_and_its_run_evaluates(tmp_path):
    run_dir = str(tmp_path / "vdns")
    run_tutorial_program("vdn_s.py", run_dir, "loss")
    assert recorded_class(run_dir) == ("vdns", "__main__:VDNS", os.path.join(TUTORIALS, "vdn_s.py"))
    with open(os.path.join(run_dir, "run.json")) as run_file:
        # The state bias's MLP on line_world's state (20): hidden 32, then 1.
        assert sorted(json.load(run_file)["mixer_variables"]) == [[1], [20, 32], [32], [32, 1]]
    assert -16.0 <= evaluate_run(run_dir)["mean_return"] <= 0.0  # No "unknown system 'vdns'".


def test_8_weighted_qmix_weighs_overestimates_by_alpha_and_learns_the_two_step_game(tmp_path):
    tutorial = load_tutorial("weighted_qmix")
    two_step = wrappers.make_environment_factory("debug/two_step_v0")
    system = tutorial.WeightedQMIX(two_step, config=tutorial.WeightedQMIXConfig(alpha=0.25),
                                   run_dir=str(tmp_path / "run"))
    trainer = system.builder.make_trainer(system.builder.make_networks(), iter(()),
                                          checkpoint=False)
    assert type(trainer) is tutorial.WeightedQMIXTrainer
    # Huber (parameter 1) of each TD error (target - Q_tot), times 0.25 where Q_tot is above it.
    np.testing.assert_allclose(trainer.team_td_losses(tf.constant([2.0, -2.0, 0.5, -0.5])),
                               [1.5, 0.25 * 1.5, 0.125, 0.25 * 0.125], rtol=1e-6)
    # The recurrent trainer takes the same hook.
    recurrent = tutorial.WeightedQMIX(two_step, run_dir=str(tmp_path / "recurrent"),
                                      config=tutorial.WeightedQMIXConfig(recurrent=True))
    assert recurrent.builder.trainer_class_to_use() is tutorial.RecurrentWeightedQMIXTrainer
    # Random play returns (7 + 2.5) / 2 on average, an additive value 7 (2A); QMIX's 8 (2B).
    greedy_return, _ = train_on_uniform_play(tutorial.WeightedQMIX, tutorial.WeightedQMIXConfig,
                                             str(tmp_path / "trained"))
    assert greedy_return == OPTIMAL_RETURN


def test_every_tutorial_script_quiets_the_terminal_before_importing_tensorflow():
    for path in glob.glob(os.path.join(TUTORIALS, "*.py")):
        with open(path) as script:
            source = script.read()
        quiet = source.find("console.quiet_terminal()")
        assert 0 < quiet < source.find("import tensorflow" if "import tensorflow" in source
                                       else "from absl import app"), path


@pytest.mark.parametrize("page, source", [
    ("new_environment.md", "new_environment.py"), ("custom_loss.md", "log_cosh_madqn.py"),
    ("resume_and_evaluate.md", "resume_and_evaluate.sh"), ("multi_process.md", "multi_process.sh"),
    ("your_own_mixer.md", "state_weighted_mixer.py"), ("maa2c.md", "maa2c.py"),
    ("vdn_s.md", "vdn_s.py"), ("weighted_qmix.md", "weighted_qmix.py")])
def test_each_tutorial_page_includes_its_tested_code(page, source):
    with open(os.path.join(TUTORIALS, page)) as markdown:
        assert f'--8<-- "{source}"' in markdown.read()
