"""C array initializers for generated weight headers, formatted by numpy in bulk.

A weight header of a large layer holds millions of numbers; formatting them one by one in Python
would dominate compile time. Each value becomes a fixed-width field in a byte table instead
(unsigned values in hexadecimal, signed ones in right-aligned decimal), and the table is written in
one piece. The text is a pure function of the values, so emitting twice gives identical files.
"""

from __future__ import annotations

import numpy as np

_UNSIGNED = ((0xFF, "uint8_t", np.uint8), (0xFFFF, "uint16_t", np.uint16), (0xFFFFFFFF, "uint32_t", np.uint32))


def unsigned_type(largest: int) -> tuple[str, type]:
    """The narrowest C unsigned type (and its numpy twin) holding values up to `largest`."""
    for limit, c_type, np_type in _UNSIGNED:
        if largest <= limit:
            return c_type, np_type
    return "uint64_t", np.uint64


def signed_type(magnitude: int) -> str:
    """int32_t when every value fits in it, else int64_t."""
    return "int32_t" if magnitude <= 0x7FFFFFFF else "int64_t"


def hex_initializer(values: np.ndarray, per_line: int = 8) -> str:
    """Comma-separated 0x... literals of unsigned `values`, as wide as their dtype."""
    flat = np.ascontiguousarray(values).ravel()
    size = flat.dtype.itemsize
    big_endian = flat.astype(flat.dtype.newbyteorder(">")).view(np.uint8).reshape(flat.size, size)
    nibbles = np.empty((flat.size, 2 * size), dtype=np.uint8)
    nibbles[:, 0::2] = big_endian >> 4
    nibbles[:, 1::2] = big_endian & 15
    table = np.empty((flat.size, 2 * size + 3), dtype=np.uint8)
    table[:, 0], table[:, 1], table[:, -1] = ord("0"), ord("x"), ord(",")
    table[:, 2:-1] = nibbles + ord("0") + (nibbles > 9) * np.uint8(ord("a") - ord("0") - 10)
    return _lines(table, per_line)


def decimal_initializer(values: np.ndarray, per_line: int = 16) -> str:
    """Comma-separated, right-aligned decimal literals of signed integer `values`."""
    flat = np.ascontiguousarray(values).ravel().astype(np.int64)
    negative = flat < 0
    magnitude = np.abs(flat).astype(np.uint64)
    digits = np.ones(flat.size, dtype=np.int64)
    for power in range(1, 20):
        digits += magnitude >= np.uint64(10**power)
    most = int(digits.max(initial=1))
    width = int((digits + negative).max(initial=1))
    table = np.full((flat.size, width + 1), ord(" "), dtype=np.uint8)
    table[:, -1] = ord(",")
    rest = magnitude.copy()
    for k in range(most):
        shown = k < digits
        table[shown, width - 1 - k] = (rest[shown] % np.uint64(10)).astype(np.uint8) + ord("0")
        rest //= np.uint64(10)
    rows = np.flatnonzero(negative)
    table[rows, width - 1 - digits[rows]] = ord("-")
    return _lines(table, per_line)


def _lines(table: np.ndarray, per_line: int) -> str:
    """The fields of `table` (one row per value), `per_line` to a line."""
    count, width = table.shape
    full = count // per_line
    parts = []
    if full:
        block = table[: full * per_line].reshape(full, per_line * width)
        parts.append(np.concatenate([block, np.full((full, 1), ord("\n"), np.uint8)], axis=1).tobytes())
    if count % per_line:
        parts.append(table[full * per_line :].tobytes() + b"\n")
    return b"".join(parts).decode("ascii")
