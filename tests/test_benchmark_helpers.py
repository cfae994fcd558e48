"""The benchmarks' own logic: replay filled by a system's executor, queues kept for timing,
what one trainer step is per system, and names checked before anything starts."""

import subprocess
import sys

import pytest
import tree

from benchmarks import common, program, trainer
from mava_systems.launching import launch
from mava_systems.madqn import MADQNConfig
from mava_systems.mappo import MAPPOConfig


def test_mappo_replay_is_filled_with_sequences_that_stay_when_sampled():
    queue = common.local_madqn("test", "mappo", seed=0)
    local = common.local_madqn("test", "mappo", keep_items=True, seed=0)
    system, _, client = local
    try:
        # MAPPO's own replay is a queue: each sequence is handed out once.
        assert next(iter(queue[2].server_info().values())).max_times_sampled == 1
        items = trainer.fill_replay(system, client, steps=50, seed=0)
        config = system.config
        assert items >= config.batch_size  # Enough sequences for a batch, whatever `steps`.
        dataset = system.builder.make_dataset_iterator(client)
        for _ in range(3):  # Three batches from as few as one batch's worth of sequences.
            sample = next(dataset)
        for leaf in tree.flatten(sample.data):
            assert tuple(leaf.shape[:2]) == (config.batch_size, config.sequence_length)
        assert trainer.replay_size(client) == items  # Sampled sequences stay.
        del dataset
    finally:
        common.stop_local([queue, local])


def test_step_work_counts_ppo_epochs_and_minibatches_and_sequence_steps():
    updates, samples, text = trainer.step_work(MAPPOConfig(batch_size=16, num_epochs=4,
                                                           num_minibatches=2, sequence_length=21))
    assert (updates, samples) == (8, 16 * 20)
    assert "4 epochs x 2 minibatches of 8 sequences of 20 steps" in text
    assert trainer.step_work(MADQNConfig(batch_size=128, n_step=3))[:2] == (1, 128)
    updates, samples, text = trainer.step_work(MADQNConfig(recurrent=True, sequence_batch_size=8,
                                                           sequence_length=11))
    assert (updates, samples) == (1, 8 * 10) and "8 sequences of 10 steps" in text


def test_system_rows_give_rates_per_update_and_sample_and_ratios_to_madqn():
    rows = trainer.system_rows({
        "madqn": (MADQNConfig(batch_size=256), 200.0, 400.0),
        "mappo": (MAPPOConfig(batch_size=16, num_epochs=4, num_minibatches=2), 50.0, 100.0)})
    assert rows["madqn"]["samples_per_s"] == 200.0 * 256
    assert rows["mappo"]["updates_per_s"] == 50.0 * 8
    assert rows["mappo"]["samples_per_s"] == 50.0 * 16 * 20
    assert rows["mappo"]["ratio_to_madqn"] == 0.25
    assert rows["mappo"]["ratio_to_bare_step"] == 0.5


def test_sequence_systems_keep_their_own_batch_size():
    kwargs = {"batch_size": 64, "prioritized_replay": True, "seed": 3}
    assert trainer.system_config_kwargs("mappo", kwargs) == {"seed": 3}
    assert trainer.system_config_kwargs("maddpg", kwargs) == {"batch_size": 64, "seed": 3}
    assert trainer.system_config_kwargs("vdn", kwargs) == kwargs


def test_unknown_systems_are_named_before_anything_starts():
    assert common.system_names(" vdn, mappo ,") == ["vdn", "mappo"]
    with pytest.raises(SystemExit, match="unknown system.*mapo.*registered systems:.*mappo"):
        common.system_names("madqn,mapo")


def test_program_results_keep_madqn_keys_and_prefix_other_systems():
    assert program.config_key("local_mp", 2) == "local_mp:2"
    assert program.config_key("local_mp", 2, "mappo") == "mappo/local_mp:2"


def test_program_variants_name_their_runs_and_add_their_flags():
    assert program.parse_variant("B16-reference=--num_envs_per_executor=16 --vectorised=false") == (
        "B16-reference/", ["--num_envs_per_executor=16", "--vectorised=false"])
    for bad in ("B16", "=--num_envs_per_executor=16", "a/b=--seed=1", "B16= "):
        with pytest.raises(SystemExit, match="expected NAME=FLAGS"):
            program.parse_variant(bad)


def test_the_cpu_account_gives_each_groups_cpu_per_executor_step():
    runs = [{"executor_sps": 1000.0, "group_cores": {"executor": 0.7, "trainer": 0.4}},
            {"executor_sps": 500.0, "group_cores": {"executor": 0.5, "trainer": 0.2,
                                                     "evaluator": 0.05}},
            {"error": "no trainer step", "stop": {}}]
    account = program.cpu_account(runs)
    # Medians over the good runs: executor 0.7 and 1.0 ms a step, trainer 0.4 and 0.4.
    assert account["ms_per_executor_step"]["executor"] == pytest.approx(0.85)
    assert account["ms_per_executor_step"]["trainer"] == pytest.approx(0.4)
    assert account["ms_per_executor_step"]["evaluator"] == pytest.approx(0.05)
    assert account["ms_per_executor_step"]["total"] == pytest.approx((1.1 + 1.5) / 2)
    assert account["cores"]["total"] == pytest.approx((1.1 + 0.75) / 2)
    assert list(account["cores"]) == ["executor", "trainer", "evaluator", "total"]


def test_node_processes_are_grouped_by_the_node_their_launcher_names(tmp_path):
    """A `local_mp` node process carries its node's name in its environment
    (`node_processes.NODE_NAME_ENV`), its output goes through a `sed`: the node's CPU is
    charged to its group, the root's to the launcher."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel

    from mava_systems.launching.node_processes import NODE_NAME_ENV  # pylint: disable=import-outside-toplevel

    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(60)"
    launcher = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time\n"
        "output = subprocess.Popen(['sed', '-u', 's!^![trainer/0] !'], stdin=subprocess.PIPE)\n"
        f"subprocess.Popen([sys.executable, '-c', {burn!r}], stdout=output.stdin, "
        f"env={{**os.environ, {NODE_NAME_ENV!r}: 'trainer/0'}})\n"
        "time.sleep(60)")])
    tree_of = common.ProcessTree(launcher.pid)
    try:
        deadline = time.monotonic() + 30
        groups = {}
        while time.monotonic() < deadline and groups.get("trainer", 0.0) < 0.25:
            time.sleep(0.2)
            groups = tree_of.cpu_by_group()
        assert groups["trainer"] >= 0.25
        assert set(groups) <= {"launcher", "trainer", "node_output", "other"}
        assert "launcher" in groups
        labels = [tree_of.node_label(process) for process in tree_of.processes()]
        assert labels.count("trainer/0") == 1
    finally:
        tree_of.kill_leftovers()
        launcher.wait(10)


def test_a_ray_runs_node_actors_are_grouped_by_the_pids_its_record_gives(tmp_path):
    """On Ray the node actors carry no node name in their environment: the launcher's
    `ray_nodes.json` maps their pids (every incarnation) to nodes."""
    import json  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel


    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(60)"
    launcher = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {burn!r}])\n"
        "time.sleep(60)")])
    tree_of = common.ProcessTree(launcher.pid)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(tree_of.processes()) < 2:
            time.sleep(0.1)
        child = [process.pid for process in tree_of.processes() if process.pid != launcher.pid]
        assert len(child) == 1
        with open(tmp_path / program.RAY_RECORD_FILE, "w") as record_file:
            json.dump({"nodes": {"executor/0": [{"pid": 1}, {"pid": child[0], "ip": "127.0.0.1"}],
                                 "trainer/0": [{"ip": "127.0.0.1"}]}}, record_file)
        node_pids = program.ray_node_pids(str(tmp_path))
        assert node_pids == {1: "executor/0", child[0]: "executor/0"}
        groups = {}
        while time.monotonic() < deadline and groups.get("executor", 0.0) < 0.25:
            time.sleep(0.2)
            groups = tree_of.cpu_by_group(node_pids)
        assert groups["executor"] >= 0.25
        assert set(groups) <= {"launcher", "executor"}
        assert program.ray_node_pids(str(tmp_path / "missing")) == {}
    finally:
        tree_of.kill_leftovers()
        launcher.wait(10)


def test_recurrent_program_runs_launch_their_systems_example_with_the_recurrent_switch():
    assert program.example_system("recurrent_mappo") == ("mappo", ["--recurrent=true"])
    assert program.example_system("mappo") == ("mappo", [])
    assert program.config_key("local_mp", 1, "recurrent_mappo") == "recurrent_mappo/local_mp:1"


@pytest.mark.parametrize("exit_code, clean", [(130, True), (0, True), (1, False)])
def test_a_stop_is_clean_when_the_launcher_exits_as_a_stopped_run_does(exit_code, clean):
    """SIGINT to a launcher: exiting 130 (stopped before its limit) or 0 is a clean stop."""
    assert launch.STOPPED_EXIT_CODE in common.CLEAN_STOP_CODES
    process = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGINT, lambda *_: sys.exit({exit_code}))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    stop = common.stop_example(process, common.ProcessTree(process.pid), timeout_s=30)
    assert stop["returncode"] == exit_code and stop["clean"] is clean


def test_the_trainer_log_reads_executor_zeros_queue_waits_with_each_trainer_row(tmp_path):
    trainer_csv, executor_csv = tmp_path / "trainer.csv", tmp_path / "executor.csv"
    log = program.TrainerLog(str(trainer_csv), str(executor_csv))
    header = "trainer_steps,executor_steps,batch_wait_s,policy_lag\n"
    trainer_csv.write_text(header + "1,100,0.5,2.0\n")
    executor_csv.write_text("executor_steps,queue_wait_s\n100,0.25\n")
    assert log.poll(10.0)
    trainer_csv.write_text(header + "1,100,0.5,2.0\n5,900,1.5,3.0\n")
    executor_csv.write_text("executor_steps,queue_wait_s\n100,0.25\n900,1.75\n")
    assert not log.poll(12.0)
    assert log.queue_waits == [(10.0, 0.25), (12.0, 1.75)]
    assert log.policy_lags == [2.0, 3.0]
