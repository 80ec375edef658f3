"""The engine's weight layout: how a layer's nonzeros are packed into beats of P slots.

Output neuron j belongs to PE j mod P (after the relabelling pass, fpgagen.passes.relabel, that
is the PE the balancing chose) and lives at local address j div P there. Row i of W (the fan-out
of input i) is stored as `beats_i = max_p count(i, p)` consecutive beats; beat b of row i holds, in
slot p, the b-th nonzero of row i whose output is on PE p, or an empty slot. An issue unit spends
max(1, beats_i) cycles on a nonzero activation x_i and hands each valid slot to its PE's queue,
where the PEs work at their own pace; a zero activation costs nothing. This one layout serves
on-chip ROMs (dataflow layers) and the off-chip weight image (sequential layers); the cost model
counts the same beats. A beat's slots are packed into words by `slot_words`, in the format of a
`SlotWord` (fpgagen.engine.geometry).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .geometry import SlotWord


def _row_lanes(
    weights: sp.csr_array, pes: int, pe_of_output: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per nonzero, in the order `weights` holds them: its row, its lane (output j in lane j mod
    P, or in lane pe_of_output[j]) and the key row * P + lane of its (row, lane) slice."""
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    lanes = weights.indices % pes if pe_of_output is None else pe_of_output[weights.indices]
    return rows, lanes, rows * pes + lanes


def lane_counts(weights: sp.csr_array, pes: int, pe_of_output: np.ndarray | None = None) -> np.ndarray:
    """(in_features, pes) matrix: how many nonzeros of row i fall in lane p, output j being in lane
    j mod P, or in lane pe_of_output[j] (a relabelling not yet applied, fpgagen.engine.relabel)."""
    key = _row_lanes(weights, pes, pe_of_output)[2]
    return np.bincount(key, minlength=weights.shape[0] * pes).reshape(weights.shape[0], pes)


def beats_per_row(weights: sp.csr_array, pes: int, pe_of_output: np.ndarray | None = None) -> np.ndarray:
    """Beats each row occupies: the most nonzeros any one lane holds in that row (output j in lane
    j mod P, or in lane pe_of_output[j])."""
    if weights.nnz == 0:
        return np.zeros(weights.shape[0], dtype=np.int64)
    return lane_counts(weights, pes, pe_of_output).max(axis=1)


@dataclass(frozen=True, eq=False)
class LaneLayout:
    """A layer's integer weights packed for P lanes."""

    pes: int
    out_features: int
    row_start: np.ndarray  # (in_features,) first beat of each row
    row_beats: np.ndarray  # (in_features,) beats of each row (0 for an all-zero row)
    valid: np.ndarray  # (beats, pes) bool
    local: np.ndarray  # (beats, pes) local output address, j div P (0 in empty slots)
    weight: np.ndarray  # (beats, pes) integer weight (0 in empty slots)

    @property
    def beats(self) -> int:
        return int(self.valid.shape[0])

    def slot_words(self, slot: SlotWord) -> np.ndarray:
        """(beats, pes) uint64 words: valid << (LB + WB) | local << WB | (weight & (2^WB - 1))."""
        return (
            (self.valid.astype(np.uint64) << np.uint64(slot.local_bits + slot.weight_bits))
            | (self.local.astype(np.uint64) << np.uint64(slot.weight_bits))
            | (self.weight.astype(np.int64) & ((1 << slot.weight_bits) - 1)).astype(np.uint64)
        )


def lane_layout(weights_q: sp.csr_array, pes: int, pe_of_output: np.ndarray | None = None) -> LaneLayout:
    """Pack integer weights (in_features, out_features) into P lanes, output j in lane j mod P or
    in lane pe_of_output[j] (the model's last layer, rotated: fpgagen.engine.relabel)."""
    n_in, n_out = weights_q.shape
    csr = sp.csr_array(weights_q)
    csr.sort_indices()
    rows, lanes, key = _row_lanes(csr, pes, pe_of_output)
    counts = np.bincount(key, minlength=n_in * pes)
    row_beats = counts.reshape(n_in, pes).max(axis=1) if csr.nnz else np.zeros(n_in, dtype=np.int64)
    row_start = np.concatenate([[0], np.cumsum(row_beats)[:-1]]).astype(np.int64)
    # Rank of each nonzero among those of its (row, lane) slice, in column order.
    order = np.argsort(key, kind="stable")
    group_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(csr.nnz, dtype=np.int64)
    rank[order] = np.arange(csr.nnz) - group_start[key[order]]
    beats = int(row_beats.sum())
    slot = (row_start[rows] + rank, lanes)
    valid = np.zeros((beats, pes), dtype=bool)
    local = np.zeros((beats, pes), dtype=np.int64)
    weight = np.zeros((beats, pes), dtype=np.int64)
    valid[slot] = True
    local[slot] = csr.indices // pes
    weight[slot] = csr.data
    return LaneLayout(pes, n_out, row_start, row_beats.astype(np.int64), valid, local, weight)
