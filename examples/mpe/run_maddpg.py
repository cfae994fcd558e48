"""Trains MADDPG on a PettingZoo MPE environment with continuous actions (default:
simple_spread_v3, 3 cooperative agents; MPE environments are made with continuous_actions=True).

    python examples/mpe/run_maddpg.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_maddpg.py --lp_launch_type=local_mp --num_executors=2

Every MADDPGConfig field is a flag too (e.g. --critic=state --batch_size=128).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import maddpg
from mava_systems.launching import launch

# The defaults: the config's, with MPE's settings (mava_systems/family_settings.py).
main = launch.example_main("mava_systems.maddpg.system:MADDPG",
                           maddpg.MADDPGConfig, default_env="mpe/simple_spread_v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
