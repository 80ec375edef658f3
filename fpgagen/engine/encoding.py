"""How a dataflow layer's nonzero weights reach its PEs (docs/engine.md, "Weight encodings").

A slot of a weight beat names the PE's local address and, in the general encoding, the weight;
the PE multiplies. When every nonzero of a layer has one value c (every Graph Challenge weight is
1/16), the slots carry positions only, which removes the weight bits from every slot, entry and
FIFO. When |c| = 2^k, the PE adds the bare activations into accumulators k bits narrower, and the
drain shifts each sum by k before the bias (c * sum(x) is exactly sum(c * x) in integers): no
multiplier at all. Otherwise the PE multiplies x by the constant c, in its DSP as before.

When the nonzeros share a few values (EIE's weight sharing: a ternary layer, or weights clustered
by `fpgagen share`), the slots carry an index into the layer's codebook instead of the weight, at
most CODEBOOK_MAX_BITS bits and fewer than the weight's own: each PE looks the weight up in a table
of constants (one LUT per weight bit) and multiplies as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import LayerNumerics

# The widest index of a codebook: a table of 2^6 constants is one LUT6 per weight bit.
CODEBOOK_MAX_BITS = 6


@dataclass(frozen=True)
class Encoding:
    weight_bits: int  # the weight field of a slot and of an entry (a codebook index); 0: positions only
    scale: int = 1  # positions only: the layer's one weight
    codebook: tuple[int, ...] = ()  # the weights an index names, ascending (empty: the field is the weight)

    @property
    def positions_only(self) -> bool:
        return self.weight_bits == 0

    @property
    def indexed(self) -> bool:
        """Whether a slot's weight field is an index into `codebook`."""
        return bool(self.codebook)

    @property
    def scale_shift(self) -> int | None:
        """log2 |scale| when |scale| is a power of two: the drain's multiply is a shift."""
        magnitude = abs(self.scale)
        return magnitude.bit_length() - 1 if magnitude & (magnitude - 1) == 0 else None

    @property
    def multiplies(self) -> bool:
        """Whether each PE needs a multiplier (a DSP): by its weights, or by a shared weight that is
        not a power of two."""
        return not self.positions_only or self.scale_shift is None

    @property
    def pe_scale(self) -> int:
        """What a PE multiplies a positions-only entry's x by: a shared weight that is no power of
        two (1 otherwise: the weight comes with the entry, or the drain shifts)."""
        return self.scale if self.positions_only and self.multiplies else 1

    @property
    def drain_scale(self) -> int:
        """What the drain multiplies a sum by: a shared weight of +-2^k, a shift (1 otherwise)."""
        return 1 if self.multiplies else self.scale

    @property
    def sum_narrowing(self) -> int:
        """Bits the accumulators need fewer than the layer's exact bound: sums of bare activations,
        2^k times smaller than the sums of products, when the shared weight is +-2^k."""
        return 0 if self.multiplies else self.scale_shift

    @property
    def codebook_bits(self) -> int:
        """The width of a codebook's values (two's complement; 0 without a codebook)."""
        return max((value.bit_length() + 1 for value in self.codebook), default=0)

    def fields(self, weights: np.ndarray) -> np.ndarray:
        """What a slot's weight field holds for each of `weights` (nonzero weights of the layer):
        the weight itself, or its index in the codebook."""
        return np.searchsorted(self.codebook, weights) if self.indexed else weights


def encoding_of(numerics: LayerNumerics) -> Encoding:
    """Positions only when the layer's nonzeros share one value; an index into a codebook when they
    share few enough that the index is narrower than a weight; else the weights themselves."""
    values = np.unique(numerics.weights_q.data)  # no zeros: quantize drops the weights that round to zero
    weight_bits = numerics.weight_format.bits
    if values.size == 1:
        return Encoding(0, int(values[0]))
    index_bits = max(1, int(values.size - 1).bit_length())
    if values.size and index_bits <= CODEBOOK_MAX_BITS and index_bits < weight_bits:
        return Encoding(index_bits, codebook=tuple(int(value) for value in values))
    return Encoding(weight_bits)
