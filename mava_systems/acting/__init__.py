"""Acting in environments: the environment loops, exploration schedules, recurrent states, NumPy
twins of networks."""
