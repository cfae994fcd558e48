#!/usr/bin/env bash
# Tutorial 3: train, continue the same run, evaluate its latest checkpoint, plot it.
# Run from the repository root; STEPS, RUN_DIR and PYTHON may be overridden.
set -euo pipefail
PYTHON=${PYTHON:-.venv/bin/python}
RUN_DIR=${RUN_DIR:-runs/line_world}
STEPS=${STEPS:-3000}
SETTINGS=(--env=debug/line_world_v0 --min_replay_size=100 --batch_size=32 --n_step=3
          --evaluation_interval_s=1)

# 1. A first part of the run: stops after STEPS executor steps, with checkpoints.
"$PYTHON" examples/mpe/run_madqn.py "${SETTINGS[@]}" --run_dir="$RUN_DIR" \
    --max_executor_steps="$STEPS"

# 2. The same run_dir again: it resumes (networks, optimizer, counts) and goes on
#    to twice as many steps in total; a changed learning rate is reported.
"$PYTHON" examples/mpe/run_madqn.py "${SETTINGS[@]}" --run_dir="$RUN_DIR" \
    --max_executor_steps=$((2 * STEPS)) --learning_rate=0.0005

# 3. The greedy return of the latest trainer checkpoint, with a 95% confidence interval.
"$PYTHON" -m mava_systems.evaluate --run_dir="$RUN_DIR" --episodes=20 --seed=0

# 4. The learning curve of both parts.
"$PYTHON" -m mava_systems.plot "$RUN_DIR" --out="$RUN_DIR/curves.png"
