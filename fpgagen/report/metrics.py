"""Figures the report computes from the rebuilt model and the vectors that were really simulated.

The design folder records the schedule, the estimates and the counters; what depends on the inputs
(which PE did how much useful work, how far fixed point drifted from float) is computed here from
the model (rebuilt from the manifest) and the simulated vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..golden import GoldenModel
from ..ir import DATAFLOW, Layer, Model
from ..vectors import Vectors

SPARSITY_BINS = 64  # a sparsity picture is at most this many bins a side


def output_pes(out_features: int, pes: int) -> np.ndarray:
    """The PE that computes each output neuron. Engine v1 interleaves: output j on PE j mod P
    (fpgagen/engine/layout.py). The one place the report assumes the mapping."""
    return np.arange(out_features) % pes


@dataclass(frozen=True)
class PeLoad:
    """Useful MACs per PE of one layer, summed over the simulated vectors."""

    layer: str
    pes: int
    macs: np.ndarray  # (pes,)

    @property
    def mean(self) -> float:
        return float(self.macs.mean())

    @property
    def imbalance(self) -> float | None:
        """Busiest PE over the mean PE (1 is perfect balance); None when the layer did no work."""
        return float(self.macs.max()) / self.mean if self.mean > 0 else None


def pe_loads(model: Model, vectors: Vectors) -> list[PeLoad]:
    """Per layer and PE: the nonzero weights of the PE's outputs met by nonzero input activations."""
    loads = []
    for layer, x in zip(model.layers, vectors.layer_inputs()):
        pes = layer.schedule.pes
        weights = sp.csr_array(layer.numerics.weights_q)
        hits = np.asarray((x != 0).sum(axis=0)).ravel().astype(np.float64)  # times each input was nonzero
        rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
        owner = output_pes(layer.out_features, pes)[weights.indices]
        loads.append(PeLoad(layer.name, pes, np.bincount(owner, weights=hits[rows], minlength=pes)))
    return loads


@dataclass(frozen=True)
class FixedPointError:
    """One layer's fixed-point outputs against the float64 model, on the same inputs."""

    layer: str
    output_format: str
    lsb: float  # the value of one unit in the last place of the output format
    max_abs: float
    rms: float
    max_float: float  # the largest float output magnitude, for scale

    @property
    def max_lsb(self) -> float:
        return self.max_abs / self.lsb


def fixed_point_errors(model: Model, vectors: Vectors) -> list[FixedPointError]:
    """Each layer's output error after every layer before it ran in fixed point (errors accumulate):
    the simulated inputs (exact in float) go through the float64 model and are compared with the
    golden fixed-point outputs the design reproduces bit for bit."""
    x = model.input_format.to_float(vectors.x_q.astype(np.int64))
    float_model = replace(model, precision=None, input_format=None)
    references = GoldenModel(float_model).run(x, trace=True)
    errors = []
    for layer, fixed, reference in zip(model.layers, vectors.layer_outputs, references):
        fmt = layer.numerics.output_format
        difference = fmt.to_float(fixed.astype(np.int64)) - reference.toarray()
        errors.append(
            FixedPointError(
                layer=layer.name,
                output_format=str(fmt),
                lsb=float(fmt.to_float(1)),
                max_abs=float(np.abs(difference).max(initial=0.0)),
                rms=float(np.sqrt(np.mean(difference**2))) if difference.size else 0.0,
                max_float=float(np.abs(reference.toarray()).max(initial=0.0)),
            )
        )
    return errors


def sparsity_picture(layer: Layer, bins: int = SPARSITY_BINS) -> np.ndarray:
    """(rows, cols) fraction of nonzero weights in each block of W (inputs down, outputs across),
    at most `bins` blocks a side."""
    n_in, n_out = layer.weights.shape
    rows, cols = min(bins, n_in), min(bins, n_out)
    coo = layer.weights.tocoo()
    counts = np.zeros((rows, cols))
    np.add.at(counts, (coo.row * rows // n_in, coo.col * cols // n_out), 1.0)
    block_rows = np.bincount(np.arange(n_in) * rows // n_in, minlength=rows)
    block_cols = np.bincount(np.arange(n_out) * cols // n_out, minlength=cols)
    return counts / np.outer(block_rows, block_cols)


@dataclass(frozen=True)
class StageInterval:
    """Cycles per vector of one stage: the cost model's, and the RTL's from the layer counters."""

    index: int
    mode: str
    pes: int
    layers: tuple[str, ...]
    estimated: float
    measured: float | None


def stage_intervals(manifest: dict, results: dict | None) -> list[StageInterval]:
    """A dataflow stage computes one vector while it drains the one before, so its interval is
    max(busy, drain); a sequential stage runs its layers one after the other, compute then drain,
    so its interval is the sum of both over its layers (docs/engine.md, Timing)."""
    estimate = manifest.get("estimate") or {}
    estimated = {stage["index"]: stage["interval"] for stage in estimate.get("stages", [])}
    counters = {entry["layer"]: entry for entry in (results or {}).get("layers", [])}
    names = [layer["name"] for layer in manifest["layers"]]
    intervals = []
    for index, stage in enumerate(manifest["schedule"]["stages"]):
        layers = tuple(names[i] for i in stage["layers"])
        measured = None
        if layers and all(name in counters for name in layers):
            busy = [counters[name]["busy_per_vector"] for name in layers]
            drain = [counters[name]["drain_per_vector"] for name in layers]
            measured = max(busy[0], drain[0]) if stage["mode"] == DATAFLOW else sum(busy) + sum(drain)
        intervals.append(
            StageInterval(index, stage["mode"], stage["pes"], layers, float(estimated.get(index, 0.0)), measured)
        )
    return intervals
