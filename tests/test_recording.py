"""Recordings of greedy episodes: GIF/MP4 frames, text transcripts, evaluator videos in TensorBoard.

The runs are just-initialised MADQN checkpoints (no training): what is tested is
what gets recorded, which does not depend on how well the team plays.
"""

import json
import os
import subprocess
import sys

from acme.utils import counting, loggers
import imageio.v3 as iio
import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator

from mava_systems import evaluate, madqn, recording
from mava_systems.runs.checkpointing import Checkpointing
from mava_systems.runs.run_directory import release
import wrappers
from wrappers import grid_rendering

SPREAD_STEPS = 25  # simple_spread_v3's max_cycles.
LINE_WORLD_STEPS = 10


def make_run(run_dir: str, environment: str, **config) -> madqn.MADQN:
    """A MADQN run in `run_dir` whose only trainer checkpoint holds untrained networks."""
    system = madqn.MADQN(wrappers.make_environment_factory(environment),
                         config=madqn.MADQNConfig(agent_ids=True, **config), run_dir=run_dir)
    system.prepare_run_dir()
    release(system.run_dir)
    trainer = system.builder.make_trainer(
        system.builder.make_networks(), dataset=iter(()), counter=counting.Counter(),
        logger=loggers.NoOpLogger(), checkpoint=False)
    state = {name: value for name, value in trainer.state.items()
             if evaluate._is_network_state(value)}  # pylint: disable=protected-access
    Checkpointing(state, run_dir, "trainer").save(force=True)
    return system


@pytest.fixture(scope="module")
def spread_run(tmp_path_factory) -> str:
    run_dir = str(tmp_path_factory.mktemp("spread") / "run")
    make_run(run_dir, "mpe/simple_spread_v3")
    return run_dir


@pytest.fixture(scope="module")
def line_world_run(tmp_path_factory) -> str:
    run_dir = str(tmp_path_factory.mktemp("line_world") / "run")
    make_run(run_dir, "debug/line_world_v0")
    return run_dir


def test_a_gif_has_a_labelled_frame_per_step_and_the_first_observation(spread_run, tmp_path):
    path = str(tmp_path / "episode.gif")
    result = evaluate.record(spread_run, path, episodes=2, seed=3)
    frames = iio.imread(path, index=None)
    # Per episode: the reset's frame and one per step.
    assert result["episode_lengths"] == [SPREAD_STEPS, SPREAD_STEPS]
    assert result["frames"] == len(frames) == 2 * (SPREAD_STEPS + 1)
    assert iio.immeta(path)["loop"] == 0
    assert frames.shape[1:] == (700, 700, 3)
    # The label's black box covers the top-left corner of MPE's white background.
    raw = wrappers.make_environment_factory("mpe/simple_spread_v3", render_mode="rgb_array")(
        evaluation=True, seed=3)
    raw.reset()
    assert (raw.render()[8:20, 8:100] == 255).all()
    assert (frames[0][8:20, 8:100] < 60).mean() > 0.5
    # The recorded episodes are the ones `evaluate` scores with the same seed.
    assert result["returns"] == evaluate.evaluate(spread_run, episodes=2, seed=3)["returns"]


def test_frames_can_be_shrunk_skipped_and_written_as_mp4(spread_run, tmp_path):
    path = str(tmp_path / "episode.mp4")
    result = evaluate.record(spread_run, path, max_size=175, frame_skip=10)
    assert result["frames"] == 4  # Steps 0, 10, 20 and the last, 25.
    frames = iio.imread(path, plugin="FFMPEG", index=None)
    assert frames.shape == (4, 176, 176, 3)  # 175 padded to even sides for H.264.


def test_a_text_environment_records_a_transcript(line_world_run, tmp_path):
    path = str(tmp_path / "episode.txt")
    result = evaluate.record(line_world_run, path, episodes=2, seed=1)
    text = open(path).read()
    blocks = text.strip().split("\n\n")
    assert result["frames"] == len(blocks) == 2 * (LINE_WORLD_STEPS + 1)
    labels = [block.splitlines()[0] for block in blocks]
    assert labels[0] == "episode 1  step 0  return 0.00"
    assert labels[-1] == f"episode 2  step 10  return {result['returns'][1]:.2f}"
    for block in blocks:  # The environment's own drawing: a row per agent, goal and position.
        rows = block.splitlines()[1:]
        assert [row.split(":")[0] for row in rows] == ["agent_0", "agent_1"]
        assert all(len(row.split(": ")[1]) == 5 for row in rows)
    assert result["returns"] == evaluate.evaluate(line_world_run, episodes=2, seed=1)["returns"]


def test_the_command_records_and_prints_the_returns(line_world_run, tmp_path):
    path = str(tmp_path / "episode.txt")
    output = subprocess.run(
        [sys.executable, "-m", "mava_systems.evaluate", f"--run_dir={line_world_run}",
         f"--record={path}", "--checkpoint=ckpt-1"],
        check=True, capture_output=True, text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    # One episode unless --episodes says otherwise.
    assert result["checkpoint"].endswith("ckpt-1") and result["frames"] == LINE_WORLD_STEPS + 1
    assert os.path.getsize(path) > 0


def test_bad_recordings_get_clear_errors(line_world_run, tmp_path):
    two_step = str(tmp_path / "two_step")
    make_run(two_step, "debug/two_step_v0")
    with pytest.raises(ValueError, match="debug/two_step_v0 does not render images"):
        evaluate.record(two_step, str(tmp_path / "episode.gif"))
    with pytest.raises(ValueError, match=r"does not render images .*record to \.txt instead"):
        evaluate.record(line_world_run, str(tmp_path / "episode.gif"))
    with pytest.raises(ValueError, match="must end in .gif, .mp4, .txt"):
        evaluate.record(line_world_run, str(tmp_path / "episode.avi"))
    with pytest.raises(ValueError, match="frame_skip must be at least 1, got 0"):
        evaluate.record(line_world_run, str(tmp_path / "episode.txt"), frame_skip=0)
    with pytest.raises(ValueError, match="max_size must be at least 2 pixels, got 0"):
        evaluate.record(line_world_run, str(tmp_path / "episode.txt"), max_size=0)
    with pytest.raises(ValueError, match="no checkpoint .*ckpt-9; .* has ckpt-1"):
        evaluate.record(line_world_run, str(tmp_path / "episode.txt"), checkpoint="ckpt-9")
    assert not any(name.startswith("episode") for name in os.listdir(tmp_path))
    with pytest.raises(ValueError, match="does not render images"):
        madqn.MADQN(wrappers.make_environment_factory("debug/two_step_v0"),
                    config=madqn.MADQNConfig(evaluation_video_every_rounds=1),
                    run_dir=str(tmp_path / "refused")).prepare_run_dir()
    assert not os.path.exists(tmp_path / "refused")


def test_the_evaluator_records_every_k_rounds_into_videos_and_tensorboard(tmp_path):
    run_dir = str(tmp_path / "run")
    system = make_run(run_dir, "mpe/simple_spread_v3", evaluation_episodes=1,
                      evaluation_video_every_rounds=2)
    trainer, _ = evaluate.restore_trainer(system)
    evaluator = system.evaluator(trainer, counting.Counter())
    videos = os.path.join(run_dir, "videos")
    evaluator.evaluate()
    assert not os.path.exists(videos)  # Round 1 of 2.
    evaluator.evaluate()
    assert os.listdir(videos) == ["steps_0.gif"]
    frames = iio.imread(os.path.join(videos, "steps_0.gif"), index=None)
    assert frames.shape == (SPREAD_STEPS + 1, 320, 320, 3)
    # TensorBoard's images plugin sees the GIF as the evaluator's `episode` image.
    accumulator = plugin_event_accumulator.EventAccumulator(
        os.path.join(run_dir, "tensorboard", "evaluator_videos"))
    accumulator.Reload()
    assert "evaluator/episode" in accumulator.PluginTagToContent("images")
    (event,) = accumulator.Tensors("evaluator/episode")
    width, height, gif = event.tensor_proto.string_val
    assert (int(width), int(height)) == (320, 320)
    assert gif == open(os.path.join(videos, "steps_0.gif"), "rb").read()


@pytest.mark.parametrize("name", ["mpe/simple_spread_v3", "sisl/pursuit_v5",
                                  "butterfly/cooperative_pong_v6", "classic/tictactoe_v3",
                                  "gymnasium/CartPole-v1", "lbf/Foraging-8x8-2p-2f-coop-v3",
                                  "rware/rware-tiny-2ag-v2"])
def test_every_family_that_draws_images_is_re_made_to_render_them(name):
    factory = wrappers.make_environment_factory(name)
    if name.startswith("mpe"):  # As MADQN makes it.
        factory = wrappers.WithAgentIDs(factory)
    environment = recording.rendering_environment(factory, recording.RGB, seed=0)
    assert environment.render_mode == recording.RGB
    timestep = environment.reset()
    first = environment.render()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    recorder = recording.EpisodeRecorder()
    recorder.observe_first(environment, timestep)
    recorder.observe(environment, environment.step(
        {agent: 0 for agent in environment.agents}), None)
    assert [(frame.episode, frame.step) for frame in recorder.frames] == [(1, 0), (1, 1)]
    image = recording.labelled_image(recorder.frames[1], max_size=100)
    assert max(image.shape[:2]) == 100
    environment.close()


def agent_cells(environment):
    """(row, column) of each agent of an LBF or RWARE environment, in agent order."""
    unwrapped = environment.environment.env.unwrapped
    if hasattr(unwrapped, "players"):
        return [tuple(player.position) for player in unwrapped.players]
    return [(agent.y, agent.x) for agent in unwrapped.agents]


@pytest.mark.parametrize("name, cell_pixels", [("lbf/Foraging-2s-8x8-2p-2f-coop-v3", 51),
                                               ("rware/rware-tiny-4ag-v2", 31)])
def test_lbf_and_rware_draw_headless_with_each_agents_number_in_its_cell(name, cell_pixels):
    environment = recording.rendering_environment(wrappers.make_environment_factory(name),
                                                  recording.RGB, seed=1)
    environment.reset()
    image = environment.render()
    labels = np.all(image == grid_rendering.LABEL_COLOUR, axis=-1)
    cells = agent_cells(environment)
    assert len(cells) == len(environment.possible_agents)
    for row, column in cells:
        corner = labels[row * cell_pixels:row * cell_pixels + cell_pixels // 2,
                        column * cell_pixels:column * cell_pixels + cell_pixels // 2]
        assert corner.sum() > 10, (row, column)
    # Nowhere else: every labelled pixel lies in an agent's cell.
    rows, columns = np.nonzero(labels)
    assert set(zip(rows // cell_pixels, columns // cell_pixels)) <= set(cells)
    environment.close()


def test_a_recorded_lbf_episode_has_a_frame_per_step(tmp_path):
    run_dir = str(tmp_path / "lbf")
    make_run(run_dir, "lbf/Foraging-8x8-2p-2f-coop-v3")
    path = str(tmp_path / "episode.gif")
    result = evaluate.record(run_dir, path, episodes=1, seed=0)
    frames = iio.imread(path, index=None)
    assert len(frames) == result["episode_lengths"][0] + 1 == result["frames"]
    assert frames.shape[1:] == (409, 409, 3)


def test_a_machine_where_pyglet_cannot_draw_is_named_before_anything_plays(monkeypatch):
    import pyglet  # pylint: disable=import-outside-toplevel

    def no_context(*args, **kwargs):
        raise RuntimeError("no EGL device")

    grid_rendering.use_headless_pyglet()
    from pyglet import gl  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    monkeypatch.setattr(pyglet.window, "Window", no_context)
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(ValueError, match=r"cannot draw the environment with pyglet on an "
                                         r"off-screen EGL context .*libegl1.*"
                                         r"install_render_libraries.sh.*no EGL device"):
        recording.check_renders(wrappers.make_environment_factory("rware/rware-tiny-2ag-v2"),
                                recording.RGB)
