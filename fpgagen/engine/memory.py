"""Memories of the engine: what each holds, its depth and width, and the kind of block it is.

The kind is decided here, once, by size: a memory at most `LUTRAM_MAX_DEPTH` words deep or of at
most `LUTRAM_MAX_BITS` bits goes to distributed RAM (LUTRAM), a larger one to block RAM, as
synthesis maps them (calibrated against Yosys, docs/cost-model.md). A few tiny FIFOs are plain
registers. The cost model prices memories by kind; the HLS back end binds them to it.
"""

from __future__ import annotations

from dataclasses import dataclass

LUTRAM, BRAM, REGISTERS = "lutram", "bram", "registers"
KINDS = (LUTRAM, BRAM, REGISTERS)

LUTRAM_MAX_DEPTH = 64  # RAM64M8: the deepest distributed RAM primitive without cascading
LUTRAM_MAX_BITS = 2048  # below one RAMB18 (18 Kb) by far: block RAM would waste the block


def memory_kind(depth: int, width: int) -> str:
    """LUTRAM for shallow or small memories, block RAM otherwise."""
    return LUTRAM if depth <= LUTRAM_MAX_DEPTH or depth * width <= LUTRAM_MAX_BITS else BRAM


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

    @property
    def bits(self) -> int:
        return self.depth * self.width * self.count
