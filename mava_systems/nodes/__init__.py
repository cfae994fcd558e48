"""Program nodes and how they talk and stop: replay, counter, coordinator, variable caches and
clients, the evaluator."""
