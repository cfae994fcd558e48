"""A run on disk: its directory and description, atomic checkpoints (replay's too), loggers, a full
disk."""
