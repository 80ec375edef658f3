"""How far a quantized model is from float, and where its values saturate (docs/numerics.md).

The error is the largest |fixed - float| over every output of every input, relative to the
output range (the largest float output minus the smallest); the float reference is the same
model unquantized. A value saturates when its rounded accumulator lies outside what the layer's
output format can hold and the activation does not clamp it there anyway (a ReLU's zero or a Clip
bound is the activation's own, not a saturation); an input saturates when it lies outside the
input format.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import scipy.sparse as sp

from .golden import GoldenModel
from .ir import Layer, Model

CALIBRATION = "calibration"
TEST_VECTORS = "test vectors"


@dataclass(frozen=True)
class LayerSaturation:
    name: str
    saturated: int
    values: int  # outputs computed: inputs x out_features

    @property
    def fraction(self) -> float:
        return self.saturated / self.values if self.values else 0.0


@dataclass(frozen=True)
class Accuracy:
    inputs: str  # CALIBRATION, or TEST_VECTORS (random inputs within the input format's range)
    samples: int
    max_error: float  # largest |fixed - float| relative to the output range
    mean_error: float
    output_range: float  # the denominator: largest minus smallest float output
    input_saturated: int
    input_values: int
    layers: tuple[LayerSaturation, ...]

    @property
    def saturated_layers(self) -> list[LayerSaturation]:
        return [layer for layer in self.layers if layer.saturated]

    def to_dict(self) -> dict:
        return asdict(self)


def relative_error(reference: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - reference| relative to the reference's range (its largest magnitude if the range is
    zero, absolute if that is zero too)."""
    return np.abs(got - reference) / output_scale(reference)


def output_scale(reference: np.ndarray) -> float:
    if reference.size == 0:
        return 1.0
    spread = float(reference.max() - reference.min())
    return spread if spread > 0 else (float(np.abs(reference).max()) or 1.0)


def float_model(model: Model) -> Model:
    return replace(model, precision=None, input_format=None)


def measure_accuracy(
    model: Model, x: np.ndarray, inputs: str, scale: float | None = None, outputs: list[sp.csr_array] | None = None
) -> Accuracy:
    """Error and saturation of the quantized `model` on flattened float inputs `x`, relative to
    `scale` (a design's output range, measured on its calibration inputs) or to the outputs' range.
    `outputs`: every layer's integer outputs on `x`, when the caller has them already."""
    reference = GoldenModel(float_model(model)).predict(x)
    golden = GoldenModel(model)
    x_q = golden.quantize_inputs(x)
    outputs = outputs if outputs is not None else golden.run_q(x_q, trace=True)
    scale = scale or output_scale(reference)
    errors = np.abs(model.layers[-1].numerics.output_format.to_float(outputs[-1].toarray()) - reference) / scale
    fmt = model.input_format
    scaled = np.floor(x * math.ldexp(1.0, fmt.frac) + 0.5)
    layer_inputs = [sp.csr_array(x_q)] + outputs[:-1]
    return Accuracy(
        inputs=inputs,
        samples=int(x.shape[0]),
        max_error=float(errors.max(initial=0.0)),
        mean_error=float(errors.mean()) if errors.size else 0.0,
        output_range=scale,
        input_saturated=int(np.count_nonzero((scaled > fmt.qmax) | (scaled < fmt.qmin))),
        input_values=int(x.size),
        layers=tuple(
            LayerSaturation(layer.name, _saturated(layer, layer_in, layer_out), x.shape[0] * layer.out_features)
            for layer, layer_in, layer_out in zip(model.layers, layer_inputs, outputs)
        ),
    )


def _saturated(layer: Layer, x_q: sp.csr_array, y_q: sp.csr_array) -> int:
    """Outputs whose rounded accumulator the output format clamps and the activation would not.

    Only an output at a clamp bound can have been clamped, so only those accumulators are computed.
    """
    num = layer.numerics
    fmt, act = num.output_format, layer.activation
    # The clamp bound is the format's when the activation's own bound lies beyond the format.
    high_is_format = act.hi == math.inf or math.floor(act.hi * math.ldexp(1.0, fmt.frac) + 0.5) > fmt.qmax
    low_is_format = act.lo == -math.inf or math.floor(act.lo * math.ldexp(1.0, fmt.frac) + 0.5) < fmt.qmin
    y = sp.coo_array(y_q)
    at_bound = ((y.data == num.hi_q) & high_is_format) | ((y.data == num.lo_q) & low_is_format)
    rows, cols = y.coords[0][at_bound], y.coords[1][at_bound]
    if rows.size == 0:
        return 0
    x_rows = sp.csr_array(x_q, dtype=np.int64)[rows]
    weights = sp.csc_array(num.weights_q, dtype=np.int64)[:, cols]
    acc = np.asarray(x_rows.multiply(weights.T).sum(axis=1)).ravel() + num.bias_q[cols]
    if num.shift > 0:
        acc = (acc + (1 << (num.shift - 1))) >> num.shift
    return int(np.count_nonzero((acc > num.hi_q) | (acc < num.lo_q)))
