"""How a dataflow layer's nonzero weights reach its PEs (docs/engine.md, "Weight encodings").

A slot of a weight beat names the PE's local address and, in the general encoding, the weight;
the PE multiplies. When every nonzero of a layer has one value c (every Graph Challenge weight is
1/16), the slots carry positions only: the PE adds the bare activations, and the drain multiplies
the sum by c once per output before the bias, c * sum(x) being exactly sum(c * x) in integers.
That removes the weight bits from every slot, entry and FIFO, narrows the accumulators by
log2|c| bits, and, when c is a power of two, turns the multiplier into wiring: no DSP at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import LayerNumerics


@dataclass(frozen=True)
class Encoding:
    weight_bits: int  # the weight field of a slot and of an entry; 0: positions only
    scale: int = 1  # what the drain multiplies a sum by: the shared weight, or 1

    @property
    def positions_only(self) -> bool:
        return self.weight_bits == 0

    @property
    def scale_shift(self) -> int | None:
        """log2 |scale| when |scale| is a power of two: the drain's multiply is a shift."""
        magnitude = abs(self.scale)
        return magnitude.bit_length() - 1 if magnitude & (magnitude - 1) == 0 else None

    @property
    def multiplies(self) -> bool:
        """Whether each PE needs a multiplier (a DSP): in the PE for the general encoding, in the
        drain for a shared weight that is not a power of two."""
        return not self.positions_only or self.scale_shift is None

    @property
    def sum_narrowing(self) -> int:
        """Bits the accumulators need fewer than the layer's exact bound: sums of bare activations
        are |scale| >= 2^narrowing times smaller than the sums of products."""
        return abs(self.scale).bit_length() - 1


def encoding_of(numerics: LayerNumerics) -> Encoding:
    """Positions only when the layer's nonzeros share one value, else the weights themselves."""
    values = numerics.weights_q.data
    if values.size and np.all(values == values[0]):
        return Encoding(0, int(values[0]))
    return Encoding(numerics.weight_format.bits)
