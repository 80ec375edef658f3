"""Quantize pass: per-layer power-of-two formats for weights, activations and accumulators.

Weight formats come from the largest weight of each layer. Activation formats come from the
range each layer's output can take: measured on calibration inputs when given, otherwise a sound
bound by interval arithmetic from an assumed input range of [-1, 1]. Clip bounds limit that range:
deep Graph Challenge layers (clip at 32) get Q16.9, early ones, whose bound is smaller, finer
grids. Accumulator widths are exact worst cases, so no sum can overflow. The arithmetic itself is defined in numerics.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..golden import GoldenModel, flatten_inputs
from ..ir import Activation, Layer, LayerNumerics, Model
from ..numerics import FixedFormat, Precision, bound_bits, frac_bits_for

DEFAULT_INPUT_RANGE = 1.0
MAX_ACC_BITS = 64


def quantize(model: Model, precision: Precision, calib: np.ndarray | None = None) -> Model:
    """Return `model` with every layer's fixed-point numerics chosen for `precision`."""
    ranges = _measured_ranges(model, calib) if calib is not None else _bounded_ranges(model)
    input_range = float(np.max(np.abs(calib))) if calib is not None else DEFAULT_INPUT_RANGE
    input_format = FixedFormat(precision.act_bits, frac_bits_for(input_range, precision.act_bits))

    layers = []
    in_fmt, in_magnitude = input_format, max(-input_format.qmin, input_format.qmax)
    for layer, out_range in zip(model.layers, ranges):
        numerics = _layer_numerics(layer, precision, in_fmt, in_magnitude, out_range)
        layers.append(replace(layer, numerics=numerics))
        in_fmt = numerics.output_format
        in_magnitude = max(abs(numerics.lo_q), abs(numerics.hi_q))
    return replace(model, layers=tuple(layers), precision=precision, input_format=input_format)


def _layer_numerics(
    layer: Layer, precision: Precision, in_fmt: FixedFormat, in_magnitude: int, out_range: float
) -> LayerNumerics:
    max_weight = float(np.max(np.abs(layer.weights.data))) if layer.nnz else 0.0
    w_fmt = FixedFormat(precision.weight_bits, frac_bits_for(max_weight, precision.weight_bits))
    acc_frac = in_fmt.frac + w_fmt.frac
    # More fractional bits than the accumulator has would only shift zeros in.
    out_frac = min(frac_bits_for(out_range, precision.act_bits), acc_frac)
    out_fmt = FixedFormat(precision.act_bits, out_frac)

    weights_q = sp.csr_array(
        (w_fmt.quantize(layer.weights.data), layer.weights.indices.copy(), layer.weights.indptr.copy()),
        shape=layer.weights.shape,
    )
    weights_q.eliminate_zeros()  # a weight that rounds to zero costs hardware and changes nothing
    bias_q = FixedFormat(MAX_ACC_BITS, acc_frac).quantize(layer.bias)
    lo_q, hi_q = _clamp_bounds(layer.activation, out_fmt)

    shift = acc_frac - out_frac
    fan_in_sum = np.abs(weights_q).sum(axis=0) if weights_q.nnz else np.zeros(layer.out_features)
    worst = int(np.max(fan_in_sum * in_magnitude + np.abs(bias_q), initial=0))
    acc_bits = bound_bits(worst + ((1 << (shift - 1)) if shift > 0 else 0))
    if acc_bits > MAX_ACC_BITS:
        raise FpgagenError(
            f"layer {layer.name} ({layer.origin}): its accumulator would need {acc_bits} bits; "
            f"weights and bias span too wide a range for {precision.name}"
        )
    return LayerNumerics(
        input_format=in_fmt,
        weight_format=w_fmt,
        output_format=out_fmt,
        weights_q=weights_q,
        bias_q=bias_q,
        acc_bits=acc_bits,
        lo_q=lo_q,
        hi_q=hi_q,
    )


def _clamp_bounds(activation: Activation, fmt: FixedFormat) -> tuple[int, int]:
    lo = fmt.qmin if activation.lo == -np.inf else int(fmt.quantize(activation.lo))
    hi = fmt.qmax if activation.hi == np.inf else int(fmt.quantize(activation.hi))
    return lo, hi


def _measured_ranges(model: Model, calib: np.ndarray) -> list[float]:
    """Largest output magnitude of each layer on the calibration inputs (float reference)."""
    x = flatten_inputs(model, calib, "calibration inputs")
    outputs = GoldenModel(replace(model, precision=None, input_format=None)).run(x, trace=True)
    return [float(abs(out).max()) if out.nnz else 0.0 for out in outputs]


def _bounded_ranges(model: Model) -> list[float]:
    """Interval arithmetic: |y_j| <= sum_i |W_ij| |x_i| + |b_j|, then through the activation."""
    magnitude = np.full(model.in_features, DEFAULT_INPUT_RANGE)
    ranges = []
    for layer in model.layers:
        bound = np.abs(layer.weights).T @ magnitude + np.abs(layer.bias)
        act = layer.activation
        magnitude = np.maximum(np.abs(act.apply(bound)), np.abs(act.apply(-bound)))
        ranges.append(float(magnitude.max(initial=0.0)))
    return ranges
