"""Images of Level-Based Foraging and Robotic Warehouse, headless, with each agent's number.

Both packages draw with their own pyglet (1.5) viewers, which open a window. Without a
display (no `DISPLAY`), pyglet is switched to its headless mode before it is first
imported: it draws into an off-screen EGL context (libEGL and Mesa's EGL driver, which
scripts/install_render_libraries.sh installs). On each image, agent `agent_<i>` is marked
with its number `i` in its cell's top-left corner (the packages draw LBF's levels and no
identities).
"""

import os
from typing import Any, Iterable, Optional, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFont

LABEL_COLOUR = (0, 90, 200)


def use_headless_pyglet() -> None:
    """Makes pyglet draw off-screen when there is no display (before its first import)."""
    if not os.environ.get("DISPLAY"):
        import pyglet  # pylint: disable=import-outside-toplevel
        pyglet.options["headless"] = True


def rendering_problem() -> Optional[str]:
    """Why pyglet cannot draw here (naming what is missing), or None if it can."""
    use_headless_pyglet()
    try:
        # pylint: disable=import-outside-toplevel
        import pyglet
        from pyglet import gl  # noqa: F401  (Opens pyglet's shadow window: a GL context.)
        pyglet.window.Window(width=1, height=1, visible=False).close()
    except Exception as error:  # pylint: disable=broad-except  (any failure means: no images)
        where = ("the display " + os.environ["DISPLAY"] if os.environ.get("DISPLAY") else
                 "an off-screen EGL context (there is no DISPLAY): it needs libEGL and Mesa's "
                 "EGL driver, from the Debian packages libegl1, libegl-mesa0, libgl1-mesa-dri "
                 "(scripts/install_render_libraries.sh installs them as root)")
        return (f"cannot draw the environment with pyglet on {where} "
                f"({type(error).__name__}: {error})")
    return None


def label_agents(image: np.ndarray, cells: Iterable[Tuple[int, int]], cell_pixels: int
                 ) -> np.ndarray:
    """`image` with agent i's number drawn in the top-left corner of its cell, `cells[i]`
    = (row, column) on a grid of `cell_pixels`-pixel cells (lines included) from the top left."""
    picture = Image.fromarray(np.ascontiguousarray(image))
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=max(9, cell_pixels // 3))
    for index, (row, column) in enumerate(cells):
        corner = (column * cell_pixels + 2, row * cell_pixels + 2)
        box = draw.textbbox(corner, str(index), font=font)
        draw.rectangle((box[0] - 1, box[1] - 1, box[2] + 1, box[3] + 1), fill=LABEL_COLOUR)
        draw.text(corner, str(index), font=font, fill=(255, 255, 255))
    return np.asarray(picture)


def foraging_image(env: Any) -> np.ndarray:
    """Level-Based Foraging (lbforaging 2.0.0's `ForagingEnv`) drawn, each player numbered."""
    use_headless_pyglet()
    image = env.render(mode="rgb_array")
    # Its viewer's cells: `grid_size` pixels plus a line; players at (row, column).
    return label_agents(image, [player.position for player in env.players],
                        env.viewer.grid_size + 1)


def warehouse_image(env: Any) -> np.ndarray:
    """Robotic Warehouse (rware 2.0.0's `Warehouse`) drawn, each robot numbered."""
    use_headless_pyglet()
    image = env.render(mode="rgb_array")
    # Its viewer's cells: `grid_size` pixels plus a line; robots at (x, y) = (column, row).
    return label_agents(image, [(agent.y, agent.x) for agent in env.agents],
                        env.renderer.grid_size + 1)
