"""Trains MAPPO on Multi-Agent MuJoCo (default: HalfCheetah-2x3, two agents of three joints each).

    python examples/mamujoco/run_mappo.py --lp_launch_type=local_mt --max_executor_steps=5000000
    python examples/mamujoco/run_mappo.py --env=mamujoco/Walker2d-2x3 --num_executors=2
    python examples/mamujoco/run_mappo.py --env_kwargs='{"agent_obsk": 2}'

Settings (MaMuJoCo's, in mava_systems/family_settings.py): each agent has its own policy and value
networks (no shared weights, no agent IDs); every other MAPPOConfig default is kept (Gaussian
policies for the continuous actions), and each field is a flag too (e.g. --critic=decentralised for
IPPO). `--env` takes any `mamujoco/<Scenario>-<agent_conf>` (see docs/environments.md),
`--env_kwargs` the environment's arguments as JSON (`agent_obsk`: how many joint hops each agent
observes). Returns are summed over the agents: the MuJoCo task's return.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import mappo  # noqa: E402
from mava_systems.launching import launch  # noqa: E402
import mamujoco_settings  # noqa: E402  (this folder's)

main = launch.example_main("mava_systems.mappo.system:MAPPO", mappo.MAPPOConfig,
                           default_env=mamujoco_settings.DEFAULT_ENV)

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
