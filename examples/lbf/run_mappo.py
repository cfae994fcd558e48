"""Trains MAPPO on Level-Based Foraging (default: Foraging-8x8-2p-2f-coop-v3,
2 agents that must load the food together).

    python examples/lbf/run_mappo.py --lp_launch_type=local_mt --max_executor_steps=50000
    python examples/lbf/run_mappo.py --lp_launch_type=local_mp --num_executors=2
    python examples/lbf/run_mappo.py --env=lbf/Foraging-2s-8x8-2p-2f-coop-v3

Every MAPPOConfig field is a flag too (e.g. --critic=decentralised for IPPO); `--env` takes any
id the package registers (see docs/environments.md). Returns are the sum over agents.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import mappo
from mava_systems.launching import launch

main = launch.example_main("mava_systems.mappo.system:MAPPO", mappo.MAPPOConfig,
                           default_env="lbf/Foraging-8x8-2p-2f-coop-v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
