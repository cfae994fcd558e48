"""Trains QMIX on Robotic Warehouse (default: rware-tiny-2ag-v2,
2 robots delivering requested shelves).

    python examples/rware/run_qmix.py --lp_launch_type=local_mt --max_executor_steps=50000
    python examples/rware/run_qmix.py --lp_launch_type=local_mp --num_executors=2
    python examples/rware/run_qmix.py --env=rware/rware-small-4ag-v2

Every QMIXConfig field is a flag too (e.g. --mixing_embed_dim=64); `--env` takes any id
the package registers (see docs/environments.md). Returns are the sum over agents.
"""

from mava_systems.terminal import console

if __name__ == "__main__":  # Before TensorFlow is imported, so its start-up messages are caught.
    console.quiet_terminal()

from mava_systems import qmix
from mava_systems.launching import launch

# The defaults: the config's, with RWARE's settings (mava_systems/family_settings.py).
main = launch.example_main("mava_systems.qmix.system:QMIX", qmix.QMIXConfig,
                           default_env="rware/rware-tiny-2ag-v2")

if __name__ == "__main__":
    main.run()  # Parses and checks the flags, then imports the system.
