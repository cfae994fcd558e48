"""Variable clients that say when the variables they keep changed."""

from typing import Any, Mapping, Optional, Sequence

from acme.tf import variable_utils
import numpy as np
import tensorflow as tf


class VersionedVariableClient(variable_utils.VariableClient):
    """Acme's `VariableClient`, counting the copies it has made into the variables.

    Whoever keeps a derived copy of the variables (e.g. an executor's NumPy
    weights) re-reads them only when `version` has moved.

    With a `version_key` (a key of `variables` whose one variable is the step
    the served variables are from, e.g. MAPPO's `policy_version`), a fetch
    whose step is the one last copied is neither fetched nor copied again: each
    fetch first asks the source for that one variable, and asks for the rest
    only when its step moved. On-policy executors fetch far more often than
    their trainer steps (every 20 executor steps against a trainer step per few
    hundred), and each full fetch serializes every variable on the source and
    each copy assigns every variable.
    """

    def __init__(self, client: Any, variables: Mapping[str, Sequence[tf.Variable]],
                 update_period: int = 1, version_key: Optional[str] = None):
        super().__init__(client, variables, update_period)
        if version_key is not None and len(variables.get(version_key, ())) != 1:
            raise ValueError(f"version_key {version_key!r} must name one variable of "
                             f"{sorted(variables)}")
        self._version_key = version_key
        self._version_index = None if version_key is None else self._keys.index(version_key)
        self._copied_step: Optional[Any] = None
        self.version = 0
        if version_key is not None:
            self._request = self._fetch_if_moved

    def _fetch_if_moved(self) -> Optional[Sequence[Sequence[Any]]]:
        """The source's variables, or None when its step is the one last copied."""
        if self._copied_step is not None:
            served = self._client.get_variables([self._version_key])
            if np.asarray(served[0][0]).item() == self._copied_step:
                return None
        return self._client.get_variables(self._keys)

    def _copy(self, new_variables: Optional[Sequence[Sequence[tf.Variable]]]) -> None:
        if new_variables is None:
            return
        if self._version_index is not None:
            step = np.asarray(new_variables[self._version_index][0]).item()
            if step == self._copied_step:
                return
            self._copied_step = step
        super()._copy(new_variables)
        self.version += 1
