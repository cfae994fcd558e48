"""Recordings of greedy episodes: animated GIFs or MP4s of rendered frames, or text transcripts.

    python -m mava_systems.evaluate --run_dir=runs/spread --episodes=1 --record=episode.gif

(see `evaluate.record`). A recording holds the environment as drawn after its
reset (step 0) and after every step, each frame labelled with the episode, the step and the team's return
so far (the sum over agents), so an episode of T steps gives T + 1 frames (fewer
with `frame_skip`, which keeps every k-th step and the last). Environments that
render RGB images (MPE, SISL, butterfly, Gymnasium) record to `.gif` or `.mp4`;
those that render text (`debug/line_world_v0`) to a `.txt` transcript.
"""

import dataclasses
import importlib.util
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from acme.utils import observers
import dm_env
import imageio.v3 as iio
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from wrappers.agent_ids import WithAgentIDs
from wrappers.registry import EnvironmentFactory

RGB, TEXT = "rgb_array", "ansi"
# File suffix -> the render mode it records.
FORMATS = {".gif": RGB, ".mp4": RGB, ".txt": TEXT}
DEFAULT_FPS = 10.0


@dataclasses.dataclass
class Frame:
    """The environment drawn after a reset (step 0) or a step of episode `episode` (from 1)."""

    episode: int
    step: int
    episode_return: float  # The team's return so far: the sum over agents.
    rendering: Union[np.ndarray, str]

    @property
    def label(self) -> str:
        """`episode 1  step 12  return -3.41`."""
        return f"episode {self.episode}  step {self.step}  return {self.episode_return:.2f}"


class EpisodeRecorder(observers.EnvLoopObserver):
    """Keeps the environment's rendering after every reset and step an `EnvironmentLoop` plays.

    With `frame_skip` k, it keeps step 0, every k-th step and each episode's last step.
    """

    def __init__(self, frame_skip: int = 1):
        if frame_skip < 1:
            raise ValueError(f"frame_skip must be at least 1, got {frame_skip}")
        self._frame_skip = frame_skip
        self.frames: List[Frame] = []
        self._episode = 0
        self._step = 0
        self._return = 0.0

    def observe_first(self, env: dm_env.Environment, timestep: dm_env.TimeStep) -> None:
        """Starts an episode with its step-0 frame."""
        self._episode += 1
        self._step, self._return = 0, 0.0
        self._keep(env)

    def observe(self, env: dm_env.Environment, timestep: dm_env.TimeStep, action: Any) -> None:
        """Adds the step's rewards to the return and keeps its frame (unless skipped)."""
        self._step += 1
        self._return += float(sum(np.sum(reward) for reward in timestep.reward.values()))
        if timestep.last() or self._step % self._frame_skip == 0:
            self._keep(env)

    def get_metrics(self) -> Dict[str, int]:
        """Nothing: the frames are in `frames`."""
        return {}

    def _keep(self, env: Any) -> None:
        rendering = env.render()
        if rendering is None:
            raise ValueError("the environment rendered nothing: it was made without a render mode")
        self.frames.append(Frame(self._episode, self._step, self._return, rendering))


def with_render_mode(factory: Any, render_mode: str) -> Any:
    """`factory` (a registry `EnvironmentFactory`, maybe in `WithAgentIDs`) making its environments
    with `render_mode`."""
    if isinstance(factory, WithAgentIDs):
        return WithAgentIDs(with_render_mode(factory.factory, render_mode))
    if isinstance(factory, EnvironmentFactory):
        return EnvironmentFactory(factory.name, **{**factory.env_kwargs, "render_mode": render_mode})
    raise ValueError(f"cannot give {factory!r} a render mode: only environments of the registry "
                     "(wrappers.make_environment_factory) can be recorded")


def rendering_environment(factory: Any, render_mode: str, seed: int) -> Any:
    """`factory`'s evaluation environment, re-made with `render_mode` if it was made without.

    Raises:
      ValueError: naming the environment and the modes it has, if it cannot render that way.
    """
    environment = factory(evaluation=True, seed=seed)
    if environment.render_mode == render_mode:
        return environment
    modes = [mode for mode in environment.render_modes if mode in (RGB, TEXT)]
    environment.close()
    if render_mode not in modes:
        name = getattr(factory, "name", None) or repr(factory)
        wanted = "images" if render_mode == RGB else "text"
        other = {RGB: ".gif or .mp4", TEXT: ".txt"}
        hint = f"; record to {other[modes[0]]} instead" if modes else ""
        raise ValueError(f"environment {name} does not render {wanted} (its render modes: "
                         f"{', '.join(environment.render_modes) or 'none'}){hint}")
    return with_render_mode(factory, render_mode)(evaluation=True, seed=seed)


def check_renders(factory: Any, render_mode: str) -> None:
    """Raises ValueError (see `rendering_environment`) unless `factory`'s environments can
    render in `render_mode`."""
    rendering_environment(factory, render_mode, seed=0).close()


def labelled_image(frame: Frame, max_size: Optional[int] = None) -> np.ndarray:
    """The frame's image (shrunk so its longer side is at most `max_size`) with its label drawn
    in its top-left corner."""
    image = Image.fromarray(np.asarray(frame.rendering, np.uint8)).convert("RGB")
    if max_size and max(image.size) > max_size:
        scale = max_size / max(image.size)
        image = image.resize((max(2, round(image.width * scale)), max(2, round(image.height * scale))),
                             Image.Resampling.LANCZOS)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(10, image.height // 30))
    margin = max(2, image.height // 100)
    box = draw.textbbox((2 * margin, 2 * margin), frame.label, font=font)
    draw.rectangle((box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin),
                   fill=(0, 0, 0))
    draw.text((2 * margin, 2 * margin), frame.label, font=font, fill=(255, 255, 255))
    return np.asarray(image)


def encode_gif(images: Sequence[np.ndarray], fps: float = DEFAULT_FPS) -> bytes:
    """An animated GIF of `images` (looping), as bytes."""
    return iio.imwrite("<bytes>", np.stack(images), extension=".gif",
                       duration=1000.0 / fps, loop=0)


def transcript(frames: Sequence[Frame]) -> str:
    """The frames' texts, each under its label."""
    return "".join(f"{frame.label}\n{str(frame.rendering).rstrip()}\n\n" for frame in frames)


def write_recording(path: str, frames: Sequence[Frame], fps: float = DEFAULT_FPS,
                    max_size: Optional[int] = None) -> None:
    """Writes the frames to `path`: an animated GIF, an MP4 (H.264) or a text transcript, by its suffix."""
    if not frames:
        raise ValueError(f"no frames to write to {path}")
    suffix = recording_suffix(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if suffix == ".txt":
        with open(path, "w") as file:
            file.write(transcript(frames))
        return
    images = [labelled_image(frame, max_size) for frame in frames]
    if suffix == ".gif":
        with open(path, "wb") as file:
            file.write(encode_gif(images, fps))
    else:  # H.264 needs even sides: macro_block_size=2 pads odd ones.
        iio.imwrite(path, np.stack(images), plugin="FFMPEG", fps=fps, macro_block_size=2)


def recording_suffix(path: str) -> str:
    """The suffix of a recording's path (one of `FORMATS`); raises ValueError otherwise."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot record to {path!r}: the file must end in "
                         f"{', '.join(FORMATS)} (.txt for environments that render text)")
    if suffix == ".mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise ValueError(f"cannot record to {path!r}: MP4 needs imageio-ffmpeg "
                         "(pip install imageio-ffmpeg==0.8.1); .gif needs nothing more")
    return suffix


class EvaluationVideos:
    """Records one greedy episode every `every_rounds` evaluation rounds (and the final round's)
    as `<run_dir>/videos/steps_<executor steps>.gif`, also shown in TensorBoard.

    Args:
      run_dir: the run directory.
      make_loop: `make_loop(environment, recorder)` an `EnvironmentLoop` of the greedy executor
        in `environment` seen by `recorder` (counting nothing of the program's).
      environment_factory: the system's factory; its environment is re-made to render images.
      seed: the recording environment's seed.
      every_rounds: rounds between recordings (at least 1).
      image_writer: `image_writer(gif_bytes, height, width, step)` shows the GIF in TensorBoard.
      max_size: the longer side of the frames, in pixels (None: as rendered).
      fps: frames per second.
    """

    def __init__(self, run_dir: str, make_loop: Callable[[Any, EpisodeRecorder], Any],
                 environment_factory: Any, seed: int, every_rounds: int,
                 image_writer: Callable[[bytes, int, int, int], None],
                 max_size: Optional[int] = 320, fps: float = DEFAULT_FPS):
        self._directory = os.path.join(run_dir, "videos")
        self._make_loop = make_loop
        self._factory = environment_factory
        self._seed = seed
        self._every_rounds = every_rounds
        self._image_writer = image_writer
        self._max_size = max_size
        self._fps = fps
        self._loop = None
        self._recorder: Optional[EpisodeRecorder] = None
        self._rounds = 0

    def after_round(self, step: int, final: bool = False) -> Optional[str]:
        """Counts a round; records an episode if this round is due (or `final`): its path, else None."""
        self._rounds += 1
        if not final and self._rounds % self._every_rounds:
            return None
        if self._loop is None:
            self._recorder = EpisodeRecorder()
            environment = rendering_environment(self._factory, RGB, self._seed)
            self._loop = self._make_loop(environment, self._recorder)
        self._recorder.frames.clear()
        self._loop.run_episode()
        images = [labelled_image(frame, self._max_size) for frame in self._recorder.frames]
        gif = encode_gif(images, self._fps)
        os.makedirs(self._directory, exist_ok=True)
        path = os.path.join(self._directory, f"steps_{step}.gif")
        with open(path, "wb") as file:
            file.write(gif)
        height, width = images[0].shape[:2]
        self._image_writer(gif, height, width, step)
        return path
