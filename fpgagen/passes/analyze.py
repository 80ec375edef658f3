"""Analysis pass: what a model's sparsity means for an EIE-style engine of P PEs.

Here output j belongs to PE j mod P: the placement before the relabelling pass
(fpgagen.passes.relabel), which `fpgagen compile` runs to balance the PEs. For a nonzero input
activation x_i an issue unit sends row i of W as beats: beat b carries, for every PE, its b-th
nonzero of that row, so row i takes beats_i = max_p count(i, p) beats, at least one when x_i is
nonzero. Each PE queues its entries and takes one a cycle at its own pace, so an empty slot costs
an issue cycle rather than a PE cycle. From that follow the numbers reported here:

- load imbalance: the busiest PE's nonzeros over the mean PE's, over the whole layer;
- lane efficiency: useful work over issued work, sum_i f_i nnz_i / (P * sum_i f_i max(1, beats_i)),
  where f_i is how often input i is nonzero on the calibration inputs (1 for every input without
  them, so every row is paid for);
- storage: dense, plain CSR (int32 column indices and row pointers), and the engine's own format,
  which stores sum_i beats_i beats of P entries, each a weight plus the output's index inside its
  PE's slice rounded up to whole bytes, and a row table of 4 bytes per input.

With calibration inputs the pass also runs the float and fixed-point golden models side by side
and reports how far the fixed-point outputs drift.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..golden import GoldenModel, flatten_inputs
from ..ir import Layer, Model
from ..numerics import DEFAULT_PRECISION, FLOAT, Precision, parse_precision
from .quantize import quantize

FLOAT_WEIGHT_BITS = 32
ROW_TABLE_ENTRY_BYTES = 4
CSR_INDEX_BYTES = 4


@dataclass(frozen=True)
class Spread:
    min: int
    mean: float
    max: int

    @classmethod
    def of(cls, counts: np.ndarray) -> Spread:
        return cls(int(counts.min()), float(counts.mean()), int(counts.max()))


@dataclass(frozen=True)
class LayerAnalysis:
    name: str
    origin: str
    in_features: int
    out_features: int
    nnz: int
    density: float
    fan_in: Spread  # nonzeros per output neuron (per column of W)
    fan_out: Spread  # nonzeros per input (per row of W)
    pe_imbalance: float | None  # max PE nonzeros / mean PE nonzeros; None for an empty layer
    beats: int  # sum over rows of max_p count(i, p): what the engine stores
    cycles: float  # lock-step beats per inference (mean over calibration inputs when given)
    useful_macs: float  # nonzero weights that meet a nonzero activation, per inference
    lane_efficiency: float | None  # None when no input ever reaches the layer
    activation_density: float | None  # fraction of nonzero inputs to the layer; None without calibration
    dense_bytes: int
    engine_bytes: int
    csr_bytes: int


@dataclass(frozen=True)
class Totals:
    nnz: int
    weights: int  # in_features * out_features summed over layers
    density: float
    beats: int
    cycles: float
    useful_macs: float
    lane_efficiency: float | None
    dense_bytes: int
    engine_bytes: int
    csr_bytes: int


@dataclass(frozen=True)
class FixedPointError:
    """Fixed point against float on the calibration inputs (final outputs only)."""

    inputs: int
    max_abs_error: float
    argmax_agreement: float  # fraction of inputs whose largest output is the same neuron


@dataclass(frozen=True)
class Analysis:
    model: str
    pes: int
    precision: str  # wXaY, or "float"
    weight_bits: int
    calib_inputs: int | None
    layers: tuple[LayerAnalysis, ...]
    totals: Totals
    fixed_point: FixedPointError | None

    def to_dict(self) -> dict:
        return asdict(self)


def analyze(model: Model, pes: int = 16, calib: np.ndarray | None = None, precision: str | None = None) -> Analysis:
    """Analyze `model` for `pes` PEs; `precision` is wXaY or float (default: the model's own, else w8a16)."""
    if pes < 1:
        raise FpgagenError(f"the number of PEs must be at least 1, got {pes}")
    float_model, fixed_model, chosen = _models(model, precision)
    weight_bits = chosen.weight_bits if chosen is not None else FLOAT_WEIGHT_BITS

    x = None if calib is None else _calibration_inputs(float_model, calib)
    trace = GoldenModel(float_model).run(x, trace=True) if x is not None else None
    inputs = _layer_inputs(x, trace) if x is not None else [None] * len(model.layers)
    layers = tuple(_analyze_layer(layer, pes, weight_bits, act) for layer, act in zip(float_model.layers, inputs))

    fixed_point = None
    if x is not None and chosen is not None:
        fixed_model = fixed_model or quantize(float_model, chosen, x)
        fixed_point = _fixed_point_error(trace[-1].toarray(), fixed_model, x)
    return Analysis(
        model=model.name,
        pes=pes,
        precision=chosen.name if chosen is not None else FLOAT,
        weight_bits=weight_bits,
        calib_inputs=None if x is None else int(x.shape[0]),
        layers=layers,
        totals=_totals(layers, pes),
        fixed_point=fixed_point,
    )


def _models(model: Model, precision: str | None) -> tuple[Model, Model | None, Precision | None]:
    """The float model, the fixed-point one if the model came quantized, and the precision to use."""
    if not model.quantized:
        return model, None, parse_precision(precision or DEFAULT_PRECISION)
    if precision is not None and parse_precision(precision) != model.precision:
        raise FpgagenError(
            f"model {model.name} is already quantized to {model.precision.name}; it cannot be analyzed as {precision}"
        )
    stripped = [replace(layer, numerics=None) for layer in model.layers]
    return replace(model, layers=tuple(stripped), precision=None, input_format=None), model, model.precision


def _calibration_inputs(model: Model, calib: np.ndarray) -> np.ndarray:
    x = flatten_inputs(model, calib, "calibration inputs")
    if x.shape[0] == 0:
        raise FpgagenError("calibration inputs: the array holds no samples")
    return x


def _layer_inputs(x: np.ndarray, trace: list[sp.csr_array]) -> list[sp.csr_array]:
    """What each layer receives: the inputs, then the float golden model's layer outputs."""
    first = sp.csr_array(x)
    first.eliminate_zeros()
    return [first, *trace[:-1]]


def _analyze_layer(layer: Layer, pes: int, weight_bits: int, inputs: sp.csr_array | None) -> LayerAnalysis:
    weights = layer.weights
    rows = np.repeat(np.arange(layer.in_features), np.diff(weights.indptr))
    pe_of = weights.indices % pes
    slice_counts = sp.csr_array((np.ones(layer.nnz, dtype=np.int64), (rows, pe_of)), shape=(layer.in_features, pes))
    row_beats = slice_counts.max(axis=1).toarray()
    row_nnz = np.diff(weights.indptr)
    pe_nnz = np.bincount(pe_of, minlength=pes)

    if inputs is None:
        frequency = np.ones(layer.in_features)  # every activation taken as nonzero
        activation_density = None
    else:
        batch = inputs.shape[0]
        frequency = np.bincount(inputs.indices, minlength=layer.in_features) / batch
        activation_density = inputs.nnz / (batch * layer.in_features)
    cycles = float(frequency @ np.maximum(row_beats, 1))
    useful = float(frequency @ row_nnz)

    beats = int(row_beats.sum())
    weight_bytes = _bytes(weight_bits)
    slice_width = -(-layer.out_features // pes)
    index_bits = max(1, (slice_width - 1).bit_length())
    return LayerAnalysis(
        name=layer.name,
        origin=layer.origin,
        in_features=layer.in_features,
        out_features=layer.out_features,
        nnz=layer.nnz,
        density=layer.density,
        fan_in=Spread.of(np.bincount(weights.indices, minlength=layer.out_features)),
        fan_out=Spread.of(row_nnz),
        pe_imbalance=float(pe_nnz.max() / pe_nnz.mean()) if layer.nnz else None,
        beats=beats,
        cycles=cycles,
        useful_macs=useful,
        lane_efficiency=useful / (pes * cycles) if cycles else None,
        activation_density=activation_density,
        dense_bytes=layer.in_features * layer.out_features * weight_bytes,
        engine_bytes=beats * pes * _bytes(weight_bits + index_bits) + layer.in_features * ROW_TABLE_ENTRY_BYTES,
        csr_bytes=layer.nnz * (weight_bytes + CSR_INDEX_BYTES) + (layer.in_features + 1) * CSR_INDEX_BYTES,
    )


def _totals(layers: tuple[LayerAnalysis, ...], pes: int) -> Totals:
    nnz = sum(layer.nnz for layer in layers)
    weights = sum(layer.in_features * layer.out_features for layer in layers)
    cycles = sum(layer.cycles for layer in layers)
    useful = sum(layer.useful_macs for layer in layers)
    return Totals(
        nnz=nnz,
        weights=weights,
        density=nnz / weights,
        beats=sum(layer.beats for layer in layers),
        cycles=cycles,
        useful_macs=useful,
        lane_efficiency=useful / (pes * cycles) if cycles else None,
        dense_bytes=sum(layer.dense_bytes for layer in layers),
        engine_bytes=sum(layer.engine_bytes for layer in layers),
        csr_bytes=sum(layer.csr_bytes for layer in layers),
    )


def _fixed_point_error(reference: np.ndarray, fixed_model: Model, x: np.ndarray) -> FixedPointError:
    fixed = GoldenModel(fixed_model).predict(x)
    return FixedPointError(
        inputs=int(x.shape[0]),
        max_abs_error=float(np.max(np.abs(fixed - reference))),
        argmax_agreement=float(np.mean(np.argmax(fixed, axis=1) == np.argmax(reference, axis=1))),
    )


def _bytes(bits: int) -> int:
    return math.ceil(bits / 8)
