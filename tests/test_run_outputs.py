"""What a run leaves for its user: a quiet terminal (header, progress, summary), the printed
configuration and config.json, the output log, and learning curves drawn from its real logs.

One short `local_mt` run of the MPE example on `debug/line_world_v0` (a
subprocess: Launchpad keeps process-wide state) is shared by the tests here.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from mava_systems import madqn, plot
from mava_systems.terminal import run_summary
from mava_systems.runs.run_directory import CONFIG_FILE, format_run_config
import wrappers

from test_plot import png_size

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_STEPS = 600


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """(run_dir, output) of a 600-step run whose output is not a terminal."""
    run_dir = str(tmp_path_factory.mktemp("outputs") / "run")
    command = [sys.executable, os.path.join(ROOT, "examples", "mpe", "run_madqn.py"),
               "--lp_launch_type=local_mt", f"--run_dir={run_dir}", "--env=debug/line_world_v0",
               f"--max_executor_steps={MAX_STEPS}", "--min_replay_size=100", "--batch_size=32",
               "--n_step=3", "--evaluation_interval_s=0.5", "--progress_interval_s=1",
               "--learning_rate=0.002",
               # Node rows in the log even when the run takes only a few seconds.
               "--terminal_log_interval_s=1"]
    # TensorFlow's own logging stays on, as a user has it: the terminal must not show it.
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env["SDL_VIDEODRIVER"] = "dummy"
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=240)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert result.stderr == "", result.stderr[-3000:]  # No warning needed the user's attention.
    return run_dir, result.stdout


def test_config_json_holds_every_setting_and_rebuilds_the_config(tmp_path):
    system = madqn.MADQN(wrappers.make_environment_factory("debug/line_world_v0"),
                         max_executor_steps=123, num_caches=1,
                         config=madqn.MADQNConfig(batch_size=16, hidden_sizes=(8,)),
                         run_dir=str(tmp_path / "run"))
    system.prepare_run_dir()
    with open(tmp_path / "run" / CONFIG_FILE) as config_file:
        saved = json.load(config_file)
    assert {key: saved[key] for key in ("system", "environment", "num_executors", "num_caches",
                                        "max_executor_steps")} == {
        "system": "madqn", "environment": "debug/line_world_v0", "num_executors": 1,
        "num_caches": 1, "max_executor_steps": 123}
    assert set(saved["config"]) == {field.name for field in dataclasses.fields(madqn.MADQNConfig)}
    rebuilt = madqn.MADQNConfig(**{**saved["config"],
                                   "hidden_sizes": tuple(saved["config"]["hidden_sizes"])})
    assert rebuilt == system.config


def test_format_run_config_lists_config_fields_unprefixed():
    text = format_run_config({"system": "madqn", "max_executor_steps": None,
                              "config": {"batch_size": 16, "hidden_sizes": [8, 8]}}, width=40)
    assert text.splitlines() == ["  system=madqn max_executor_steps=null",
                                 "  batch_size=16 hidden_sizes=[8, 8]"]


def test_a_run_prints_its_configuration_and_saves_it(short_run):
    run_dir, output = short_run
    assert f"Configuration (saved in {os.path.join(run_dir, CONFIG_FILE)}):" in output
    assert "environment=debug/line_world_v0" in output and "batch_size=32" in output
    with open(os.path.join(run_dir, CONFIG_FILE)) as config_file:
        saved = json.load(config_file)
    assert saved["config"]["learning_rate"] == 0.002 and saved["max_executor_steps"] == MAX_STEPS
    # A launched program's trainer takes 4 steps per compiled call (its memory stays flat);
    # a config made in Python keeps 1, one trainer step per `step()`.
    assert saved["config"]["trainer_steps_per_call"] == 4
    assert madqn.MADQNConfig().trainer_steps_per_call == 1
    # The header says where the values that are not the config's defaults came from.
    settings = [line.strip() for line in output.splitlines()
                if line.startswith("  Settings: ")]
    assert len(settings) == 1 and settings[0].startswith(
        "Settings: MADQNConfig's defaults, except program default: trainer_steps_per_call=4; "
        "family setting (mpe, madqn): discount=0.9, agent_ids=True; command line: ")
    assert "n_step=3" in settings[0] and "learning_rate=0.002" in settings[0]


def test_a_run_without_a_terminal_prints_plain_progress_lines(short_run):
    _, output = short_run
    assert "\r" not in output
    lines = [line for line in output.splitlines() if line.startswith("Progress: executor steps")]
    assert len(lines) >= 3, output[-3000:]
    steps = [int(re.search(r"executor steps ([\d,]+)/600", line).group(1).replace(",", ""))
             for line in lines]
    assert steps == sorted(steps) and steps[-1] >= MAX_STEPS
    assert re.search(r"\| eval return -?\d+\.\d{3} \|", lines[-1])
    assert re.search(r"\| \d+\.\d steps/s \| elapsed 0:0\d:\d\d \| remaining 0:00:00$", lines[-1])
    assert output.index(lines[-1]) < output.index("Finished.")


def test_plot_draws_the_real_run(short_run, tmp_path):
    run_dir, _ = short_run
    curve = plot.read_learning_curve(run_dir)
    assert len(curve.steps) >= 3 and curve.steps[-1] > 0
    out = str(tmp_path / "curves.png")
    assert plot.main([run_dir, "--out", out, "--width", "800", "--height", "500"]) == 0
    assert png_size(out) == (800, 500)
    assert os.path.getsize(out) > 10_000


def test_every_node_logs_the_same_keys_to_csv_and_tensorboard(short_run):
    """One naming scheme: snake_case quantities, `/<agent or network>` for a per-part value."""
    from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=import-outside-toplevel
    run_dir, _ = short_run
    expected = {
        "executor_0": {"episode_return", "episode_length", "episode_return/agent_0",
                       "episode_return/agent_1", "episode_length/agent_0",
                       "episode_length/agent_1", "epsilon", "steps_per_second"},
        "evaluator": {"evaluation_return", "evaluation_return_std", "evaluation_episode_length",
                      "evaluation_return/agent_0", "evaluation_return/agent_1", "final"},
        "trainer": {"loss/agent", "q_value/agent", "gradient_norm/agent", "replay_size",
                    "step_time_s", "batch_wait_s"},
    }
    counts = {"executor_steps", "executor_episodes", "trainer_steps", "evaluator_steps",
              "evaluator_episodes", "executor_steps_per_second", "trainer_steps_per_second"}
    for node, keys in expected.items():
        with open(os.path.join(run_dir, "logs", node, "logs.csv")) as csv_file:
            columns = set(csv_file.readline().strip().split(","))
        assert columns == keys | counts, node
        assert all(re.fullmatch(r"[a-z0-9_]+(/[a-z0-9_]+)?", column) for column in columns)
        events = event_accumulator.EventAccumulator(os.path.join(run_dir, "tensorboard", node))
        events.Reload()
        steps_key = "trainer_steps" if node == "trainer" else "executor_steps"
        tags = set(events.Tags()["tensors"])
        assert tags == {f"{node}/{column}" for column in columns - {steps_key}}, node


# What must never reach the quiet terminal: TensorFlow's C++ logging, absl lines of any level,
# Gym's notice, Launchpad's stop countdown, Reverb's messages, the nodes' own log lines.
NOISE = re.compile(r"tensorflow/|^[IWEF]\d{4} |Gym has been|Waiting for workers|reverb/cc|"
                   r"^\[(Trainer|Executor|Evaluator)")


def test_the_terminal_shows_the_header_progress_and_summary_only(short_run):
    run_dir, output = short_run
    lines = output.splitlines()
    assert lines[:3] == [f"Starting a fresh run in {run_dir}",
                         f"Run directory: {run_dir} (launch type local_mt)",
                         f"Configuration (saved in {os.path.join(run_dir, CONFIG_FILE)}):"]
    summary = lines.index(next(line for line in lines if line.startswith("Finished. ")))
    body = lines[3:summary]
    configuration = [line for line in body if line.startswith("  ")]
    progress_lines = [line for line in body if line.startswith("Progress: ")]
    assert configuration and progress_lines
    assert len(configuration) + len(progress_lines) == len(body), body
    assert not [line for line in lines if NOISE.search(line)], output

    rounds = run_summary.evaluation_rounds(run_dir)
    assert len(rounds) >= 2
    with open(os.path.join(run_dir, run_summary.RANDOM_POLICY_FILE)) as saved:
        random_return = json.load(saved)["mean_return"]
    expected = [
        r"Finished\. [\d,]+ executor steps \([\d,]+ in this launch\) in 0:0\d:\d\d, "
        r"[\d,.]+ steps/s\.",
        r"Evaluation return, summed over agents \(4 greedy episodes per round\):",
        rf"  first round +{rounds[0].mean_return:.2f}   at executor step "
        rf"{rounds[0].executor_steps:,}",
        rf"  final round +{rounds[-1].mean_return:.2f}   at executor step "
        rf"{rounds[-1].executor_steps:,}",
        rf"  random policy +{random_return:.2f}   \(mean of \d+ episodes on the same environment\)",
        rf"Logs: +{re.escape(run_dir)}/logs/<node>/logs\.csv",
        rf"TensorBoard: +tensorboard --logdir {re.escape(run_dir)}/tensorboard",
        rf"Checkpoints: +{re.escape(run_dir)}/checkpoints",
        rf"Config: +{re.escape(run_dir)}/config\.json",
        rf"Output log: +{re.escape(run_dir)}/output\.log .*--verbose.*",
        rf"Plot: +\S+python\S* -m mava_systems\.plot {re.escape(run_dir)} --out \S+curves\.png",
        rf"Evaluate: +\S+python\S* -m mava_systems\.evaluate --run_dir={re.escape(run_dir)} "
        r"--episodes=100",
        rf"Resume: +\S+python\S* \S+run_madqn\.py .*--run_dir={re.escape(run_dir)} "
        rf"--max_executor_steps={2 * MAX_STEPS}",
    ]
    assert len(lines[summary:]) == len(expected), lines[summary:]
    for line, pattern in zip(lines[summary:], expected):
        assert re.fullmatch(pattern, line), (pattern, line)
    assert "--start_fresh" not in lines[-1] and f"--max_executor_steps={MAX_STEPS} " not in lines[-1]


def test_the_libraries_output_is_in_the_run_s_output_log(short_run):
    run_dir, _ = short_run
    with open(os.path.join(run_dir, "output.log"), errors="replace") as log_file:
        log = log_file.read()
    assert log.startswith("==== ") and "run_madqn.py" in log.splitlines()[0]
    assert re.search(r"^I\d{4} .*courier_utils\.py:\d+\] Binding", log, re.M)  # absl INFO
    assert f"Coordinator: executor_steps=" in log and "Waiting for workers to stop" in log
    assert "Stored checkpoint to" in log  # Reverb's checkpointer
    assert "[Trainer]" in log  # The nodes' terminal loggers


def shown_summary(markdown_path):
    """The summary block a page shows: the text block that starts with 'Finished.'."""
    with open(markdown_path) as page:
        blocks = re.findall(r"```text\n(.*?)```", page.read(), re.S)
    return next(block for block in blocks if block.startswith("Finished. ")).splitlines()


def test_the_readme_and_quickstart_show_the_summary_a_run_prints(short_run):
    _, output = short_run
    printed = output.splitlines()
    printed = printed[printed.index(next(line for line in printed if line.startswith("Finished. "))):]
    shown = shown_summary(os.path.join(ROOT, "README.md"))

    def labels(lines):
        return [re.match(r"\s*\S+", line).group() for line in lines]

    assert labels(shown) == labels(printed)
    assert shown == shown_summary(os.path.join(ROOT, "docs", "quickstart.md"))


@pytest.mark.parametrize("limit,steps_at_end,expected", [
    (1000, 1000, 2000),  # finished: continuing needs a higher limit
    (1000, 1012, 2000),  # finished a little past the limit
    (1000, 2500, 3500),  # resumed past twice the first limit
    (1000, 0, 1000),     # stopped by a failure at start-up: the same limit finishes it
    (1000, 640, 1000),   # stopped early by a signal
    (None, 640, None),   # no limit
])
def test_the_resume_line_keeps_the_limit_of_a_run_that_stopped_short(limit, steps_at_end, expected):
    assert run_summary.resume_step_limit(limit, steps_at_end) == expected


def test_a_run_stopped_before_its_evaluator_logged_has_no_evaluation_rounds(tmp_path):
    """A launch stopped while it was being built leaves no evaluator log: its summary has no
    rounds to show rather than an error (the error once replaced the summary of such a run)."""
    assert run_summary.evaluation_rounds(str(tmp_path)) == []
    os.makedirs(tmp_path / "logs" / "evaluator")
    (tmp_path / "logs" / "evaluator" / "logs.csv").write_text("")
    assert run_summary.evaluation_rounds(str(tmp_path)) == []
