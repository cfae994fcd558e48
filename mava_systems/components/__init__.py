"""Components shared by every system: nodes, loops, loggers, checkpointing."""
