"""The command-line flags of the Ray launcher, and `ray` as a value of `--lp_launch_type`."""

from absl import flags
from launchpad import flags as lp_flags

from mava_systems.ray_launch.config import (RayLaunchConfig, parse_group_resources,
                                            parse_runtime_env)

LAUNCH_TYPE = "ray"
FLAGS = flags.FLAGS

# Launchpad defines --lp_launch_type as an enum of its own launch types, overridable.
if LAUNCH_TYPE not in FLAGS["lp_launch_type"].parser.enum_values:
    flags.DEFINE_enum("lp_launch_type", lp_flags.LAUNCH_TYPE.default,
                      list(FLAGS["lp_launch_type"].parser.enum_values) + [LAUNCH_TYPE],
                      FLAGS["lp_launch_type"].help + f" ({LAUNCH_TYPE}: on a Ray cluster, "
                      "see --ray_address)", allow_override=True)

flags.DEFINE_string("ray_address", None,
                    "With --lp_launch_type=ray: the Ray cluster to join (HOST:PORT, or 'auto' "
                    "for the one started on this machine with `ray start`); default: a local "
                    "Ray on 127.0.0.1, started for the run.")
flags.DEFINE_multi_string("ray_group_resources", [],
                          "With --lp_launch_type=ray: Ray resources every node of a group asks "
                          "for, GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT...] (repeatable), e.g. "
                          "trainer:GPU=1 or executor:CPU=1,executor_host=1.")
flags.DEFINE_integer("ray_max_restarts", RayLaunchConfig.max_restarts,
                     "With --lp_launch_type=ray: restarts allowed per node before the run stops "
                     "with an error.")
flags.DEFINE_string("ray_runtime_env", "",
                    "With --lp_launch_type=ray: Ray runtime_env of every node, as JSON, e.g. "
                    "'{\"working_dir\": \".\", \"excludes\": [\"runs\", \".venv\"]}'.")


def config_from_flags(termination_notice_s: float) -> RayLaunchConfig:
    """The launch config the flags describe (flag defaults if they were not parsed).

    `termination_notice_s` follows `--lp_termination_notice_secs`: 0 ends nodes at
    once, a negative value waits for them indefinitely.

    Raises:
      ValueError: on a malformed flag value.
    """
    def value(name):
        return FLAGS[name].value if FLAGS.is_parsed() else FLAGS[name].default

    return RayLaunchConfig(
        address=value("ray_address"),
        group_resources=parse_group_resources(value("ray_group_resources") or []),
        max_restarts=value("ray_max_restarts"),
        termination_notice_s=(termination_notice_s if termination_notice_s > 0 else
                              1e-3 if termination_notice_s == 0 else float("inf")),
        runtime_env=parse_runtime_env(value("ray_runtime_env")))


def _validated(parse):
    """A flag checker that turns `parse`'s ValueError into absl's flag error (reported at start)."""
    def check(value) -> bool:
        try:
            parse(value)
        except ValueError as error:
            raise flags.ValidationError(str(error)) from None
        return True

    return check


flags.register_validator("ray_group_resources", _validated(lambda value: parse_group_resources(
    value or [])))
flags.register_validator("ray_runtime_env", _validated(parse_runtime_env))
flags.register_validator("ray_max_restarts", lambda value: value >= 0,
                         "--ray_max_restarts must be >= 0")
