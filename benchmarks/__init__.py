"""Benchmarks of the executor, the trainer, whole programs and learning, and tools that read a
program (`threads`, `curve_table`); figures in docs/benchmarks.md, methods in
docs/benchmark_method.md.

Each benchmark runs as `.venv/bin/python -m benchmarks.<name>`, prints a table and, as its last
line, one JSON object, also written to `benchmarks/results/<name>.json`.
"""
