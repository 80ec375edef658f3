"""What a layer asks of the engine per vector: the cycles of its issue units, PEs, memory port and
serializers, on the inputs an `Activity` describes (docs/cost-model.md, "Cycles").

Each function returns one figure per vector (per measured vector, or one expected figure), so
that the cost model can take the maximum of the parts vector by vector before averaging.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..engine.layout import lane_counts
from ..engine.relabel import output_rotations, pe_of_outputs, pe_of_rotated_outputs
from .activity import Inputs


@dataclass(frozen=True, eq=False)
class Placement:
    """A layer's nonzeros over P PEs: which PE owns each output, and so how many nonzeros of each
    row each PE takes."""

    pes: int
    pe: np.ndarray  # (out_features,) the PE of each output
    counts: np.ndarray  # (in_features, pes) nonzeros of row i on PE p
    rotations: np.ndarray | None = None  # the model's last layer, its outputs rotated over the PEs

    @cached_property
    def beats(self) -> np.ndarray:
        """Weight beats of each row: its most nonzeros on any one PE (fpgagen.engine.layout)."""
        if not self.counts.size:
            return np.zeros(self.counts.shape[0], dtype=np.int64)
        return self.counts.max(axis=1).astype(np.int64)

    @cached_property
    def row_cycles(self) -> np.ndarray:
        """Cycles an issue unit spends on each row when its activation is nonzero: one a beat,
        one for a row without any."""
        return np.maximum(self.beats, 1).astype(np.float64)


def place(weights: sp.csr_array, pes: int, relabel: bool, last: bool = False) -> Placement:
    """The placement of a layer on P PEs: output j on PE j mod P, or (`relabel`) as the
    relabelling pass will put it; the model's `last` layer as the engine rotates it (its outputs
    keep their order: fpgagen.engine.relabel)."""
    n_out = weights.shape[1]
    rotations = None
    if last:
        rotations = output_rotations(weights, pes)
        pe = pe_of_rotated_outputs(n_out, pes, rotations)
    elif relabel:
        pe = pe_of_outputs(weights, pes)
    else:
        pe = np.arange(n_out) % pes
    counts = lane_counts(weights, pes, pe)
    # The scheduler keeps a placement for every layer and P it prices: in the narrowest integers
    # that hold them (a byte each for Graph Challenge, not eight: GC 16384 x 120 at 18 values of P
    # would otherwise keep 8.6 GB of them)
    return Placement(pes, pe, counts.astype(np.min_scalar_type(counts.max(initial=0))), rotations)


def issue_cycles(inputs: Inputs, row_cycles: np.ndarray, units: int) -> np.ndarray:
    """Cycles of the busiest of K issue units, each vector's nonzero activations dealt to them in
    turn (the merger's round robin)."""
    if units == 1 or not inputs.measured:
        return inputs.rows @ row_cycles / units
    active = inputs.rows > 0
    turn = (np.cumsum(active, axis=1) - 1) % units
    return np.max([(active & (turn == unit)) @ row_cycles for unit in range(units)], axis=0)


def pe_cycles(inputs: Inputs, counts: np.ndarray) -> np.ndarray:
    """Cycles of the busiest PE: one per entry it takes."""
    return (inputs.rows @ counts.astype(np.float64)).max(axis=1)  # BLAS: a product with bytes is not


def serializer_cycles(
    values: Inputs, word: np.ndarray, group: np.ndarray, groups: int, empty_words: bool = True
) -> np.ndarray:
    """Cycles of the busiest of a drain's (or the reader's) serializers: each takes its group of
    every word and emits one nonzero value a cycle. `word` and `group` give each value's word and
    group. With `empty_words` (the reader) the producer writes a group's word even without a
    nonzero value, and the serializer spends a cycle on it; a drain writes none."""
    words = int(word.max(initial=-1)) + 1
    key = group * words + word
    cells = groups * words
    if values.measured:
        nonzero = _sums_by_cell(values.rows, key, cells)
        if empty_words:
            nonzero = np.maximum(nonzero, 1)
        return nonzero.reshape(-1, groups, words).sum(axis=2).max(axis=1)
    q = values.rows[0]
    expected = np.bincount(key, q, cells)
    if empty_words:  # expected max(1, m) of a sum of independent indicators: E[m] + P(m = 0)
        with np.errstate(divide="ignore"):  # log(0) = -inf where a value is always nonzero: P(m = 0) = 0
            expected += np.exp(np.bincount(key, np.log1p(-q), cells))
    return np.array([expected.reshape(groups, words).sum(axis=1).max()])


def _sums_by_cell(rows: np.ndarray, key: np.ndarray, cells: int) -> np.ndarray:
    """(vectors, cells): each row's values summed by the cell `key` gives each value. Sorting by
    cell and summing runs of it is several times faster than a product with a one-hot matrix,
    which the scheduler would build for every layer, P and K it prices."""
    sums = np.zeros((rows.shape[0], cells))
    if key.size:
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        sums[:, ordered[starts]] = np.add.reduceat(rows[:, order], starts, axis=1)
    return sums
