"""What the value-based LBF examples (`run_madqn.py`, `run_vdn.py`, `run_qmix.py`) share."""

# The agents share one network; their one-hot IDs (EPyMARL's default) let it act differently
# per agent.
CONFIG_DEFAULTS = {"agent_ids": True}
# Epsilon annealed from 1 to 0.05 over each executor's first 200k steps (PyMARL and EPyMARL
# anneal linearly too): on Foraging-8x8-2p-2f-coop-v3 it took QMIX's final greedy return over
# 1M steps from 0.80 (one seed, the systems' constant per-executor epsilons) to 0.94 (median
# of 3 seeds); see docs/benchmarks.md.
EXPLORATION = "linear:1,0.05,200000"
# VDN's own: Adam's step size 3e-4 instead of the systems' 1e-3 took VDN's final greedy return on
# Foraging-8x8-2p-2f-coop-v3 (1M steps, the schedule above) from 0.82/0.64/0.95 to 0.95/0.94/0.93
# (3 seeds, 100 episodes each); see docs/benchmarks.md.
VDN_CONFIG_DEFAULTS = {**CONFIG_DEFAULTS, "learning_rate": 3e-4}
