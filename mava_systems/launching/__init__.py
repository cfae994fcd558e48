"""Launching a program: the examples' flags, local processes and their watching, cores, allocators,
node names."""
