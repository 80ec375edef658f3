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
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

_CACHE: dict[tuple[bytes, int], np.ndarray] = {}
_CACHED = 256  # relabellings kept: a network's distinct layer structures times the P values tried


def pe_of_outputs(weights: sp.csr_array, pes: int) -> np.ndarray:
    """(N_out,) the PE of every output after relabelling; output j keeps local address j div P."""
    key = (_structure(weights), pes)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = _assign(weights, pes)
    return _CACHE[key]


def relabelling(weights: sp.csr_array, pes: int) -> np.ndarray:
    """(N_out,) the new index of every output: a * P + its PE."""
    n_out = weights.shape[1]
    return (np.arange(n_out) // pes) * pes + pe_of_outputs(weights, pes)


def _structure(weights: sp.csr_array) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(weights.shape, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(weights.indptr, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(weights.indices, dtype=np.int64).tobytes())
    return digest.digest()


def _assign(weights: sp.csr_array, pes: int) -> np.ndarray:
    n_in, n_out = weights.shape
    label = np.arange(n_out) % pes
    if pes == 1 or weights.nnz == 0:
        return label
    columns = sp.csc_array(weights).astype(bool).astype(np.float64)  # an explicit zero counts 0
    indptr, indices, ones = columns.indptr, columns.indices, columns.data
    # used[i * P + p]: nonzeros of row i already on PE p. Plain numpy on the block's entries: a
    # scipy product per block cost more in building its arrays than in multiplying (GC 16384:
    # 1.2-2.4 s a layer, now 0.1-0.2 s).
    used = np.zeros(n_in * pes)
    lanes = np.arange(pes)
    for start in range(0, n_out, pes):
        stop = min(start + pes, n_out)
        count = stop - start  # the last address uses its first PEs only
        entries = slice(indptr[start], indptr[stop])
        rows, counted = indices[entries], ones[entries]
        output = np.repeat(np.arange(count), np.diff(indptr[start : stop + 1]))
        # cost[k, p]: the nonzeros that output k's rows already have on PE p
        gathered = used.reshape(n_in, pes)[rows, :count] * counted[:, None]
        cost = np.bincount((output[:, None] * count + lanes[:count]).ravel(), gathered.ravel(), count * count)
        placed, chosen = linear_sum_assignment(cost.reshape(count, count))
        label[start + placed] = chosen
        pe = np.empty(count, dtype=np.int64)
        pe[placed] = chosen
        np.add.at(used, rows * pes + pe[output], counted)
    return label
