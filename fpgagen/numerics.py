"""The one definition of fpgagen's fixed-point arithmetic.

Everything that computes in fixed point (the golden model, the HLS library, the Verilog blocks)
implements exactly the integer operations defined here; docs/numerics.md states them in prose.
All scales are powers of two, so the hardware rescales with shifts and never multiplies by a scale.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import FpgagenError


@dataclass(frozen=True)
class FixedFormat:
    """A signed two's-complement integer q of `bits` bits that stands for q * 2**-frac."""

    bits: int
    frac: int

    @property
    def qmin(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    def quantize(self, x: np.ndarray | float) -> np.ndarray:
        """Round half up (towards +inf) to the grid, then saturate: the only float-to-fixed rule."""
        scaled = self._rounded(x)
        # Compared as floats, not clipped as floats: 2^63 - 1 is 2^63 as a float, which wraps to
        # -2^63 as an int64. Every float below 2^(bits-1) that is a whole number is exact in int64.
        top = math.ldexp(1.0, self.bits - 1)
        inside = np.where((scaled >= -top) & (scaled < top), scaled, 0.0).astype(np.int64)
        return np.where(scaled >= top, self.qmax, np.where(scaled < -top, self.qmin, inside))

    def fits(self, x: np.ndarray | float) -> np.ndarray:
        """Whether each value quantizes without saturating."""
        scaled = self._rounded(x)
        return (scaled >= self.qmin) & (scaled < math.ldexp(1.0, self.bits - 1))

    def _rounded(self, x: np.ndarray | float) -> np.ndarray:
        """x on the grid, rounded half up, as whole floats (not yet saturated)."""
        return np.floor(np.asarray(x, dtype=np.float64) * math.ldexp(1.0, self.frac) + 0.5)

    def to_float(self, q: np.ndarray | int) -> np.ndarray:
        return np.asarray(q, dtype=np.float64) * math.ldexp(1.0, -self.frac)

    def __str__(self) -> str:
        return f"Q{self.bits}.{self.frac}"

    @classmethod
    def parse(cls, text: str) -> FixedFormat:
        """The format `str` wrote, such as Q16.9 (or Q8.-3)."""
        match = _FORMAT_RE.match(str(text))
        if not match:
            raise ValueError(f"{text!r} is not a fixed-point format such as Q16.9")
        return cls(int(match[1]), int(match[2]))


_FORMAT_RE = re.compile(r"^Q(\d+)\.(-?\d+)$")


@dataclass(frozen=True)
class Precision:
    """Widths chosen by the user: `w8a16` means 8-bit weights and 16-bit activations."""

    weight_bits: int
    act_bits: int

    @property
    def name(self) -> str:
        return f"w{self.weight_bits}a{self.act_bits}"


FLOAT = "float"
DEFAULT_PRECISION = "w8a16"
_PRECISION_RE = re.compile(r"^w(\d+)a(\d+)$")


def parse_precision(text: str, hardware: bool = False) -> Precision | None:
    """Parse `wXaY`, or `float` (None: the float reference, no quantization) unless the precision
    is for `hardware`, which has none."""
    if text == FLOAT and hardware:
        raise FpgagenError(f"precision {text} has no hardware; choose a fixed-point precision such as w8a16")
    if text == FLOAT:
        return None
    match = _PRECISION_RE.match(text)
    if not match:
        choices = "wXaY (such as w8a16)" if hardware else "wXaY (such as w8a16) or float"
        raise FpgagenError(f"precision {text!r} is not understood; use {choices}")
    weight_bits, act_bits = int(match[1]), int(match[2])
    if not 2 <= weight_bits <= 16:
        raise FpgagenError(f"precision {text!r}: weight width {weight_bits} is outside 2..16 bits")
    if not 4 <= act_bits <= 16:
        raise FpgagenError(f"precision {text!r}: activation width {act_bits} is outside 4..16 bits")
    return Precision(weight_bits, act_bits)


def frac_bits_for(max_abs: float, bits: int, max_frac: int = 40) -> int:
    """The most fractional bits with which `max_abs` still quantizes inside a `bits`-bit format.

    The result can be negative (a coarse grid) for large values; `max_frac` bounds it for values
    that are zero or tiny, where any grid would do.
    """
    qmax = (1 << (bits - 1)) - 1
    if max_abs <= 0.0 or not math.isfinite(max_abs):
        return max_frac if max_abs <= 0.0 else -max_frac
    frac = min(max_frac, bits - 1 - math.frexp(max_abs)[1])
    # frexp gives max_abs < 2**e, so frac is at most one too large after rounding half up.
    while math.floor(max_abs * math.ldexp(1.0, frac) + 0.5) > qmax:
        frac -= 1
    return frac


def requantize(acc: np.ndarray, shift: int, lo_q: int, hi_q: int, *, inplace: bool = False) -> np.ndarray:
    """Accumulator (bias included) to the next activation.

    Arithmetic right shift by `shift` bits rounding half up, (acc + 2**(shift-1)) >> shift, then a
    clamp to [lo_q, hi_q]. The clamp bounds lie inside the activation format, so the clamp is also
    the saturation. `inplace` reuses `acc` (the golden model's hot loop); the result is the same.
    """
    y = acc if inplace else np.array(acc, copy=True)
    if shift > 0:
        y += 1 << (shift - 1)
        y >>= shift
    np.clip(y, lo_q, hi_q, out=y)
    return y


def bound_bits(bound: int) -> int:
    """Width of a signed register that holds every value in [-bound, bound]."""
    return int(bound).bit_length() + 1
