"""What the engine costs on a board: its memories by kind, its logic by what sizes it, and the
roofline's least PE (docs/cost-model.md, "Resources" and "Memories")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cache

from ..engine.encoding import Encoding
from ..engine.geometry import DRAIN_STEPS, VALUE_BITS, LogicShape, ceil_div, sum_bits
from ..engine.memory import BRAM as BLOCK_RAM
from ..engine.memory import (
    CONSTANT,
    LUTRAM,
    RAMB18_SHAPES,
    RAMB36_SHAPES,
    REGISTERS,
    URAM_DEPTH,
    URAM_WIDTH,
    Memory,
)
from ..engine.memory import URAM as ULTRA_RAM
from .boards import Board

# Logic (docs/cost-model.md, "Resources"), as the engine description sizes it (LogicShape): per PE,
# all P of them, linear in the accumulator width (multiply, accumulate with forwarding, requantize,
# the bank's read-modify-write) and in the entry width (the entry's pipeline registers in the PE,
# its choice among the units' FIFOs, the FIFOs' output registers); per fed PE, linear in its slot
# of a weight beat (its issue path: the slot and entry registers, which synthesis removes for a PE
# that holds no output); per issue unit (row lookup, beat counter, the merger's port, a
# serializer); per stage (control, drain registers, counters; the input reader counts as one).
# Non-negative least-squares fits, relative to each design's total, to Yosys synth_xilinx over the
# thirteen designs of bench/bench_resources.py (its run of 2026-11-28, the second: the first with
# the configuration the scheduler gives most layers of GC 1024 x 120, GC 1024 x 3 at P = 40, K = 2,
# which the constants before, with their end-word correction, put at 0.88 of Yosys's LUTs, and the
# first since end words carry their flag alone), rounded. In sample, estimate / Yosys is 0.90-1.09
# in LUTs (0.95 on the P = 40, K = 2 design, 1.01 at P = 64, K = 4) and 0.94-1.06 in FFs.
PE_LUT_PER_ACC_BIT, PE_FF_PER_ACC_BIT = 4.16, 12.08
PE_LUT_PER_ENTRY_BIT, PE_FF_PER_ENTRY_BIT = 0.0, 0.0  # the fit puts them into PE_FIFO
FED_PE_LUT_PER_SLOT_BIT, FED_PE_FF_PER_SLOT_BIT = 12.14, 12.97
PE_FIFO_LUT, PE_FIFO_FF = 43.09, 61.54  # one entry FIFO's control, output register and its input to the PE's choice
UNIT_LUT, UNIT_FF = 132, 157
STAGE_LUT, STAGE_FF = 0, 823  # the fit puts a stage's LUTs into its units
# Each memory channel of a sequential stage beyond its first: an AXI reader, and the channel's
# own weight, request and load addresses (64-bit adders and registers). Not fitted: the difference
# Yosys measures between the same stage on one and on two channels (bench_resources.py, "channel").
CHANNEL_LUT, CHANNEL_FF = 379, 510
# A PE whose banks are stacked in one memory has no multiplexers between its two banks' reads and no
# per-bank sum or read registers. Not fitted: the difference Yosys measures between one PE of 24-bit
# sums with two banks and with both stacked (bench_resources.py, "stacked_pe": 42 LUTs, 68 FFs on
# the RTL of 2026-11-28; 24 LUTs when the term was first measured).
STACKED_LUT_PER_ACC_BIT, STACKED_FF_PER_ACC_BIT = 1.75, 2.8
# A PE with a one-cycle read-modify-write (banks in LUT RAM, no multiplier) has no forwarding and
# no pipeline of sums, and one adder for both banks (docs/engine.md, "Processing elements"). Not
# fitted: the difference Yosys measured on Graph Challenge 1024 x 3 all-dataflow at P = 16
# (bench_resources.py's gc_dataflow_16_w8a16: 48 PEs of 22-bit sums) with pipelined PEs, 25,968
# LUTs and 31,203 FFs, and with one-cycle PEs: 24,097 and 23,859 with an adder a bank, 21,852 and
# 23,112 with one adder and a valid bit a word.
SINGLE_CYCLE_LUT_PER_ACC_BIT, SINGLE_CYCLE_FF_PER_ACC_BIT = 3.9, 7.7
# A PE of K > 1 units takes the oldest vector's entries first (fg_pe.v): two flags a FIFO, the
# oldest vector's bank, and the choice's wider sums of products. Not fitted: the difference Yosys
# measures against the first FIFO first, per PE of K > 1, on Graph Challenge 1024 x 3 all dataflow
# at P = 16, 40 and 64 and the test MLP positions_only: 7.9 to 13.7 LUTs and 4.3 to 5.0 FFs (one
# PE alone: 8 and 3 at K = 2, 7 and 5 at K = 4; none at K = 1).
OLDEST_FIRST_LUT_PER_PE, OLDEST_FIRST_FF_PER_PE = 10.0, 5.0
# A private PE (docs/engine.md, "Private PEs") has no entry FIFO, but the fit put a PE's entry
# logic (its pipeline registers, the bank it derives) into the FIFO's term (PE_LUT_PER_ENTRY_BIT is
# 0): what a private PE keeps of it is measured, not fitted, as the difference between Yosys and
# the model without it on Graph Challenge 1024 x 3 at P = 32, K = 2, private (192 PEs: 32,134 LUTs
# and 29,902 FFs, the model 25,532 and 39,790); the FFs of a one-cycle private PE are fewer than the
# fit's per-PE terms say. Held out: at P = 16, K = 4 the model says 1.08 of Yosys's 39,292 LUTs (1.19
# of its 28,939 FFs), at P = 32, K = 4 1.06 of 61,667 (1.19 of 49,449).
PRIVATE_PE_LUT, PRIVATE_PE_FF = 34.4, -51.5
# A private stage's drain adds its units' sums (docs/engine.md, "Private PEs"): K - 1 adders a lane,
# each a LUT a sum bit with its carry chain, and the register after it. Counted, not fitted.
ADDER_LUT_PER_ACC_BIT, ADDER_FF_PER_ACC_BIT = 1.0, 1.0
# A drain of D lanes instead of all of them (docs/engine.md, "Drain lanes") keeps D requantizers,
# and a private stage D adders a unit; its serializers take D / K values a word. Each lane it does
# not drain saves its requantizer and its share of the word and serializer logic (the fitted
# per-PE terms hold one of each a lane): measured, not fitted, as the difference Yosys sees on
# Graph Challenge 1024 x 3 at P = 32, K = 2, private, between all 32 lanes and 8 on the first two
# stages (32,167 -> 29,573 LUTs, 29,919 -> 23,811 FFs, both at 6 LUT levels), less the adders and
# multiplexers, counted apart, and the word FIFOs' memory, priced apart. The multiplexer takes the
# STEPS groups' sums a lane, a LUT6 a bit up to 4:1, two and a MUXF7 for 8:1 (fg_select.v).
DRAIN_LANE_LUT, DRAIN_LANE_FF = 36.7, 119.9
# The roofline's least PE (least_pe_luts), measured, not fitted: Yosys on fg_pe alone as a private,
# one-address PE (the cheapest the engine builds), each width synthesized in a Yosys run of its own
# (bench/bench_resources.py, "least_pe"; tests/test_rtl_synthesis.py). Its logic, its banks counted
# apart: with a one-cycle read-modify-write (no multiplier) 2 LUTs a sum bit and 20 from 20 to 48
# bits, 1 LUT more at 8 to 16; pipelined (a layer that multiplies) 3 and 22 from 8 to 48 bits, the
# same with 8-bit weights or a shared one. The fitted per-PE terms, extrapolated to one address,
# said 62.7 LUTs all in for a Graph Challenge PE of 22-bit sums, where Yosys counts 96 without any
# share of a drain lane, and 268 to 296 for the FFN's, where it counts about 140: no design the fit
# was made on has PEs of one address. A second synthesis of the same one-cycle PE in one Yosys run
# maps it to 86 LUTs of logic instead of 64; the bound takes the fewer.
LEAST_PE_LUT, LEAST_PE_LUT_PER_ACC_BIT = 20, 2.0
LEAST_PIPELINED_PE_LUT, LEAST_PIPELINED_PE_LUT_PER_ACC_BIT = 22, 3.0
DRAIN_MUX_LUTS = {1: 0, 2: 1, 4: 1, 8: 2}
LOGIC_TERMS = ("PE x acc bit", "PE x entry bit", "fed PE x slot bit", "PE x unit", "issue unit", "stage")
LUT_PER_TERM = (PE_LUT_PER_ACC_BIT, PE_LUT_PER_ENTRY_BIT, FED_PE_LUT_PER_SLOT_BIT, PE_FIFO_LUT, UNIT_LUT, STAGE_LUT)
FF_PER_TERM = (PE_FF_PER_ACC_BIT, PE_FF_PER_ENTRY_BIT, FED_PE_FF_PER_SLOT_BIT, PE_FIFO_FF, UNIT_FF, STAGE_FF)

# How memories map to blocks (docs/cost-model.md, "Memories"), as synthesis maps them.
LUTRAM_DEPTH = 64  # bits per LUT used as distributed RAM
BRAM36_BITS = 36 * 1024
URAM_BITS = URAM_DEPTH * URAM_WIDTH

RESOURCE_KINDS = ("dsp", "bram", "uram", "lut", "ff")


@dataclass(frozen=True)
class Resources:
    dsp: int = 0
    bram: int = 0  # 36 Kb block RAMs
    uram: int = 0
    lut: int = 0  # logic and LUTRAM
    ff: int = 0

    # Spelled out: the scheduler adds up tens of thousands of these.
    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.dsp + other.dsp,
            self.bram + other.bram,
            self.uram + other.uram,
            self.lut + other.lut,
            self.ff + other.ff,
        )

    def __sub__(self, other: Resources) -> Resources:
        return self + other * -1

    def __mul__(self, count: int) -> Resources:
        return Resources(self.dsp * count, self.bram * count, self.uram * count, self.lut * count, self.ff * count)

    def as_tuple(self) -> tuple[int, ...]:
        return (self.dsp, self.bram, self.uram, self.lut, self.ff)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def fits(self, budget: Resources) -> bool:
        return all(used <= have for used, have in zip(self.as_tuple(), budget.as_tuple()))


def board_budget(board: Board) -> Resources:
    """What a design may use: the device less the platform's shell."""
    return Resources(
        board.dsp - board.shell_dsp,
        board.bram36 - board.shell_bram36,
        board.uram - board.shell_uram,
        board.lut - board.shell_lut,
        board.ff - board.shell_ff,
    )


def lutram_luts(depth: int, width: int) -> int:
    """LUTs of a simple dual-port LUTRAM: 8 LUTs hold 32 x 14 bits (RAM32M16) or 64 x 7 bits
    (RAM64M8), the primitives synthesis picks for the engine's memories."""
    if depth <= 32:
        return 8 * math.ceil(width / 14)
    return 8 * math.ceil(width / 7) * math.ceil(depth / 64)


def bram18_halves(depth: int, width: int, ports: int = 1) -> int:
    """RAMB18s (halves of a BRAM36) of one memory: the fewest over both block sizes' shapes. Read
    through two ports, a block is true dual-port, which halves its widest shape (72 -> 36 bits)."""
    shapes36 = RAMB36_SHAPES if ports == 1 else RAMB36_SHAPES[:-1]
    shapes18 = RAMB18_SHAPES if ports == 1 else RAMB18_SHAPES[:-1]
    whole = min(math.ceil(width / w) * math.ceil(depth / d) for d, w in shapes36)
    halves = min(math.ceil(width / w) * math.ceil(depth / d) for d, w in shapes18)
    return min(2 * whole, halves)


@cache
def price(memory: Memory) -> Resources:
    """What `memory.count` alike memories cost, by kind; two that each fit a RAMB18 share a BRAM36.
    A distributed memory read through two ports is two copies; a block RAM has the ports."""
    if memory.depth <= 0 or memory.width <= 0 or memory.kind == CONSTANT:
        return Resources()  # a constant is folded into the logic that reads it
    if memory.kind == REGISTERS:
        return Resources(ff=memory.bits)
    if memory.kind == LUTRAM:
        return Resources(lut=lutram_luts(memory.depth, memory.width) * memory.count * memory.ports)
    if memory.kind == BLOCK_RAM:
        halves = bram18_halves(memory.depth, memory.width, memory.ports)
        return Resources(bram=math.ceil(memory.count * halves / 2))
    if memory.kind == ULTRA_RAM:  # 4096 x 72 blocks, cascaded in depth and side by side in width
        blocks = math.ceil(memory.width / URAM_WIDTH) * math.ceil(memory.depth / URAM_DEPTH)
        return Resources(uram=memory.count * blocks)
    raise ValueError(f"no price for memories of kind {memory.kind!r}")


def total(memories: list[Memory]) -> Resources:
    return sum((price(memory) for memory in memories), Resources())


def logic_counts(logic: LogicShape) -> tuple[int, ...]:
    """How many of each of LOGIC_TERMS a stage has."""
    return (
        logic.pes * logic.acc_bits,
        logic.pes * logic.entry_bits,
        logic.fed_pes * logic.slot_bits,
        0 if logic.private else logic.pes * logic.units,  # an entry FIFO per issue unit at every shared PE
        logic.units,
        1,
    )


@cache
def engine_logic(logic: LogicShape) -> Resources:
    """P multiply-accumulate PEs (one DSP each that holds an output, unless the encoding needs no
    multiplier: synthesis keeps every PE but the multipliers of those that hold none) taking entries from K
    issue units, the issue path to the fed PEs, and the stage's control."""
    counts = logic_counts(logic)
    lookups = logic.pes * logic.lookup_luts  # counted, not fitted: one LUT6 per codebook bit
    stripes = logic.channels - 1  # measured, not fitted
    stacked = logic.pes * logic.acc_bits if logic.stacked else 0  # measured, not fitted
    single = logic.pes * logic.acc_bits if logic.single_cycle else 0  # measured, not fitted
    oldest_first = logic.pes if logic.units > 1 and not logic.private else 0  # measured, not fitted
    copies = logic.pes // logic.lanes  # the units of a private stage, whose sums the drain adds
    added = (copies - 1) * logic.drained * logic.acc_bits  # a private drain's adders: counted, not fitted
    mux_bits = copies * logic.drained * logic.acc_bits if logic.drain_steps > 1 else 0  # counted, registered
    undrained = logic.lanes - logic.drained  # measured, not fitted
    private = logic.pes if logic.private else 0  # measured, not fitted
    return Resources(
        dsp=logic.multipliers,
        lut=round(
            sum(count * constant for count, constant in zip(counts, LUT_PER_TERM))
            - stacked * STACKED_LUT_PER_ACC_BIT
            - single * SINGLE_CYCLE_LUT_PER_ACC_BIT
            + oldest_first * OLDEST_FIRST_LUT_PER_PE
            + added * ADDER_LUT_PER_ACC_BIT
            + private * PRIVATE_PE_LUT
            - undrained * DRAIN_LANE_LUT
        )
        + mux_bits * DRAIN_MUX_LUTS[logic.drain_steps]
        + lookups
        + stripes * CHANNEL_LUT
        + rotator_luts(logic),
        ff=round(
            sum(count * constant for count, constant in zip(counts, FF_PER_TERM))
            - stacked * STACKED_FF_PER_ACC_BIT
            - single * SINGLE_CYCLE_FF_PER_ACC_BIT
            + oldest_first * OLDEST_FIRST_FF_PER_PE
            + added * ADDER_FF_PER_ACC_BIT
            + private * PRIVATE_PE_FF
            - undrained * DRAIN_LANE_FF
            + mux_bits
        )
        + stripes * CHANNEL_FF
        + rotator_ffs(logic),
    )


def rotator_luts(logic: LogicShape) -> int:
    """The dense beats' rotator (fg_dense.v), counted, not fitted: a LUT a bit for every two of the
    levels its rotations use (a 4:1 multiplexer), and its table of rotations, a LUT6 a bit of them
    per 64 addresses."""
    levels = logic.rotated_levels
    return logic.rotated_lanes * VALUE_BITS * ceil_div(levels, 2) + levels * ceil_div(logic.rotated_addresses, 64)


def rotator_ffs(logic: LogicShape) -> int:
    """The rotator's register in front of its levels: the beat's values, its rotation's used bits,
    valid and last."""
    if not logic.rotated_lanes:
        return 0
    return logic.rotated_lanes * VALUE_BITS + logic.rotated_levels + 2


READER_LOGIC = Resources(lut=STAGE_LUT, ff=STAGE_FF)


def least_pe_luts(acc_bits: int, encoding: Encoding) -> float:
    """The LUTs of the least PE the engine can build for a layer (the roofline's unit of MACs): the
    PE alone (least_pe_alone_luts) and its share of a drain lane where the fewest lanes drain the
    most PEs (DRAIN_STEPS). No share of any unit or stage, no issue path, no codebook's table: the
    bound stays an upper bound."""
    return least_pe_alone_luts(acc_bits, encoding) + DRAIN_LANE_LUT / DRAIN_STEPS[-1]


def least_pe_alone_luts(acc_bits: int, encoding: Encoding) -> float:
    """The least PE alone as Yosys counts it, not as the fitted terms extrapolate it: a private PE
    (no entry FIFO) of one local address, its read-modify-write in one cycle where the layer has no
    multiplier, else pipelined, and its two one-word banks of LUT RAM (a RAM32M16, 8 LUTs, holds 16
    bits of a bank whose one address is its write's and its read's; a one-cycle PE's words carry a
    valid bit)."""
    bits = sum_bits(acc_bits, encoding)
    if encoding.multiplies:
        logic = LEAST_PIPELINED_PE_LUT + LEAST_PIPELINED_PE_LUT_PER_ACC_BIT * bits
        words = bits
    else:
        logic = LEAST_PE_LUT + LEAST_PE_LUT_PER_ACC_BIT * bits
        words = bits + 1  # {valid, value}
    banks = 2 * 8 * ceil_div(words, 16)
    return logic + banks
