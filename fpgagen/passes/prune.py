"""Prune pass: zero weights by magnitude, in one of three patterns.

- `magnitude`: the smallest weights of each layer, until a `sparsity` fraction of it is zero.
- `nm:N:M`: for every output neuron, the N largest of each M consecutive inputs (NVIDIA's 2:4
  pattern is `nm:2:4`); groups run along the reduction axis, i.e. down each column of W.
- `balanced:P`: the same number of weights in every (input row, PE) slice, where PE p owns the
  outputs j with j mod P == p. The engine sends a row as beats of one weight per PE, as many as
  its fullest PE holds, so with that placement equal slices leave no slot of a beat empty.

Everything is computed on the stored nonzeros (never a dense copy), so Graph Challenge sized
layers prune in memory proportional to their nonzeros. Among equal magnitudes the weight that
comes first in row-major order is kept, so results are deterministic.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..ir import Layer, Model, sparse_weights

METHODS = "magnitude, nm:N:M or balanced:P"
_NM_RE = re.compile(r"^nm:(\d+):(\d+)$")
_BALANCED_RE = re.compile(r"^balanced:(\d+)$")
# nm sparsity is fixed by N and M; a --sparsity that agrees to six significant digits (0.333333 for
# nm:2:3, as the error message suggests it) is accepted.
_SPARSITY_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Magnitude:
    def describe(self) -> str:
        return "magnitude"


@dataclass(frozen=True)
class NM:
    n: int
    m: int

    def describe(self) -> str:
        return f"nm:{self.n}:{self.m}"


@dataclass(frozen=True)
class Balanced:
    pes: int

    def describe(self) -> str:
        return f"balanced:{self.pes}"


Method = Magnitude | NM | Balanced


def parse_method(text: str) -> Method:
    """`magnitude`, `nm:N:M` (1 <= N <= M) or `balanced:P` (P >= 1)."""
    text = text.strip()
    if text == "magnitude":
        return Magnitude()
    if match := _NM_RE.match(text):
        n, m = int(match[1]), int(match[2])
        if not 1 <= n <= m:
            raise FpgagenError(
                f"pruning method {text!r}: nm:N:M needs 1 <= N <= M (keep N of every M), got N={n}, M={m}"
            )
        return NM(n, m)
    if match := _BALANCED_RE.match(text):
        pes = int(match[1])
        if pes < 1:
            raise FpgagenError(f"pruning method {text!r}: balanced:P needs at least one PE, got P={pes}")
        return Balanced(pes)
    if text.startswith(("nm", "balanced")):
        raise FpgagenError(f"pruning method {text!r} is malformed; N, M and P are whole numbers: {METHODS}")
    raise FpgagenError(f"pruning method {text!r} is unknown; use {METHODS}")


def prune(model: Model, sparsity: float | None, method: str | Method = "magnitude") -> Model:
    """A new float model with weights zeroed per `method`.

    `sparsity` is the fraction of each layer's weights that ends up zero, in [0, 1). It is required
    for magnitude and balanced pruning; for nm:N:M it follows from N and M (1 - N/M) and may be
    left out. Pruning works on float weights: a quantized model comes back unquantized, because
    its fixed-point formats were chosen for weights that no longer exist.
    """
    chosen = parse_method(method) if isinstance(method, str) else method
    sparsity = checked_sparsity(sparsity, chosen)
    layers = []
    for layer in model.layers:
        keep = _kept_entries(layer, sparsity, chosen)
        coo = layer.weights.tocoo()
        kept = sp.coo_array((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=coo.shape)
        layers.append(replace(layer, weights=sparse_weights(kept), numerics=None))
    return replace(model, layers=tuple(layers), precision=None, input_format=None)


def checked_sparsity(sparsity: float | None, method: Method) -> float:
    """The sparsity `method` prunes to: `sparsity` checked, or the one nm:N:M implies."""
    name = method.describe()
    if isinstance(method, NM):
        implied = 1.0 - method.n / method.m
        if sparsity is not None and abs(sparsity - implied) > _SPARSITY_TOLERANCE:
            raise FpgagenError(
                f"sparsity {sparsity:g} contradicts {name}, which keeps {method.n} of every {method.m} "
                f"weights (sparsity {implied:g}); leave --sparsity out or give {implied:g}"
            )
        return implied
    if sparsity is None:
        raise FpgagenError(f"pruning with {name} needs a sparsity (the fraction of weights to zero, in [0, 1))")
    if not 0.0 <= sparsity < 1.0:  # also refuses NaN
        raise FpgagenError(f"sparsity {sparsity!r} is outside [0, 1): it is the fraction of weights set to zero")
    return sparsity


def _kept_entries(layer: Layer, sparsity: float, method: Method) -> np.ndarray:
    """Boolean mask over the layer's stored nonzeros (in CSR order) of those that survive."""
    weights = layer.weights
    magnitude = np.abs(weights.data)
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    cols = weights.indices
    if isinstance(method, Magnitude):
        zeros = _round_half_up(sparsity * layer.in_features * layer.out_features)
        keep = layer.in_features * layer.out_features - zeros
        return _largest_per_group(np.zeros(layer.nnz, dtype=np.int64), magnitude, keep)
    if isinstance(method, NM):
        group = cols.astype(np.int64) * (-(-layer.in_features // method.m)) + rows // method.m
        return _largest_per_group(group, magnitude, method.n)
    per_slice = balanced_count(layer, sparsity, method.pes)
    slices = rows.astype(np.int64) * method.pes + cols % method.pes
    _require_full_slices(layer, slices, per_slice, sparsity, method.pes)
    return _largest_per_group(slices, magnitude, per_slice)


def balanced_count(layer: Layer, sparsity: float, pes: int) -> int:
    """Weights that balanced:P keeps in every (row, PE) slice of `layer`.

    PE p owns ceil((out - p) / P) outputs, so when P does not divide out_features the slices of
    the last PEs are one shorter. The count is the one closest to the requested density over the
    whole layer, round_half_up((1 - sparsity) * out_features / P), capped at floor(out_features / P)
    so that it fits the shortest slice. The layer's sparsity is then 1 - count * P / out_features.
    """
    shortest = layer.out_features // pes
    if shortest == 0:
        raise FpgagenError(
            f"layer {layer.name} ({layer.origin!r}) has {layer.out_features} outputs, fewer than the "
            f"{pes} PEs of balanced:{pes}: some PEs would own no output, so no count fits every PE"
        )
    count = min(shortest, _round_half_up((1.0 - sparsity) * layer.out_features / pes))
    if count == 0:
        raise FpgagenError(
            f"layer {layer.name} ({layer.origin!r}): sparsity {sparsity:g} with balanced:{pes} keeps "
            f"round({1.0 - sparsity:g} * {layer.out_features} / {pes}) = 0 weights per row and PE, "
            "which would empty the layer; lower the sparsity or the number of PEs"
        )
    return count


def _require_full_slices(layer: Layer, slices: np.ndarray, per_slice: int, sparsity: float, pes: int) -> None:
    """Refuse when some slice already holds fewer nonzeros than the count every slice must keep."""
    counts = np.bincount(slices, minlength=layer.in_features * pes)
    poorest = int(np.argmin(counts))
    if counts[poorest] >= per_slice:
        return
    row, pe = divmod(poorest, pes)
    most = int(counts[poorest])
    hint = (
        f"a sparsity of at least {1.0 - most * pes / layer.out_features:g} fits it"
        if most
        else "no sparsity fits it: some row and PE has no weight at all"
    )
    raise FpgagenError(
        f"layer {layer.name} ({layer.origin!r}): balanced:{pes} at sparsity {sparsity:g} keeps {per_slice} "
        f"weight(s) in every row on every PE, but row {row} has only {most} nonzero weight(s) on PE {pe}; {hint}"
    )


def _largest_per_group(group: np.ndarray, magnitude: np.ndarray, keep: int) -> np.ndarray:
    """Mask of the `keep` largest magnitudes within each group; ties go to the earlier entry."""
    position = np.arange(group.size)
    order = np.lexsort((position, -magnitude, group))
    sorted_group = group[order]
    run_starts = np.flatnonzero(np.r_[group.size > 0, sorted_group[1:] != sorted_group[:-1]])
    run_lengths = np.diff(np.r_[run_starts, group.size])
    rank = position - np.repeat(run_starts, run_lengths)
    mask = np.empty(group.size, dtype=bool)
    mask[order] = rank < keep
    return mask


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)
