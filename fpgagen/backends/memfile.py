"""Fast writers for wide memory words: $readmemh files (Verilog) and packed integers (C++).

Millions of entries must be written in seconds, so words are assembled as bit matrices with numpy,
never one Python integer at a time.
"""

from __future__ import annotations

import numpy as np

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def field_bits(values: np.ndarray, width: int) -> np.ndarray:
    """(rows, width) 0/1 matrix, least significant bit first; negatives in two's complement."""
    unsigned = np.asarray(values).astype(np.int64).view(np.uint64)
    shifts = np.arange(width, dtype=np.uint64)
    return ((unsigned[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)


def pack_fields(fields: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Concatenate fields into words, the first field in the least significant bits.

    `fields` is a list of (values (rows,), width); returns the (rows, total_bits) bit matrix.
    """
    return np.concatenate([field_bits(values, width) for values, width in fields], axis=1)


def hex_lines(bits: np.ndarray) -> bytes:
    """One hexadecimal line per row of a (rows, width) bit matrix: the $readmemh format."""
    rows, width = bits.shape
    digits = max(1, -(-width // 4))
    padded = np.zeros((rows, digits * 4), dtype=np.uint8)
    padded[:, :width] = bits
    nibbles = padded.reshape(rows, digits, 4) @ np.array([1, 2, 4, 8], dtype=np.uint8)
    text = np.empty((rows, digits + 1), dtype=np.uint8)
    text[:, :digits] = _HEX[nibbles[:, ::-1]]
    text[:, digits] = ord("\n")
    return text.tobytes()
