"""Vectorised environments: B copies of a task stepped in one NumPy call (see `base`)."""

from wrappers.vectorised.base import BatchedEnvironment, BatchedTimeStep
from wrappers.vectorised.registry import (VectorisedFamily, make_vectorised_environment, vectorised_families,
                                          vectorised_implementation)

__all__ = [
    "BatchedEnvironment",
    "BatchedTimeStep",
    "VectorisedFamily",
    "make_vectorised_environment",
    "vectorised_families",
    "vectorised_implementation",
]
