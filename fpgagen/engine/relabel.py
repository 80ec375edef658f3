"""Which PE owns each output of a layer: the relabelling that balances the PEs.

Output j stays at local address j div P; only its PE changes, by a permutation of the P outputs of
each address. The outputs of address a are assigned together (a linear sum assignment) to the PEs
that the earlier addresses' outputs of the same rows use least: every row's nonzeros spread over
as many PEs as possible. That keeps rows short in beats (fewer padded slots, a faster issue), and,
since every PE then takes an equal share of every row, balances the PEs' work on any set of
nonzero activations. The assignment depends only on where the nonzeros are, so layers that share a
structure (all the Graph Challenge layers of one stride) share one relabelling.

At the last address only the first N_out mod P PEs hold real outputs (the rest of the address is
padding the drain skips), so its outputs go to those.

The model's last layer keeps its outputs' order: its drain writes dense beats, a local address a
beat, in the order the user expects. It may still be rotated: output j on PE (j + r_a) mod P at
its address a, r_a chosen address by address as above among the P rotations, which the drain's
rotator undoes in a beat (docs/engine.md, "Rotated outputs"). A Graph Challenge 1024 layer's rows
take two beats at P = 32 as they are, one rotated.
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from .layout import lane_counts

_CACHE: dict[tuple[bytes, int, str], np.ndarray] = {}
_CACHED = 256  # placements kept: a network's distinct layer structures times the P values tried


def pe_of_outputs(weights: sp.csr_array, pes: int) -> np.ndarray:
    """(N_out,) the PE of every output after relabelling; output j keeps local address j div P."""
    return _cached(weights, pes, "relabelling", _assign)


def relabelling(weights: sp.csr_array, pes: int) -> np.ndarray:
    """(N_out,) the new index of every output: a * P + its PE."""
    n_out = weights.shape[1]
    return (np.arange(n_out) // pes) * pes + pe_of_outputs(weights, pes)


def output_rotations(weights: sp.csr_array, pes: int) -> np.ndarray | None:
    """(addresses,) the rotation r_a of each local address of the model's last layer on P PEs, or
    None where rotating saves no beat; the last address, if partial, is never rotated."""
    rotations = _cached(weights, pes, "rotations", _rotate)
    return rotations if rotations.any() else None


def pe_of_rotated_outputs(n_out: int, pes: int, rotations: np.ndarray | None) -> np.ndarray:
    """(N_out,) the PE of every output of a layer rotated by `rotations` (None: j mod P)."""
    outputs = np.arange(n_out)
    if rotations is None:
        return outputs % pes
    return (outputs + rotations[outputs // pes]) % pes


def rotation_levels(rotations: np.ndarray | None) -> int:
    """The rotator's levels a layer needs (fg_dense.v): the bits any of its rotations sets.
    Synthesis drops the others, whose multiplexers never switch (Graph Challenge 1024 at P = 32
    rotates by 0 or 16: one level). 0 without rotations."""
    return 0 if rotations is None else int(np.bitwise_or.reduce(rotations)).bit_count()


def _cached(weights: sp.csr_array, pes: int, kind: str, make) -> np.ndarray:
    """`make(weights, pes)`, kept by the weights' structure, P and its `kind`."""
    key = (_structure(weights), pes, kind)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make(weights, pes)
    return _CACHE[key]


def _structure(weights: sp.csr_array) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(weights.shape, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(weights.indptr, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(weights.indices, dtype=np.int64).tobytes())
    return digest.digest()


class _Spread:
    """The outputs of a layer given to PEs address by address, and what each row already has on
    each PE. Plain numpy on an address's entries: a scipy product per address cost more in
    building its arrays than in multiplying (GC 16384: 1.2-2.4 s a layer, now 0.1-0.2 s)."""

    def __init__(self, weights: sp.csr_array, pes: int):
        columns = sp.csc_array(weights).astype(bool).astype(np.float64)  # an explicit zero counts 0
        self.indptr, self.indices, self.ones = columns.indptr, columns.indices, columns.data
        self.used = np.zeros((weights.shape[0], pes))  # [i, p]: nonzeros of row i already on PE p

    def costs(self, start: int, stop: int) -> np.ndarray:
        """(count, count) for outputs start .. stop - 1: [k, p] the nonzeros that output k's rows
        already have on PE p."""
        count = stop - start
        rows, counted, output = self._entries(start, stop)
        gathered = self.used[rows, :count] * counted[:, None]
        keys = (output[:, None] * count + np.arange(count)).ravel()
        return np.bincount(keys, gathered.ravel(), count * count).reshape(count, count)

    def take(self, start: int, stop: int, pe: np.ndarray) -> None:
        """Outputs start .. stop - 1 on PEs `pe`: their rows' nonzeros there."""
        rows, counted, output = self._entries(start, stop)
        np.add.at(self.used, (rows, pe[output]), counted)

    def _entries(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of the outputs' nonzeros, 1 each (0 for an explicit zero), and which output."""
        entries = slice(self.indptr[start], self.indptr[stop])
        output = np.repeat(np.arange(stop - start), np.diff(self.indptr[start : stop + 1]))
        return self.indices[entries], self.ones[entries], output


def _assign(weights: sp.csr_array, pes: int) -> np.ndarray:
    n_out = weights.shape[1]
    label = np.arange(n_out) % pes
    if pes == 1 or weights.nnz == 0:
        return label
    spread = _Spread(weights, pes)
    for start in range(0, n_out, pes):
        stop = min(start + pes, n_out)  # the last address uses its first PEs only
        placed, chosen = linear_sum_assignment(spread.costs(start, stop))
        label[start + placed] = chosen
        pe = np.empty(stop - start, dtype=np.int64)
        pe[placed] = chosen
        spread.take(start, stop, pe)
    return label


def _rotate(weights: sp.csr_array, pes: int) -> np.ndarray:
    """The rotations `output_rotations` chooses, zeros where they would save no beat."""
    n_out = weights.shape[1]
    rotations = np.zeros(-(-n_out // pes), dtype=np.int64)
    if pes == 1 or weights.nnz == 0:
        return rotations
    spread = _Spread(weights, pes)
    lanes = np.arange(pes)
    rotated = (lanes[:, None] + lanes) % pes  # [k, r]: the PE rotation r puts output k on
    for address in range(n_out // pes):  # full addresses: a partial last one keeps r = 0
        start = address * pes
        cost = spread.costs(start, start + pes)
        rotations[address] = np.argmin(cost[lanes[:, None], rotated].sum(axis=0))
        spread.take(start, start + pes, rotated[:, rotations[address]])
    beats = lane_counts(weights, pes, pe_of_rotated_outputs(n_out, pes, rotations)).max(axis=1).sum()
    return rotations if beats < lane_counts(weights, pes).max(axis=1).sum() else np.zeros_like(rotations)
