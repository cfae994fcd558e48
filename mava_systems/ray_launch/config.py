"""What a Ray launch needs besides the program: where Ray is, where nodes go, how often they
may restart."""

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence

from mava_systems.config import parse_json_object

# Ray option names for the resources a user names as CPU, GPU and memory; any other name is a
# custom resource of the cluster's nodes (e.g. `ray start --resources='{"trainer_host": 1}'`).
BUILT_IN_RESOURCES = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}


@dataclasses.dataclass(frozen=True)
class RayLaunchConfig:
    """How `mava_systems.ray_launch.launch` runs a program on Ray.

    Attributes:
      address: a running cluster to join (`HOST:PORT` or `auto`); None starts a
        local Ray on 127.0.0.1 for the run and shuts it down afterwards.
      group_resources: {program group: {resource: amount}} every node of the
        group asks Ray for (CPU, GPU, memory in bytes, or a custom resource);
        groups not named ask for nothing and go where Ray puts them.
      max_restarts: how often one node may be restarted after it died or
        failed before the run stops with an error.
      termination_notice_s: seconds nodes get to finish after the stop before
        they are killed.
      runtime_env: Ray's `runtime_env` for every node (e.g. a `working_dir` or
        `py_modules` that carry the code to a cluster's machines); TensorFlow's
        thread settings are added to its `env_vars`.
      num_cpus: CPUs of a local Ray (None: the machine's); ignored with `address`.
    """

    address: Optional[str] = None
    group_resources: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)
    max_restarts: int = 3
    termination_notice_s: float = 60.0
    runtime_env: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    num_cpus: Optional[int] = None

    def __post_init__(self):
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) \
                or self.max_restarts < 0:
            raise ValueError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}")
        if self.termination_notice_s <= 0:
            raise ValueError(
                f"termination_notice_s must be positive, got {self.termination_notice_s}")
        if not isinstance(self.runtime_env, Mapping):
            raise ValueError(f"runtime_env must be a mapping, got {self.runtime_env!r}")
        for group, resources in self.group_resources.items():
            for name, amount in resources.items():
                if amount < 0:
                    raise ValueError(f"group {group!r} asks for a negative amount of {name}")

    def actor_options(self, group: str) -> Dict[str, Any]:
        """The Ray options (`num_cpus`, `num_gpus`, `memory`, `resources`) of `group`'s nodes."""
        options: Dict[str, Any] = {"num_cpus": 0}  # Nodes are threads: by default, no CPU each.
        custom = {}
        for name, amount in self.group_resources.get(group, {}).items():
            if name in BUILT_IN_RESOURCES:
                options[BUILT_IN_RESOURCES[name]] = amount
            else:
                custom[name] = amount
        if custom:
            options["resources"] = custom
        return options

    def check_groups(self, groups: Sequence[str]) -> None:
        """Raises ValueError if `group_resources` names a group the program does not have."""
        unknown = sorted(set(self.group_resources) - set(groups))
        if unknown:
            raise ValueError(f"--ray_group_resources names groups the program does not have: "
                             f"{unknown} (its groups: {sorted(groups)})")


def parse_group_resources(specs: Sequence[str]) -> Dict[str, Dict[str, float]]:
    """Parses `GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT...]` entries, e.g. `trainer:GPU=1`.

    Raises:
      ValueError: naming the entry that does not follow the format.
    """
    parsed: Dict[str, Dict[str, float]] = {}
    for spec in specs:
        group, separator, resources = spec.partition(":")
        if not separator or not group.strip() or not resources.strip():
            raise ValueError(f"--ray_group_resources entry {spec!r} is not "
                             "GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT...]")
        amounts = parsed.setdefault(group.strip(), {})
        for item in resources.split(","):
            name, separator, amount = item.partition("=")
            try:
                amounts[name.strip()] = float(amount)
            except ValueError:
                separator = ""
            if not separator or not name.strip():
                raise ValueError(f"--ray_group_resources entry {spec!r}: {item!r} is not "
                                 "RESOURCE=AMOUNT (e.g. GPU=1)")
    return parsed


def parse_runtime_env(text: str) -> Dict[str, Any]:
    """A runtime_env given as JSON text (empty: none)."""
    return parse_json_object(text, "--ray_runtime_env")
