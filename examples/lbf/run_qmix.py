"""Trains QMIX on Level-Based Foraging (default: Foraging-8x8-2p-2f-coop-v3,
2 agents that must load the food together).

    python examples/lbf/run_qmix.py --lp_launch_type=local_mt --max_executor_steps=50000
    python examples/lbf/run_qmix.py --lp_launch_type=local_mp --num_executors=2
    python examples/lbf/run_qmix.py --env=lbf/Foraging-2s-8x8-2p-2f-coop-v3

Every QMIXConfig field is a flag too (e.g. --mixing_embed_dim=64); `--env` takes any id
the package registers (see docs/environments.md). Returns are the sum over agents.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import qmix  # noqa: E402
from mava_systems.launching import launch  # noqa: E402

# The defaults: the config's, with LBF's settings (mava_systems/family_settings.py).
main = launch.example_main("mava_systems.qmix.system:QMIX", qmix.QMIXConfig,
                           default_env="lbf/Foraging-8x8-2p-2f-coop-v3")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
