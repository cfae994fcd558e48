"""Variable clients that say when the variables they keep changed."""

from typing import Sequence

from acme.tf import variable_utils
import tensorflow as tf


class VersionedVariableClient(variable_utils.VariableClient):
    """Acme's `VariableClient`, counting the copies it has made into the variables.

    Whoever keeps a derived copy of the variables (e.g. an executor's NumPy
    weights) re-reads them only when `version` has moved.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.version = 0

    def _copy(self, new_variables: Sequence[Sequence[tf.Variable]]) -> None:
        super()._copy(new_variables)
        self.version += 1
