"""Quantize pass: per-layer power-of-two formats for weights, activations and accumulators.

Three steps, each usable on its own:

1. `Ranges.of`: how large each layer's output can get. Measured on calibration inputs (with a
   margin, so that other inputs of the same kind do not saturate), otherwise a sound bound by
   interval arithmetic (with the weights' and biases' signs) from an assumed input range of
   [-1, 1]. Clip bounds limit that range: deep Graph Challenge layers (clip at 32) get Q16.9,
   early ones, whose bound is smaller, finer grids.
2. `formats_for`: widths (one weight and one activation width per layer, or a precision's for
   all) and ranges give the formats: the finest scale at which each range still fits.
3. `apply_formats`: formats give the integer weights and biases, the clamp bounds and the exact
   worst-case accumulator widths, so no sum can overflow. A design's manifest records the formats,
   and this step alone rebuilds its numerics.

The arithmetic itself is defined in numerics.py (docs/numerics.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..golden import GoldenModel, flatten_inputs
from ..ir import Activation, Layer, LayerNumerics, Model
from ..numerics import FixedFormat, Precision, bound_bits, frac_bits_for

DEFAULT_INPUT_RANGE = 1.0
# Measured ranges get one guard bit: inputs other than the calibration ones (of the same
# distribution) reach beyond the calibration maximum, and would saturate there.
CALIBRATION_MARGIN = 2.0
MAX_ACC_BITS = 64


@dataclass(frozen=True)
class Ranges:
    """The largest magnitude of the model input and of each layer's output that the formats hold."""

    input: float
    outputs: tuple[float, ...]
    measured: bool  # from calibration inputs (True) or the interval bound of an assumed input range

    @classmethod
    def of(cls, model: Model, calib: np.ndarray | None = None, margin: float = CALIBRATION_MARGIN) -> Ranges:
        """Measured on `calib` (times `margin`) when given, else bounded from the assumed input range."""
        if calib is None:
            return cls(DEFAULT_INPUT_RANGE, tuple(_bounded_ranges(model)), measured=False)
        calib = flatten_inputs(model, calib, "calibration inputs")
        if calib.shape[0] == 0:
            raise FpgagenError("calibration inputs: no rows; give at least one sample")
        measured = [margin * value for value in _measured_ranges(model, calib)]
        return cls(margin * float(np.max(np.abs(calib))), tuple(measured), measured=True)


@dataclass(frozen=True)
class Widths:
    """Bits of the model input, and of each layer's weights and output activations."""

    input_bits: int
    weight_bits: tuple[int, ...]
    act_bits: tuple[int, ...]

    @classmethod
    def uniform(cls, precision: Precision, layers: int) -> Widths:
        return cls(precision.act_bits, (precision.weight_bits,) * layers, (precision.act_bits,) * layers)

    @property
    def precision(self) -> Precision:
        """The widest widths: what a design of these widths is built for."""
        return Precision(max(self.weight_bits), max(self.input_bits, *self.act_bits))


@dataclass(frozen=True)
class LayerFormats:
    weight: FixedFormat
    output: FixedFormat


@dataclass(frozen=True)
class Formats:
    """Every format of a model: with its weights, enough to rebuild its fixed-point numerics."""

    input: FixedFormat
    layers: tuple[LayerFormats, ...]


def quantize(model: Model, precision: Precision, calib: np.ndarray | None = None) -> Model:
    """Return `model` with every layer's fixed-point numerics chosen for `precision`."""
    return quantize_widths(model, Widths.uniform(precision, len(model.layers)), Ranges.of(model, calib))


def quantize_widths(model: Model, widths: Widths, ranges: Ranges) -> Model:
    return apply_formats(model, formats_for(model, widths, ranges), widths.precision)


def formats_for(model: Model, widths: Widths, ranges: Ranges) -> Formats:
    """The finest power-of-two scale at which each range fits its width."""
    input_format = FixedFormat(widths.input_bits, frac_bits_for(ranges.input, widths.input_bits))
    layers, in_fmt = [], input_format
    for layer, weight_bits, act_bits, out_range in zip(
        model.layers, widths.weight_bits, widths.act_bits, ranges.outputs
    ):
        wanted = frac_bits_for(out_range, act_bits)
        if layer.nnz:
            w_fmt = FixedFormat(weight_bits, frac_bits_for(float(np.max(np.abs(layer.weights.data))), weight_bits))
        else:
            # No weight to represent: the grid that gives the output (its bias) the bits it wants,
            # rather than the finest grid of all, which put a bias of 512 beyond 64 bits.
            w_fmt = FixedFormat(weight_bits, max(0, wanted - in_fmt.frac))
        # More fractional bits than the accumulator has would only shift zeros in.
        out_fmt = FixedFormat(act_bits, min(wanted, in_fmt.frac + w_fmt.frac))
        layers.append(LayerFormats(w_fmt, out_fmt))
        in_fmt = out_fmt
    return Formats(input_format, tuple(layers))


def apply_formats(model: Model, formats: Formats, precision: Precision) -> Model:
    """`model` computing in `formats`: integer weights, biases, clamp bounds, accumulator widths."""
    layers = []
    in_fmt, in_magnitude = formats.input, max(-formats.input.qmin, formats.input.qmax)
    for layer, chosen in zip(model.layers, formats.layers, strict=True):
        numerics = _layer_numerics(layer, in_fmt, in_magnitude, chosen)
        layers.append(replace(layer, numerics=numerics))
        in_fmt = numerics.output_format
        in_magnitude = max(abs(numerics.lo_q), abs(numerics.hi_q))
    return replace(model, layers=tuple(layers), precision=precision, input_format=formats.input)


def formats_of(model: Model) -> Formats:
    """The formats a quantized model computes in."""
    return Formats(
        model.input_format,
        tuple(LayerFormats(layer.numerics.weight_format, layer.numerics.output_format) for layer in model.layers),
    )


def _layer_numerics(layer: Layer, in_fmt: FixedFormat, in_magnitude: int, formats: LayerFormats) -> LayerNumerics:
    w_fmt, out_fmt = formats.weight, formats.output
    acc_frac = in_fmt.frac + w_fmt.frac
    if out_fmt.frac > acc_frac:
        raise FpgagenError(f"layer {layer.name}: output format {out_fmt} is finer than its accumulator (2^-{acc_frac})")
    weights_q = sp.csr_array(
        (w_fmt.quantize(layer.weights.data), layer.weights.indices.copy(), layer.weights.indptr.copy()),
        shape=layer.weights.shape,
    )
    weights_q.eliminate_zeros()  # a weight that rounds to zero costs hardware and changes nothing
    acc_fmt = FixedFormat(MAX_ACC_BITS, acc_frac)
    if not acc_fmt.fits(layer.bias).all():
        largest = float(np.max(np.abs(layer.bias)))
        raise FpgagenError(
            f"layer {layer.name} ({layer.origin!r}): a bias of {largest:g} does not fit a {MAX_ACC_BITS}-bit "
            f"accumulator on the grid of its weights (2^-{acc_frac}); weights and bias span too wide a range "
            f"for {w_fmt.bits}-bit weights and {out_fmt.bits}-bit activations"
        )
    bias_q = acc_fmt.quantize(layer.bias)
    lo_q, hi_q = _clamp_bounds(layer.activation, out_fmt)

    shift = acc_frac - out_fmt.frac
    fan_in_sum = np.abs(weights_q).sum(axis=0) if weights_q.nnz else np.zeros(layer.out_features)
    worst = _largest_sum(fan_in_sum, in_magnitude, bias_q)
    acc_bits = bound_bits(worst + ((1 << (shift - 1)) if shift > 0 else 0))
    if acc_bits > MAX_ACC_BITS:
        raise FpgagenError(
            f"layer {layer.name} ({layer.origin!r}): its accumulator would need {acc_bits} bits; "
            f"weights and bias span too wide a range for {w_fmt.bits}-bit weights and {out_fmt.bits}-bit activations"
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


def _largest_sum(fan_in_sum: np.ndarray, in_magnitude: int, bias_q: np.ndarray) -> int:
    """max_j (sum_i |w_ij|) * |x|max + |b_j|, exactly: in int64 when it cannot overflow (a bias
    near 2^63 plus its fan-in would wrap around and hide a sum too wide for 64 bits), else in
    Python's integers."""
    estimate = float(np.max(np.abs(fan_in_sum).astype(np.float64) * in_magnitude + np.abs(bias_q), initial=0.0))
    if estimate < math.ldexp(1.0, 62):
        return int(np.max(fan_in_sum * in_magnitude + np.abs(bias_q), initial=0))
    return max(int(fan_in) * in_magnitude + abs(int(bias)) for fan_in, bias in zip(fan_in_sum, bias_q))


def _clamp_bounds(activation: Activation, fmt: FixedFormat) -> tuple[int, int]:
    lo = fmt.qmin if activation.lo == -np.inf else int(fmt.quantize(activation.lo))
    hi = fmt.qmax if activation.hi == np.inf else int(fmt.quantize(activation.hi))
    return lo, hi


def _measured_ranges(model: Model, calib: np.ndarray) -> list[float]:
    """Largest output magnitude of each layer on the calibration inputs (float reference)."""
    outputs = GoldenModel(replace(model, precision=None, input_format=None)).run(calib, trace=True)
    return [float(abs(out).max()) if out.nnz else 0.0 for out in outputs]


def _bounded_ranges(model: Model) -> list[float]:
    """Interval arithmetic with signs: each input in [lo_i, hi_i] (at first [-1, 1]) bounds each
    sum to [W+ lo + W- hi + b, W+ hi + W- lo + b] (W+ and W- the positive and negative weights),
    and the clamp, which is monotone, maps that interval's ends. With the signs, an output a large
    negative bias keeps at zero through a ReLU bounds nothing; |W| |x| + |b| made it size the whole
    layer's format (a bias of -1e6 on one neuron rounded every other activation to zero)."""
    lo = np.full(model.in_features, -DEFAULT_INPUT_RANGE)
    hi = np.full(model.in_features, DEFAULT_INPUT_RANGE)
    ranges = []
    for layer in model.layers:
        positive, negative = layer.weights.maximum(0), layer.weights.minimum(0)
        low = positive.T @ lo + negative.T @ hi + layer.bias
        high = positive.T @ hi + negative.T @ lo + layer.bias
        lo, hi = layer.activation.apply(low), layer.activation.apply(high)
        ranges.append(float(np.maximum(np.abs(lo), np.abs(hi)).max(initial=0.0)))
    return ranges
