"""Benchmarks of the executor, the trainer, whole programs and learning; see docs/benchmarks.md.

Each is run as `.venv/bin/python -m benchmarks.<name>`, prints a table and, as its last
line, one JSON object, also written to `benchmarks/results/<name>.json`.
"""
