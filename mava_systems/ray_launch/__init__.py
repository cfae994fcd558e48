"""Runs any mava_systems program on a Ray cluster (`--lp_launch_type=ray`); see docs/cluster.md.

Importing this package defines the `--ray_*` flags; Ray itself is imported
only when a program is launched.
"""

from typing import Any

from mava_systems.ray_launch.config import RayLaunchConfig, parse_group_resources
from mava_systems.ray_launch.flags import LAUNCH_TYPE, config_from_flags

RECORD_FILE = "ray_nodes.json"


def launch(program: Any, config: RayLaunchConfig = None, record_dir: str = None,
           cpu_placement_mode: str = "none") -> None:
    """Runs `program` on Ray until it stops (see `mava_systems.ray_launch.launcher.launch`)."""
    from mava_systems.ray_launch import launcher  # pylint: disable=g-import-not-at-top
    launcher.launch(program, config, record_dir, cpu_placement_mode)
