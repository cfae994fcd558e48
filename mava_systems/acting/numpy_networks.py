"""NumPy twins of small Sonnet networks, so that executors act without a TensorFlow call per step.

An executor evaluates its networks on a handful of rows at every environment
step. For networks as small as the systems' MLPs, one TensorFlow call costs far
more (about 1 ms on 2 cores) than the arithmetic (tens of microseconds), so
executors act through a NumPy copy of the forward pass (`numpy_twin`) whose
weights are re-read from the TensorFlow variables only when those changed
(`NumpyNetworks.sync`). A network holding a layer the twins do not know has no
twin (`numpy_twin` returns None), and its executor acts in TensorFlow.

Twins are made for modules of exactly the registered types (subclasses may
compute something else): Sonnet's `Linear`, `nets.MLP`, `Sequential`,
`LayerNorm`, `Reshape` and `Flatten`; Acme's `LayerNormMLP`,
`NearZeroInitializedLinear` and `TanhToSpec`; ReLU, tanh and ELU activations;
and whatever the systems register for their own modules (`register_numpy_twin`).
"""

from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Union

from acme.tf import networks as acme_networks
import numpy as np
import sonnet as snt
import tensorflow as tf

from mava_systems.training import graph_conversion  # noqa: F401  (AutoGraph's rules)


class NumpyLayer:
    """A layer's forward pass in NumPy over copies of its variables (and its sublayers').

    `refresh()` re-reads the copies from the TensorFlow variables; subclasses
    with variables of their own copy them in `read_variables`.
    """

    def __init__(self, *sublayers: "NumpyLayer"):
        self.sublayers = sublayers

    def refresh(self) -> None:
        """Re-reads every variable of this layer and its sublayers."""
        for layer in self.sublayers:
            layer.refresh()
        self.read_variables()

    def read_variables(self) -> None:
        """Copies this layer's own variables (it has none by default)."""

    def __call__(self, inputs: np.ndarray) -> Any:
        raise NotImplementedError


class NumpyFunction(NumpyLayer):
    """A layer without variables: `function(inputs)`."""

    def __init__(self, function: Callable[[np.ndarray], np.ndarray]):
        super().__init__()
        self._function = function

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        return self._function(inputs)


class NumpySequential(NumpyLayer):
    """Sublayers applied one after the other."""

    def __call__(self, inputs: np.ndarray) -> Any:
        for layer in self.sublayers:
            inputs = layer(inputs)
        return inputs


class NumpyLinear(NumpyLayer):
    """`snt.Linear`: inputs @ w (+ b)."""

    def __init__(self, linear: snt.Linear):
        super().__init__()
        self._linear = linear
        self._w: Optional[np.ndarray] = None
        self._b: Optional[np.ndarray] = None

    def read_variables(self) -> None:
        self._w = self._linear.w.numpy()
        self._b = self._linear.b.numpy() if self._linear.with_bias else None

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        outputs = inputs @ self._w
        return outputs if self._b is None else outputs + self._b


class NumpyLayerNorm(NumpyLayer):
    """`snt.LayerNorm` over the last axis of [B, D] inputs, computed as `tf.nn.moments` and
    `tf.nn.batch_normalization` compute it."""

    def __init__(self, norm: snt.LayerNorm):
        super().__init__()
        self._norm = norm
        self._epsilon = np.float32(norm._eps)  # pylint: disable=protected-access
        self._scale: Optional[np.ndarray] = None
        self._offset: Optional[np.ndarray] = None

    def read_variables(self) -> None:
        self._scale = None if self._norm.scale is None else self._norm.scale.numpy()
        self._offset = None if self._norm.offset is None else self._norm.offset.numpy()

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        mean = inputs.mean(axis=-1, keepdims=True)
        variance = np.square(inputs - mean).mean(axis=-1, keepdims=True)
        inverse = 1.0 / np.sqrt(variance + self._epsilon)
        if self._scale is not None:
            inverse = inverse * self._scale
        shift = -mean * inverse if self._offset is None else self._offset - mean * inverse
        return inputs * inverse + shift


def flatten(inputs: np.ndarray) -> np.ndarray:
    """[B, ...] -> [B, prod(...)] float32 (the NumPy side of the systems' `flatten`)."""
    inputs = np.asarray(inputs, np.float32)
    return inputs.reshape(inputs.shape[0], -1)


def _elu(inputs: np.ndarray) -> np.ndarray:
    return np.where(inputs > 0, inputs, np.expm1(np.minimum(inputs, 0)))


# TensorFlow activations (as Sonnet modules and Sequentials hold them) and their NumPy twins.
ACTIVATIONS: Dict[Callable[..., Any], Callable[[np.ndarray], np.ndarray]] = {
    tf.nn.relu: lambda inputs: np.maximum(inputs, np.float32(0.0)),
    tf.nn.tanh: np.tanh,
    tf.nn.elu: _elu,
}

TwinMaker = Callable[[Any], Optional[NumpyLayer]]
_TWIN_MAKERS: Dict[type, TwinMaker] = {}


def register_numpy_twin(module_type: type) -> Callable[[TwinMaker], TwinMaker]:
    """Decorator: `maker(module)` makes the twins of modules of exactly `module_type` (not of
    its subclasses), or returns None when it cannot (e.g. for an unknown activation)."""
    def register(maker: TwinMaker) -> TwinMaker:
        _TWIN_MAKERS[module_type] = maker
        return maker
    return register


def numpy_twin(module: Any) -> Optional[NumpyLayer]:
    """The NumPy twin of a module (or activation function), holding its current weights; None
    if it, or a layer inside it, is not one the twins know.

    The twin computes what `module` computes on float32 inputs, to float32 rounding.
    """
    maker = _TWIN_MAKERS.get(type(module))
    if maker is not None:
        twin = maker(module)
    else:
        try:
            activation = ACTIVATIONS.get(module)
        except TypeError:  # Not hashable: not one of ours.
            activation = None
        twin = None if activation is None else NumpyFunction(activation)
    if twin is not None:
        try:
            twin.refresh()
        except AttributeError:  # A module whose variables are not created yet.
            return None
    return twin


def sequential_twin(*layers: Union[NumpyLayer, Any]) -> Optional[NumpySequential]:
    """The twin of `layers` applied in order (modules are replaced by their twins); None if one
    has none."""
    twins = [layer if isinstance(layer, NumpyLayer) else numpy_twin(layer) for layer in layers]
    return None if any(twin is None for twin in twins) else NumpySequential(*twins)


def mlp_twin(linears: Any, activation: Any, activate_final: bool) -> Optional[NumpySequential]:
    """The twin of linear layers with `activation` between them (and after the last one with
    `activate_final`)."""
    layers = []
    for index, linear in enumerate(linears):
        layers.append(linear)
        if index < len(linears) - 1 or activate_final:
            layers.append(activation)
    return sequential_twin(*layers)


FLATTEN = NumpyFunction(flatten)


@register_numpy_twin(snt.Linear)
@register_numpy_twin(acme_networks.NearZeroInitializedLinear)
def _linear_twin(linear: snt.Linear) -> NumpyLayer:
    return NumpyLinear(linear)


@register_numpy_twin(snt.nets.MLP)
def _mlp_twin(mlp: snt.nets.MLP) -> Optional[NumpyLayer]:
    # pylint: disable=protected-access
    if mlp._dropout_rate not in (None, 0):
        return None
    return mlp_twin(mlp._layers, mlp._activation, mlp._activate_final)


@register_numpy_twin(snt.Sequential)
def _sequential_twin(sequential: snt.Sequential) -> Optional[NumpyLayer]:
    return sequential_twin(*sequential._layers)  # pylint: disable=protected-access


@register_numpy_twin(snt.LayerNorm)
def _layer_norm_twin(norm: snt.LayerNorm) -> Optional[NumpyLayer]:
    # pylint: disable=protected-access
    built_for_rows = getattr(norm, "_rank", None) == 2 and tuple(norm._axis) == (1,)
    return NumpyLayerNorm(norm) if built_for_rows and norm._channel_index == -1 else None


@register_numpy_twin(snt.Reshape)
@register_numpy_twin(snt.Flatten)
def _reshape_twin(reshape: snt.Reshape) -> NumpyLayer:
    # pylint: disable=protected-access
    preserve, shape = reshape._preserve_dims, tuple(reshape._output_shape)
    return NumpyFunction(lambda inputs: inputs.reshape(inputs.shape[:preserve] + shape))


@register_numpy_twin(acme_networks.LayerNormMLP)
def _layer_norm_mlp_twin(mlp: acme_networks.LayerNormMLP) -> Optional[NumpyLayer]:
    # Its call flattens the (single) input, as `tf2_utils.batch_concat` does.
    return sequential_twin(FLATTEN, mlp._network)  # pylint: disable=protected-access


@register_numpy_twin(acme_networks.TanhToSpec)
def _tanh_to_spec_twin(module: acme_networks.TanhToSpec) -> NumpyLayer:
    # pylint: disable=protected-access
    scale = np.asarray(module._scale, np.float32)
    offset = np.asarray(module._offset, np.float32)
    return NumpyFunction(lambda inputs: 0.5 * (np.tanh(inputs) + 1.0) * scale + offset)


class NumpyNetworks(Mapping[str, NumpyLayer]):
    """NumPy twins of networks by key (see `numpy_twin`), kept in step with their variables.

    With a variable client that counts its copies (`VersionedVariableClient`),
    `sync()` re-reads the weights whenever it copied new variables since the
    last read: cheap enough to call at every step. With a client that does not
    count, every `sync()` re-reads them. With no client nothing tells when the
    variables change: `sync(new_episode=True)` re-reads them (executors call it
    as each episode starts), so a loop that changes the variables between
    episodes acts with the current ones; after changing them within an
    episode, call `refresh()`.
    """

    def __init__(self, twins: Mapping[str, NumpyLayer], variable_client: Any = None):
        self._twins = dict(twins)
        self._variable_client = variable_client
        self._version = getattr(variable_client, "version", None)

    @classmethod
    def of(cls, modules: Mapping[str, Any], variable_client: Any = None
           ) -> Optional["NumpyNetworks"]:
        """Twins of every module, or None if one has none (or there are no modules)."""
        twins = {key: numpy_twin(module) for key, module in modules.items()}
        if not twins or any(twin is None for twin in twins.values()):
            return None
        return cls(twins, variable_client)

    def __getitem__(self, key: str) -> NumpyLayer:
        return self._twins[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._twins)

    def __len__(self) -> int:
        return len(self._twins)

    def refresh(self) -> None:
        """Re-reads every twin's weights."""
        for twin in self._twins.values():
            twin.refresh()

    def sync(self, new_episode: bool = False) -> bool:
        """Re-reads the weights if they may have changed (see the class); whether it did."""
        if self._variable_client is None:
            stale = new_episode
        else:
            version = getattr(self._variable_client, "version", None)
            stale = version is None or version != self._version
            self._version = version
        if stale:
            self.refresh()
        return stale


def _sigmoid(inputs: np.ndarray) -> np.ndarray:
    # The tanh form stays finite for inputs of any size.
    return 0.5 * (np.tanh(0.5 * inputs) + 1.0)


class NumpyGRU(NumpyLayer):
    """`snt.GRU` as a recurrent twin: `(inputs [B, I], state [B, H]) -> (outputs, new state)`,
    both the new state, as Sonnet's GRU computes them."""

    def __init__(self, gru: snt.GRU):
        super().__init__()
        self._gru = gru
        self._size = gru._hidden_size  # pylint: disable=protected-access
        self._w_i: Optional[np.ndarray] = None
        self._w_h_gates: Optional[np.ndarray] = None
        self._w_h_candidate: Optional[np.ndarray] = None
        self._b_gates: Optional[np.ndarray] = None
        self._b_candidate: Optional[np.ndarray] = None

    def read_variables(self) -> None:
        gates = 2 * self._size
        w_h = self._gru.hidden_to_hidden.numpy()
        b = self._gru.b.numpy()
        self._w_i = self._gru.input_to_hidden.numpy()
        self._w_h_gates, self._w_h_candidate = w_h[:, :gates], w_h[:, gates:]
        self._b_gates, self._b_candidate = b[:gates], b[gates:]

    def __call__(self, inputs: np.ndarray, state: np.ndarray = None) -> Any:
        gates = 2 * self._size
        from_inputs = inputs @ self._w_i
        update, reset = np.split(
            _sigmoid(from_inputs[:, :gates] + state @ self._w_h_gates + self._b_gates), 2, axis=1)
        candidate = np.tanh(from_inputs[:, gates:] + (reset * state) @ self._w_h_candidate
                            + self._b_candidate)
        new_state = (1.0 - update) * state + update * candidate
        return new_state, new_state


@register_numpy_twin(snt.GRU)
def _gru_twin(gru: snt.GRU) -> NumpyLayer:
    return NumpyGRU(gru)
