"""Data to and from replay: transition and sequence adders, sequence batches, packing, stacking
agents per network."""
