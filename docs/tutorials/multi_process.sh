#!/usr/bin/env bash
# Tutorial 4: one process per node (local_mp), two executors reading from one cache.
# Run from the repository root; ENV, STEPS, RUN_DIR and PYTHON may be overridden, and
# further arguments are passed on as flags (e.g. --batch_size=64).
set -euo pipefail
PYTHON=${PYTHON:-.venv/bin/python}
ENV=${ENV:-mpe/simple_spread_v3}
RUN_DIR=${RUN_DIR:-runs/spread_mp}
STEPS=${STEPS:-20000}

"$PYTHON" examples/mpe/run_madqn.py --lp_launch_type=local_mp \
    --env="$ENV" --num_executors=2 --num_caches=1 \
    --max_executor_steps="$STEPS" --run_dir="$RUN_DIR" "$@"
