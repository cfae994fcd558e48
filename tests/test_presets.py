"""Published protocols (`experiment --preset`): each preset's grid by --dry_run, bad input refused."""

import json
import os
import re

import numpy as np
import pytest

import wrappers

from mava_systems.experiment import __main__ as cli
from mava_systems.experiment import grid as grid_lib
from mava_systems.experiment import presets
from mava_systems.experiment import report as report_lib

LBF_IDS = ("lbf/Foraging-8x8-2p-2f-coop-v3", "lbf/Foraging-2s-8x8-2p-2f-coop-v3",
           "lbf/Foraging-10x10-3p-3f-v3", "lbf/Foraging-2s-10x10-3p-3f-v3",
           "lbf_epymarl/Foraging-15x15-3p-5f-v3", "lbf/Foraging-15x15-4p-3f-v3",
           "lbf_epymarl/Foraging-15x15-4p-5f-v3")


def dry_run(capsys, *arguments):
    assert cli.main(["--dry_run", *arguments]) == 0
    return capsys.readouterr().out


def parts(text):
    """{part: (runs, executor steps per run)} from a dry run's output."""
    return {name: (int(runs), int(steps.replace(",", ""))) for name, runs, steps in
            re.findall(r"^Part (\w+) \(in <out>/\w+\): (\d+) runs of ([\d,]+) executor steps",
                       text, re.MULTILINE)}


def evaluation_steps(text):
    """{part: most evaluation steps per run} from a dry run's output."""
    return {name: int(steps.replace(",", "")) for name, steps in re.findall(
        r"^Part (\w+) .* and up to ([\d,]+) evaluation steps each", text, re.MULTILINE)}


def hours(text):
    return float(re.search(r"about ([\d,.]+) hours at", text).group(1).replace(",", ""))


def test_epymarl_lbf_runs_the_seven_readme_tasks_off_and_on_policy_at_epymarls_budgets(capsys):
    text = dry_run(capsys, "--preset=epymarl_lbf")
    assert text.splitlines()[0].startswith("Preset epymarl_lbf (")
    assert "at --scale=1: the published budgets" in text.splitlines()[0]
    assert f"tasks: {', '.join(LBF_IDS)}" in text
    # 3 value-based and 2 on-policy systems x 7 tasks x 5 seeds; on-policy budgets 10x.
    assert parts(text) == {"off_policy": (105, 2_000_000), "on_policy": (70, 20_000_000)}
    # EPyMARL counts on-policy steps in one of 10 environments: 10x the interval there too.
    assert ("every 50,000 executor steps (on_policy every 500,000), 100 greedy episodes" in text
            and "Seeds: 5." in text)
    assert "mappo.evaluation_every_steps=500000" in text
    assert "systems: qmix, vdn, iql=madqn" in text and "systems: mappo, ippo" in text
    assert "qmix.exploration=linear:1,0.05,50000" in text
    assert "mappo.num_envs_per_executor=10" in text and "mappo.recurrent=true" in text
    # EPyMARL's GRU agent beside an MLP critic; a batch of 10 episodes' steps, no minibatches.
    for setting in ("recurrent_critic=false", "rnn_input_layers=1", "rnn_hidden_size=128",
                    "batch_size=10", "sequence_length=51", "num_minibatches=1"):
        assert f"ippo.{setting}" in text, setting
    assert "collecting all food gives 1.0" in text  # Units.
    # Evaluation: a round at 0, at every 50,000 (on-policy 500,000) steps and at the limit,
    # then the final evaluation of 10 rounds' episodes; 100 episodes of at most 50 steps each.
    off_evaluation = on_evaluation = (41 + 10) * 100 * 50
    assert evaluation_steps(text) == {"off_policy": off_evaluation, "on_policy": on_evaluation}
    assert hours(text) == pytest.approx(
        (105 * (2e6 + off_evaluation) + 70 * (20e6 + on_evaluation)) / 300 / 3600, abs=0.1)


def test_scale_shrinks_every_budget_and_is_stated_first(capsys):
    text = dry_run(capsys, "--preset=epymarl_rware", "--scale=0.01", "--seeds=2",
                   "--steps_per_s=1000", "--parallel=2")
    assert text.splitlines()[0].startswith("Preset epymarl_rware (")
    assert "--scale=0.01: every budget, evaluation interval and exploration schedule x 0.01" in (
        text.splitlines()[0])
    for task in ("tiny-2ag", "tiny-4ag", "small-4ag"):
        assert f"rware/rware-{task}-v2" in text
    # RWARE's off-policy budget is 4M (on-policy 40M), x 0.01; 2 seeds asked for.
    assert parts(text) == {"off_policy": (18, 40_000), "on_policy": (12, 400_000)}
    assert "every 500 executor steps (on_policy every 5,000), 100 greedy episodes" in text
    assert "qmix.exploration=linear:1,0.05,500" in text
    # The same number of evaluation rounds as at full scale (81 in both parts), of 500-step
    # episodes.
    off_evaluation = on_evaluation = (81 + 10) * 100 * 500
    assert evaluation_steps(text) == {"off_policy": off_evaluation, "on_policy": on_evaluation}
    assert hours(text) == pytest.approx(
        (18 * (4e4 + off_evaluation) + 12 * (4e5 + on_evaluation)) / 1000 / 2 / 3600, abs=0.1)


def test_mappo_mpe_has_the_papers_tasks_budgets_and_epochs_and_its_spread_figure(capsys):
    text = dry_run(capsys, "--preset=mappo_mpe")
    assert parts(text) == {"spread": (5, 20_000_000), "speaker_listener": (5, 2_000_000),
                           "reference": (5, 3_000_000)}
    assert "mappo.num_envs_per_executor=128" in text and "mappo.learning_rate=0.0007" in text
    # 128 environments x 25 steps per update in 1 minibatch; rMAPPO's layout.
    for setting in ("batch_size=128", "sequence_length=26", "num_minibatches=1",
                    "recurrent_critic=true", "rnn_input_layers=none"):
        assert f"mappo.{setting}" in text, setting
    assert re.search(r"Part speaker_listener .*\n.*\n.*\n.*mappo\.num_epochs=15.*"
                     r"mappo\.shared_weights=false", text)
    assert re.search(r"Part spread .*\n.*\n.*\n.*mappo\.num_epochs=10", text)
    assert "published: mappo on mpe/simple_spread_v3: -22.5 (sum over the agents" in text
    assert "about -120 in its team units T" in text and "ours = (T + 75) / 2" in text


def test_mava_multiwalker_runs_mad4pg_with_mavas_settings_and_figure(capsys):
    text = dry_run(capsys, "--preset=mava_multiwalker")
    assert parts(text) == {"mad4pg": (5, 1_000_000)}
    assert "sisl/multiwalker_v9" in text and "mad4pg.num_atoms=51" in text
    assert "published: mad4pg on sisl/multiwalker_v9: 120 (sum over the 3 walkers" in text
    assert "Mava issue #314" in text


def test_every_presets_settings_are_valid_for_its_systems_and_tasks_exist():
    for preset in presets.PRESETS.values():
        for part in preset.parts:
            flags = presets.part_flags(preset, part, 0.5)
            entries = grid_lib.parse_entries(flags["systems"])
            assert [entry.label for entry in entries] == part.labels
            grid_lib.parse_overrides(flags["overrides"], entries)  # ValueError on a bad one.
            grid_lib.import_modules({"environments": flags["env_module"]})
            grid_lib.parse_environments(flags["envs"])
            assert flags["max_executor_steps"] == part.max_executor_steps // 2


@pytest.mark.parametrize("arguments, message", [
    (["--preset=nope"], "unknown preset 'nope'; presets: epymarl_lbf, epymarl_rware, "
                        "mappo_mpe, mava_multiwalker"),
    (["--preset=epymarl_lbf", "--max_executor_steps=10"], "--preset sets the budgets: leave "
                                                          "out --max_executor_steps"),
    (["--preset=epymarl_lbf", "--systems=qmix,madqn"],
     "preset epymarl_lbf has no entries madqn; its entries: qmix, vdn, iql=madqn, mappo, ippo"),
    (["--preset=epymarl_rware", "--envs=rware/rware-tiny-9ag-v2"],
     "preset epymarl_rware has no tasks rware/rware-tiny-9ag-v2; its tasks: "
     "rware/rware-tiny-2ag-v2, rware/rware-tiny-4ag-v2, rware/rware-small-4ag-v2"),
    (["--preset=mappo_mpe", "--systems=mappo", "--envs=mpe/simple_spread_v3", "--set",
      "mappo.batch_size=8", "--set", "mappo.seeds=x"], "MAPPOConfig has no field 'seeds'"),
    (["--preset=epymarl_lbf", "--systems=qmix", "--set", "mappo.learning_rate=1"],
     "the preset has no entry labelled 'mappo'"),
    (["--preset=epymarl_lbf", "--scale=2"], "--scale must be in (0, 1], got 2.0"),
    (["--preset=epymarl_lbf", "--set", "qmax.learning_rate=1"],
     "the preset has no entry labelled 'qmax'"),
    (["--systems=qmix", "--envs=debug/line_world_v0", "--max_executor_steps=10", "--dry_run"],
     "--dry_run and --scale go with --preset"),
    (["--envs=debug/line_world_v0"], "required: --systems, --max_executor_steps, --out"),
    (["--preset=mappo_mpe", "--seeds=0", "--dry_run"], "--seeds must be >= 1, got 0"),
    (["--preset=mappo_mpe", "--parallel=0", "--dry_run"], "--parallel must be >= 1, got 0"),
])
def test_bad_preset_commands_are_refused_before_anything_starts(tmp_path, capsys, arguments,
                                                                message):
    out = str(tmp_path / "grid")
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*arguments, f"--out={out}"] if arguments != ["--envs=debug/line_world_v0"]
                 else arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(out)


def test_epymarls_five_food_lbf_tasks_are_lbforagings_with_five_foods():
    from mava_systems.experiment import epymarl_tasks  # Registers them.
    for task, players in (("15x15-3p-5f", 3), ("15x15-4p-5f", 4)):
        environment = wrappers.make_environment_factory(epymarl_tasks.name(task))()
        foraging = environment.environment.env.unwrapped
        assert (foraging.max_num_food, foraging.field_size) == (5, (15, 15))
        assert len(environment.possible_agents) == players


def test_the_published_table_puts_each_figure_beside_our_returns():
    preset = presets.get("mappo_mpe")
    numbers = {"spread": {"paper": {"mpe/simple_spread_v3": {"mappo": {
        "maximum": [-30.0, -32.0, -28.0], "final": [-31.0, -33.0, -29.0]}}}}}
    rows = presets.published_table(preset, numbers)
    assert rows[2] == ("| mpe/simple_spread_v3 | mappo | -30.000 [-32.000, -28.000] | "
                       "-31.000 [-33.000, -29.000] | -22.5 | " + presets.PRESETS["mappo_mpe"]
                       .part("spread").published["mpe/simple_spread_v3"]["mappo"].units
                       + " | " + presets.PRESETS["mappo_mpe"].part("spread")
                       .published["mpe/simple_spread_v3"]["mappo"].source + " |")
    assert presets.published_table(presets.get("epymarl_lbf"), {})[0].startswith(
        "No published figure")


def saved_grids(out, *arguments):
    """Checks and saves a preset command's grids in `out` as the command does, running nothing."""
    parser = cli._run_parser()  # pylint: disable=protected-access
    grids, _ = cli._checked_grids(  # pylint: disable=protected-access
        parser, parser.parse_args([*arguments, f"--out={out}"]))
    return dict(grids)


def test_the_protocol_says_where_set_changed_the_evaluation_schedule():
    preset = presets.get("epymarl_lbf")
    published = presets.protocol_lines(preset, 0.01, 2, ["qmix.lr=0.001"])[1]
    assert "100 greedy episodes on fixed seeds. Seeds: 2." in published
    assert "--set" not in published
    changed = presets.protocol_lines(preset, 0.01, 2,
                                     ["qmix.evaluation_episodes=10", "qmix.lr=0.001"])[1]
    assert "changed by --set: qmix.evaluation_episodes=10)" in changed
    assert "lr" not in changed


def test_a_preset_run_saves_each_part_as_a_grid_with_the_presets_settings(tmp_path, capsys):
    out = str(tmp_path / "lbf")
    arguments = ["--preset=epymarl_lbf", "--scale=0.001", "--seeds=2", "--set",
                 "qmix.batch_size=16"]
    grids = saved_grids(out, *arguments)
    assert presets.read(out) == {"preset": "epymarl_lbf", "scale": 0.001, "seeds": 2,
                                 "changes": ["qmix.batch_size=16"]}
    off_policy = grid_lib.read_grid(os.path.join(out, "off_policy"))
    assert off_policy.settings() == grids["off_policy"].settings()
    assert [entry.label for entry in off_policy.entries] == ["qmix", "vdn", "iql"]
    assert off_policy.max_executor_steps == 2000 and off_policy.seeds == 2
    assert off_policy.overrides["qmix"]["exploration"] == "linear:1,0.05,50"
    assert off_policy.overrides["qmix"]["evaluation_every_steps"] == "50"
    assert off_policy.overrides["qmix"]["batch_size"] == "16"  # The user's change, after.
    assert "batch_size" not in off_policy.overrides["vdn"]
    # The 5-food tasks' module is recorded, so each run and the report import it.
    assert off_policy.modules["environments"] == [presets.EPYMARL_TASKS_MODULE]
    # Each part's experiment.json states the preset, its scale and the part.
    with open(os.path.join(out, "on_policy", grid_lib.SETTINGS_FILE)) as settings:
        saved = json.load(settings)
    assert saved["preset"] == {"name": "epymarl_lbf", "scale": 0.001, "part": "on_policy"}
    assert saved["max_executor_steps"] == 20_000
    # The same command again is accepted (a resume); another scale is refused untouched.
    saved_grids(out, *arguments)
    with pytest.raises(SystemExit):
        saved_grids(out, arguments[0], "--scale=0.002", *arguments[2:])
    assert "holds the preset run" in capsys.readouterr().err
    assert presets.read(out)["scale"] == 0.001
    # --start_fresh moves the earlier run aside whole.
    saved_grids(out, arguments[0], "--scale=0.002", "--start_fresh")
    assert presets.read(out)["scale"] == 0.002 and presets.read(out + ".old-1")["scale"] == 0.001


def test_a_preset_run_refuses_a_directory_it_did_not_make_and_saves_nothing_on_a_bad_setting(
        tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit):
        saved_grids(str(other), "--preset=mava_multiwalker")
    assert "is not empty and holds no preset run" in capsys.readouterr().err
    assert os.listdir(other) == ["notes.txt"]
    out = str(tmp_path / "walker")
    with pytest.raises(SystemExit):
        saved_grids(out, "--preset=mava_multiwalker", "--set", "mad4pg.batch_size=many")
    assert "mad4pg.batch_size=many" in capsys.readouterr().err
    assert not os.path.exists(out)


def test_systems_and_envs_pick_a_presets_entries_and_tasks_recorded_for_resume_and_report(
        tmp_path, capsys):
    text = dry_run(capsys, "--preset=epymarl_lbf", "--systems=qmix,mappo",
                   "--envs=lbf/Foraging-8x8-2p-2f-coop-v3,lbf/Foraging-2s-8x8-2p-2f-coop-v3",
                   "--seeds=3")
    first = text.splitlines()[0]
    assert first.startswith("Preset epymarl_lbf (EPyMARL's Level-Based Foraging benchmark) "
                            "(only the entries qmix, mappo; tasks lbf/Foraging-8x8-2p-2f-coop")
    assert "systems: qmix\n" in text and "systems: mappo\n" in text and "vdn" not in text
    assert "In all: 12 runs" in text and "15x15" not in text
    # Only the kept entries' settings.
    assert "qmix.recurrent=true" in text and "ippo." not in text and "iql." not in text

    out = str(tmp_path / "lbf")
    arguments = ["--preset=epymarl_lbf", "--scale=0.001", "--systems=vdn",
                 "--envs=lbf/Foraging-8x8-2p-2f-coop-v3"]
    grids = saved_grids(out, *arguments)
    assert list(grids) == ["off_policy"]  # No on-policy entry is left.
    assert [entry.label for entry in grids["off_policy"].entries] == ["vdn"]
    assert presets.read(out)["only"] == {"entries": ["vdn"],
                                         "tasks": ["lbf/Foraging-8x8-2p-2f-coop-v3"]}
    with open(os.path.join(out, "off_policy", grid_lib.SETTINGS_FILE)) as settings:
        record = json.load(settings)["preset"]
    assert "only the entries vdn" in presets.part_heading(record)
    saved_grids(out, *arguments)  # The same choice again resumes it; another is refused.
    with pytest.raises(SystemExit):
        saved_grids(out, *arguments[:2], "--systems=qmix", arguments[3])
    assert "holds the preset run" in capsys.readouterr().err
    # The whole preset's record is unchanged: runs saved before narrowing existed resume.
    whole = str(tmp_path / "whole")
    saved_grids(whole, "--preset=mava_multiwalker", "--scale=0.001")
    assert "only" not in presets.read(whole)
    assert presets.from_record(presets.read(whole)) == presets.get("mava_multiwalker")


def test_a_dry_run_creates_nothing(tmp_path, capsys):
    out = str(tmp_path / "spread")
    text = dry_run(capsys, "--preset=mappo_mpe", "--scale=0.5", f"--out={out}")
    assert text.startswith("Preset mappo_mpe") and not os.path.exists(out)


def test_the_preset_report_puts_published_figures_beside_ours_and_names_unfinished_parts(
        tmp_path):
    from test_report_metrics import write_run  # pylint: disable=import-outside-toplevel
    out = str(tmp_path / "mpe")
    grids = saved_grids(out, "--preset=mappo_mpe", "--scale=0.0001", "--seeds=2")
    spread = grids["spread"]  # 2,000 steps, evaluated every 10: finished here by hand.
    with open(os.path.join(out, "spread", report_lib.RANDOM_SCORES_FILE), "w") as scores:
        json.dump({"mpe/simple_spread_v3": -80.0}, scores)
    steps = list(range(0, 2001, 500))
    for run in spread.runs(os.path.join(out, "spread")):
        final = [-40.0 - run.seed, -42.0 - run.seed]
        write_run(run.run_dir, steps, [-80.0, -60.0, -50.0, -45.0, np.mean(final)], final)
    report_dir = str(tmp_path / "report")
    assert cli.main(["report", out, f"--out={report_dir}", "--reps=50"]) == 0
    with open(os.path.join(report_dir, report_lib.REPORT_FILE)) as report_file:
        text = report_file.read()
    first = text.splitlines()[0]
    assert first.startswith("# Preset mappo_mpe (") and "--scale=0.0001" in first
    row = next(line for line in text.splitlines() if line.startswith("| mpe/simple_spread_v3"))
    # Our final return: the mean over the 2 seeds of each run's final evaluation (-41, -42).
    assert "| -41.500 [" in row and "(n=2)" in row and "| -22.5 |" in row
    assert "MAPPO paper" in row
    assert re.search(r"- speaker_listener: not reported \(.*has not finished", text)
    with open(os.path.join(report_dir, "spread", report_lib.REPORT_FILE)) as part_file:
        assert part_file.readline().startswith(
            "# Preset mappo_mpe (The MAPPO paper's MPE tasks) at --scale=0.0001")
