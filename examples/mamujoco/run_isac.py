"""Trains ISAC on Multi-Agent MuJoCo (default: HalfCheetah-2x3, two agents of three joints each).

    python examples/mamujoco/run_isac.py --lp_launch_type=local_mt --max_executor_steps=1000000
    python examples/mamujoco/run_isac.py --env=mamujoco/Ant-4x2

Settings (MaMuJoCo's, in mava_systems/family_settings.py): each agent has its own squashed Gaussian
policy and twin soft Q critics (no shared weights, no agent IDs), the critics decentralised: each
agent's own observation and action; every other ISACConfig default is kept (SAC's: Polyak averaging
at 0.005, Adam at 3e-4, temperatures tuned to minus each agent's action dimensions), and each field
is a flag too. `--env` takes any `mamujoco/<Scenario>-<agent_conf>` (see docs/environments.md).
Returns are summed over the agents: the MuJoCo task's return.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import masac  # noqa: E402
from mava_systems.launching import launch  # noqa: E402
import mamujoco_settings  # noqa: E402  (this folder's)

main = launch.example_main("mava_systems.masac.system:ISAC", masac.ISACConfig,
                           default_env=mamujoco_settings.DEFAULT_ENV)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
