"""The numpy reference executor: what every generated design must reproduce bit for bit.

Activations travel as scipy CSR matrices (one row per input), so `X @ W` touches only the weight
rows of nonzero activations: the same work an EIE-style engine does, and the reason this model is
fast on sparse networks. A layer whose bias survives its activation (a positive bias through a
ReLU, say) produces a dense output; that case is handled exactly, column by column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..ir import Layer, Model
from ..numerics import requantize


def flatten_inputs(model: Model, x: np.ndarray, source: str = "inputs") -> np.ndarray:
    """Inputs as a (batch, in_features) float64 array; accepts the model's own sample shape too."""
    x = np.asarray(x)
    if x.dtype.kind not in "fiub":
        raise FpgagenError(f"{source}: expected numbers, got an array of {x.dtype}")
    sample_shapes = {tuple(model.input_shape), (model.in_features,)}
    if x.ndim >= 1 and tuple(x.shape) in sample_shapes:
        x = x[np.newaxis]
    if x.ndim < 2 or tuple(x.shape[1:]) not in sample_shapes:
        raise FpgagenError(
            f"{source}: shape {tuple(x.shape)} does not fit the model input "
            f"{model.input_name!r}, which takes (batch, {', '.join(map(str, model.input_shape))})"
        )
    x = x.reshape(x.shape[0], model.in_features).astype(np.float64)
    if not np.all(np.isfinite(x)):
        raise FpgagenError(f"{source}: contains NaN or infinite values")
    return x


def _sparse_rows(x: np.ndarray | sp.csr_array) -> sp.csr_array:
    csr = sp.csr_array(x)
    csr.eliminate_zeros()
    return csr


def _float_layer(x: sp.csr_array, layer: Layer) -> sp.csr_array:
    z = x @ layer.weights
    zero_output = layer.activation.apply(layer.bias)  # what an output with no input contribution gives
    if np.any(zero_output != 0.0):
        return _sparse_rows(layer.activation.apply(z.toarray() + layer.bias))
    z = sp.csr_array(z)
    z.data += layer.bias[z.indices]
    z.data = layer.activation.apply(z.data)
    z.eliminate_zeros()
    return z


@dataclass(frozen=True)
class _FixedLayer:
    weights: sp.csr_array
    bias: np.ndarray
    uniform_bias: int | None  # the Graph Challenge case: one bias for every neuron, added as a scalar
    shift: int
    lo_q: int
    hi_q: int
    zero_output: np.ndarray

    @classmethod
    def prepare(cls, layer: Layer) -> _FixedLayer:
        num = layer.numerics
        if num is None:
            raise ValueError(f"layer {layer.name} is not quantized")
        # int32 is enough whenever the accumulator is, and halves the memory traffic of X @ W.
        dtype = np.int32 if num.acc_bits <= 32 else np.int64
        bias = num.bias_q.astype(dtype)
        uniform = int(bias[0]) if bias.size and np.all(bias == bias[0]) else None
        return cls(
            weights=sp.csr_array(num.weights_q, dtype=dtype),
            bias=bias,
            uniform_bias=uniform,
            shift=num.shift,
            lo_q=num.lo_q,
            hi_q=num.hi_q,
            zero_output=requantize(bias.copy(), num.shift, num.lo_q, num.hi_q),
        )

    def __call__(self, x: sp.csr_array) -> sp.csr_array:
        z = sp.csr_array(x.astype(self.weights.dtype, copy=False) @ self.weights)
        if np.any(self.zero_output != 0):
            acc = z.toarray() + self.bias
            return _sparse_rows(requantize(acc, self.shift, self.lo_q, self.hi_q, inplace=True))
        if self.uniform_bias is not None:
            z.data += self.weights.dtype.type(self.uniform_bias)
        else:
            z.data += self.bias[z.indices]
        requantize(z.data, self.shift, self.lo_q, self.hi_q, inplace=True)
        z.eliminate_zeros()
        return z


def _chain(act: sp.csr_array, steps, trace: bool) -> list[sp.csr_array]:
    outputs = []
    for step in steps:
        act = step(act)
        if trace:
            outputs.append(act)
    return outputs if trace else [act]


class GoldenModel:
    """Runs a model in float64 (unquantized) or in its fixed-point arithmetic (quantized)."""

    def __init__(self, model: Model):
        self.model = model
        self._fixed = [_FixedLayer.prepare(layer) for layer in model.layers] if model.quantized else None

    def quantize_inputs(self, x: np.ndarray) -> np.ndarray:
        """The integers the hardware receives for float inputs (batch, in_features)."""
        assert self.model.input_format is not None
        return self.model.input_format.quantize(x)

    def run(self, x: np.ndarray, trace: bool = False) -> list[sp.csr_array]:
        """Layer outputs for flattened float inputs: integers when quantized, floats otherwise.

        Returns every layer's output when `trace` is set, else only the last one.
        """
        if self._fixed is not None:
            return self.run_q(self.quantize_inputs(x), trace)
        steps = [lambda a, layer=layer: _float_layer(a, layer) for layer in self.model.layers]
        return _chain(_sparse_rows(x), steps, trace)

    def run_q(self, x_q: np.ndarray, trace: bool = False) -> list[sp.csr_array]:
        """Like `run`, from inputs already quantized (what a testbench feeds the hardware)."""
        assert self._fixed is not None
        return _chain(_sparse_rows(np.asarray(x_q, dtype=np.int64)), self._fixed, trace)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Float outputs (batch, out_features): dequantized when the model is quantized."""
        y = self.run(x)[-1]
        return y.toarray() if self._fixed is None else self.dequantized(y)

    def dequantized(self, y_q: sp.csr_array) -> np.ndarray:
        """The float values of the last layer's integer outputs."""
        return self.model.layers[-1].numerics.output_format.to_float(y_q.toarray())
