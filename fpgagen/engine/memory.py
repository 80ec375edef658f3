"""Memories of the engine: what each holds, its depth and width, and the kind of block it is.

The kind is decided here, once, by size: a memory at most `LUTRAM_MAX_DEPTH` words deep or of at
most `LUTRAM_MAX_BITS` bits goes to distributed RAM (LUTRAM), a larger one to block RAM, as
synthesis maps them (calibrated against Yosys, docs/cost-model.md). A few tiny FIFOs are plain
registers. A memory the load phase fills (docs/engine.md, "Load phase") may be UltraRAM, which
the bitstream cannot initialize: when the board has it and the memory is at least one UltraRAM's
worth of bits. A read-only table of one word (a dataflow layer's biases when they are all one
value) is a constant: synthesis folds it into the logic that reads it and keeps no memory. The cost
model prices memories by kind; the HLS back end binds them to it.
"""

from __future__ import annotations

from dataclasses import dataclass

LUTRAM, BRAM, URAM, REGISTERS, CONSTANT = "lutram", "bram", "uram", "registers", "constant"
KINDS = (LUTRAM, BRAM, URAM, REGISTERS, CONSTANT)

LUTRAM_MAX_DEPTH = 64  # RAM64M8: the deepest distributed RAM primitive without cascading
LUTRAM_MAX_BITS = 2048  # below one RAMB18 (18 Kb) by far: block RAM would waste the block
URAM_DEPTH, URAM_WIDTH = 4096, 72  # one URAM288
# The shapes (depth, width) of a RAMB18 in simple dual-port mode, and of a RAMB36: synthesis picks
# one per memory, and a memory takes as many blocks as its depth and width need of it.
RAMB18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
RAMB36_SHAPES = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72))


def memory_kind(depth: int, width: int, uram: bool = False) -> str:
    """LUTRAM for shallow or small memories, block RAM otherwise; UltraRAM for a memory of at
    least one UltraRAM's bits that needs no initial contents, when the board has UltraRAM (`uram`)."""
    if depth <= LUTRAM_MAX_DEPTH or depth * width <= LUTRAM_MAX_BITS:
        return LUTRAM
    return URAM if uram and depth * width >= URAM_DEPTH * URAM_WIDTH else BRAM


def fits_ramb18(depth: int, width: int) -> bool:
    """Whether one RAMB18 holds a memory of `depth` words of `width` bits."""
    return any(depth <= d and width <= w for d, w in RAMB18_SHAPES)


@dataclass(frozen=True)
class Memory:
    """`count` alike memories of `depth` words of `width` bits, each holding `role` and read
    through `ports` ports (two: a block RAM's two ports, two units reading one copy)."""

    role: str
    depth: int
    width: int
    kind: str
    count: int = 1
    ports: int = 1

    @classmethod
    def sized(cls, role: str, depth: int, width: int, count: int = 1, ports: int = 1) -> Memory:
        """A memory whose kind follows from its size (`memory_kind`)."""
        return cls(role, depth, width, memory_kind(depth, width), count, ports)

    @classmethod
    def constant(cls, role: str, width: int) -> Memory:
        """A read-only table of one word: constants, no memory after synthesis."""
        return cls(role, 1, width, CONSTANT)

    @classmethod
    def written(cls, role: str, depth: int, width: int, uram: bool, count: int = 1) -> Memory:
        """A memory written before it is read, which the bitstream need not initialize (the
        tables the load phase fills, a FIFO): UltraRAM where the board has it and it is large."""
        return cls(role, depth, width, memory_kind(depth, width, uram), count)

    @property
    def bits(self) -> int:
        return self.depth * self.width * self.count
