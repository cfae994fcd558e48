"""Trains HAPPO on Multi-Agent MuJoCo (default: HalfCheetah-2x3, two agents of three joints each).

    python examples/mamujoco/run_happo.py --lp_launch_type=local_mt --max_executor_steps=5000000
    python examples/mamujoco/run_happo.py --env=mamujoco/Ant-4x2 --num_executors=2
    python examples/mamujoco/run_happo.py --env_kwargs='{"agent_obsk": 2}'

Settings (mava_systems/family_settings.py): each agent has its own policy (HAPPO never shares them) and no
agent IDs; the agents' policies are updated one after another in a random order each trainer
step, with one centralised critic of the global state (see `happo.HAPPO`). Every other
HAPPOConfig default is kept (MAPPO's: Gaussian policies for the continuous actions), and each
field is a flag too. `--env` takes any `mamujoco/<Scenario>-<agent_conf>` (see
docs/environments.md). Returns are summed over the agents: the MuJoCo task's return.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import happo  # noqa: E402
from mava_systems.launching import launch  # noqa: E402
import mamujoco_settings  # noqa: E402  (this folder's)

main = launch.example_main("mava_systems.happo.system:HAPPO", happo.HAPPOConfig,
                           default_env=mamujoco_settings.DEFAULT_ENV)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
