"""Trains MADDPG on Multi-Agent MuJoCo (default: HalfCheetah-2x3, two agents of three joints each).

    python examples/mamujoco/run_maddpg.py --lp_launch_type=local_mt --max_executor_steps=1000000
    python examples/mamujoco/run_maddpg.py --env=mamujoco/Ant-4x2 --num_executors=2
    python examples/mamujoco/run_maddpg.py --env_kwargs='{"agent_obsk": 0}'

Settings (MaMuJoCo's, in mava_systems/family_settings.py): each agent has its own policy and critic
(no shared weights, no agent IDs); every other MADDPGConfig default is kept, and each field is a
flag too (e.g. --critic=state to give the critics the task's full observation). `--env` takes any
`mamujoco/<Scenario>-<agent_conf>` (see docs/environments.md), `--env_kwargs` the environment's
arguments as JSON (`agent_obsk`: how many joint hops each agent observes, 1 by default). Returns
are summed over the agents: the MuJoCo task's return.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import maddpg  # noqa: E402
from mava_systems.launching import launch  # noqa: E402
import mamujoco_settings  # noqa: E402  (this folder's)

main = launch.example_main("mava_systems.maddpg.system:MADDPG", maddpg.MADDPGConfig,
                           default_env=mamujoco_settings.DEFAULT_ENV)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
