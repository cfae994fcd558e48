"""Trains MATD3 on Multi-Agent MuJoCo (default: HalfCheetah-2x3, two agents of three joints each).

    python examples/mamujoco/run_matd3.py --lp_launch_type=local_mt --max_executor_steps=1000000
    python examples/mamujoco/run_matd3.py --env=mamujoco/Ant-4x2 --num_executors=2

Settings (MaMuJoCo's, in mava_systems/family_settings.py): each agent has its own policy and twin
critics (no shared weights, no agent IDs); every other MATD3Config default is kept (TD3's:
policy_delay 2, target_noise 0.2 clipped at 0.5), and each field is a flag too. `--env` takes any
`mamujoco/<Scenario>-<agent_conf>` (see docs/environments.md), `--env_kwargs` the environment's
arguments as JSON. Returns are summed over the agents: the MuJoCo task's return.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import matd3  # noqa: E402
from mava_systems.launching import launch  # noqa: E402
import mamujoco_settings  # noqa: E402  (this folder's)

main = launch.example_main("mava_systems.matd3.system:MATD3", matd3.MATD3Config,
                           default_env=mamujoco_settings.DEFAULT_ENV)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
