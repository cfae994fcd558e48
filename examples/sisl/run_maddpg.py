"""Trains MADDPG on a PettingZoo SISL environment (default: multiwalker_v9, 3 walkers).

    python examples/sisl/run_maddpg.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/sisl/run_maddpg.py --lp_launch_type=local_mp --num_executors=2 --critic=state

Every MADDPGConfig field is a flag too (e.g. --critic=decentralised --target_update_rate=0.005).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import maddpg
from mava_systems.launching import launch

main = launch.example_main("mava_systems.maddpg.system:MADDPG",
                           maddpg.MADDPGConfig, default_env="sisl/multiwalker_v9")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
