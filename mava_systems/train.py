"""Trains any registered system on any environment, with one set of defaults.

    python -m mava_systems.train --system=qmix --env=lbf/Foraging-8x8-2p-2f-coop-v3
    python -m mava_systems.train --system=mappo --env=mpe/simple_spread_v3 \\
        --lp_launch_type=local_mp --num_executors=2 --max_executor_steps=100000

The defaults are the system's config with the settings `mava_systems.family_settings`
documents for the environment's family and that system; the run's header says where every
value that is not the config's default came from (family setting, program default, command
line). Every config field is a flag (`--system=NAME --help` lists them). The examples
(examples/<family>/run_<system>.py) are shortcuts for this command on their family's
environments. An unknown system or environment is refused before TensorFlow is imported.
"""

import sys
from typing import Any, List, Optional, Sequence, Union

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

# pylint: disable=wrong-import-position
from absl import flags  # noqa: E402

from mava_systems import registry  # noqa: E402  (neither imports TensorFlow)
from mava_systems.launching import launch  # noqa: E402  (neither imports TensorFlow)
from mava_systems.experiment import systems  # noqa: E402
import wrappers  # noqa: E402

FLAGS = flags.FLAGS
USAGE = "usage: python -m mava_systems.train --system=NAME --env=FAMILY/NAME [--<flag>=VALUE ...]"


def flag_values(argv: Sequence[str], name: str) -> List[str]:
    """The values `--name=VALUE` or `--name VALUE` take in `argv` (before absl parses it)."""
    values = []
    for index, argument in enumerate(argv):
        if argument.startswith(f"--{name}="):
            values.append(argument.split("=", 1)[1])
        elif argument == f"--{name}" and index + 1 < len(argv):
            values.append(argv[index + 1])
    return values


def flag_value(argv: Sequence[str], name: str) -> Optional[str]:
    """The last value `--name` takes in `argv` (absl's rule for a flag given twice), or None."""
    values = flag_values(argv, name)
    return values[-1] if values else None


def checked_system(name: Optional[str]) -> Union[str, Any]:
    """The system registered as `name`: a built-in one's "module:Class" path, read from source
    (so that its flags are defined and checked before it, and TensorFlow, is imported), else the
    class an imported module registered; an unknown name is refused before any system is
    imported.

    Raises:
      ValueError: naming the registered systems, if `name` is empty or none of them.
    """
    known = registry.known_system_names()
    if not name:
        raise ValueError(f"--system is required; registered: {', '.join(known)}")
    if name not in known:
        raise ValueError(f"unknown system {name!r}; registered: {', '.join(known)}")
    return registry.builtin_system_paths().get(name) or registry.system_class(name)


def checked_environment(argv: Sequence[str]) -> str:
    """`--env` of `argv`, checked to name a registered environment (after importing the modules
    `--env_module` names, which may register it).

    Raises:
      ValueError: naming the problem, if `--env` is missing or names no environment.
    """
    env = flag_value(argv, "env")
    if not env:
        raise ValueError("--env is required, e.g. --env=mpe/simple_spread_v3 (see "
                         "docs/environments.md)")
    for module in flag_values(argv, "env_module"):
        wrappers.import_registration(module)
    wrappers.make_environment_factory(env)  # ValueError listing the family's names.
    return env


def system_main(system: Union[str, Any], env: str) -> launch.ExampleMain:
    """Defines the flags of `system` (a class or its "module:Class" path), with `env`'s family
    settings as defaults (see `launch.example_main`), and returns the main that trains it (an
    `app.run` main for a class; `run(argv)` for either)."""
    if not isinstance(system, str):
        return launch.example_main(
            system, system.config_class, default_env=env,
            executor_name=systems.acting_node_name(system),
            default_num_caches=systems.default_num_caches(system))
    config_class = registry.import_class(registry.declared_class(system, "config_class"))
    num_caches = registry.declared_parameter_default(system, "num_caches")
    if num_caches is registry.REQUIRED:
        num_caches = 0  # As `experiment.systems.default_num_caches` reads a signature.
    return launch.example_main(
        system, config_class, default_env=env,
        executor_name=registry.declared_attribute(system, "executors_group", "executor"),
        default_num_caches=None if num_caches is registry.NO_PARAMETER else num_caches)


def main(argv: Optional[List[str]] = None) -> None:
    """Checks `--system` and `--env` of `argv` (default: `sys.argv`), then trains."""
    argv = list(sys.argv if argv is None else argv)
    if flag_value(argv, "system") is None and any(
            argument in ("--help", "-h", "--helpfull") for argument in argv[1:]):
        print(f"{__doc__}\n{USAGE}\nsystems: {', '.join(registry.builtin_system_names())}")
        return
    try:
        env = checked_environment(argv)
        system = checked_system(flag_value(argv, "system"))
    except ValueError as error:
        console.fail(f"error: {error}")
    flags.DEFINE_string("system", None, "The registered system to train (see --helpfull).")
    launch.show_in_help(["system"])
    system_main(system, env).run(argv)  # Parses and checks the flags, then imports it.


if __name__ == "__main__":
    main()
