"""Trains VDN on a PettingZoo MPE environment (default: simple_spread_v3, 3 cooperative agents).

    python examples/mpe/run_vdn.py --lp_launch_type=local_mt --max_executor_steps=20000
    python examples/mpe/run_vdn.py --lp_launch_type=local_mp --num_executors=2

Every VDNConfig field is a flag too (e.g. --team_reward=sum); `--env` takes
any registered cooperative environment (e.g. debug/two_step_v0).
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import vdn  # noqa: E402
from mava_systems.launching import launch  # noqa: E402

# The defaults: the config's, with MPE's settings (mava_systems/family_settings.py).
main = launch.example_main("mava_systems.vdn.system:VDN",
                           vdn.VDNConfig, default_env="mpe/simple_spread_v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
