"""What trainers share: the trainer loop around a gradient step, optimizers, actor-critic networks,
the GRU unroll."""
