"""The cost model: cycles and resources of the engine in docs/engine.md, per layer, stage and design.

Formulas only; the search over schedules is in scheduler.py. docs/cost-model.md states every
formula used here, with the constants and where they come from.

Cycles are per input vector: an input activation costs its row's work only when it is nonzero
(the `Activity`). A layer's placement on P PEs is the one the relabelling pass will give it
(fpgagen.engine.relabel), so its cycles depend on its own weights, P and K only, and every stage
the scheduler can choose has a fixed interval, latency and resource use: see `StageCost`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache

import numpy as np

from ..engine.encoding import Encoding, encoding_of
from ..engine.geometry import (
    DRAIN_STEPS,
    MAX_BURSTS,
    MEMORY_LATENCY,
    OFFCHIP_SLOT_WIDTHS,
    STRIPES,
    VALUE_BITS,
    DenseOutput,
    LayerShape,
    LogicShape,
    Output,
    SequentialShape,
    accumulator_bits,
    bits_for,
    ceil_div,
    dataflow_memories,
    drain_lane_choices,
    in_lanes,
    load_port_bits,
    loadable,
    offchip_slot,
    reader_memories,
    sequential_memories,
    stripable,
    sum_bits,
)
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
from ..engine.plan import layer_shape, reader_channel, stage_is_quiet, stage_output, zero_without_input
from ..engine.relabel import rotation_levels
from ..errors import FpgagenError
from ..ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, URAM, Layer, Model, Stage
from .activity import Activity
from .boards import Board
from .work import Placement, issue_cycles, pe_cycles, place, serializer_cycles

# Pipeline depths of the RTL (docs/engine.md, "Timing"), measured in RTL simulation by
# bench/bench_rtl.py (bench/results/rtl.json). A dataflow vector's compute ends L_COMPUTE cycles
# after its last beat is decided (ROM, entry register, PE FIFO, multiply-accumulate): with 12 the
# busy counters of Graph Challenge P=64 K=4 and the 90%-sparse MLP are matched within 2.5%;
# L_SINGLE_CYCLE fewer when the PEs' read-modify-write takes one cycle, writing at E2 instead of E4
# (fg_pe.v). A sequential pass is charged its layer's own kind of PE (its stage's banks take the
# most addresses of its layers: at most 2 cycles a pass apart). A drain
# counts ceil(N_out / P) addresses and then L_DRAIN cycles until its last dense beat is written
# (fg_stage.v: the decided address, its 6 registers to y, the beat register): the model's last
# layer measures ceil(N_out / P) + 7 at P=16 and 64; a sparse drain adds L_WORDS (the mask and
# count registers, then the end word): ceil(N_out / P) + 9 measured on every other layer. A
# sequential pass adds its descriptor load and the handing of the end entries to the PEs
# (L_PASS), and L_MEMORY for the AXI reader and the RAM (bench_rtl's sequential P=16 designs); a
# pass that reads nothing (an image that died: Graph Challenge's deeper layers have many) only
# looks its end item up: L_LOOKUP, measured on bench_rtl's GC passes of dead images.
L_COMPUTE = 12
L_SINGLE_CYCLE = 2
L_DRAIN = 7
L_WORDS = 2
L_PASS = 6
L_MEMORY = 8
L_READER = 4
L_LOOKUP = 6
# A sequential stage's drain starts this long after its serializer wrote the end item of the
# vector before (fg_seq_stage.v's `passing`): CostModel.chained_interval.
L_PASSING = 2
# A quiet vector's drain (docs/engine.md, "Quiet vectors"): the end words' two registers, no row read.
L_QUIET = 2
# An empty vector's turn at the drain (docs/engine.md, "Empty vectors"): the decision, its end
# words' two registers.
L_EMPTY = 3
# The groups' multiplexer before the requantizers when the drain takes fewer lanes than P (a
# register: one cycle more), and the cost model's choice of drain lanes: the fewest whose stage
# holds each vector, on average, at most this much longer than with all P (CostModel.drain_lanes).
L_DRAIN_MUX = 1
# the model's last layer's dense beats, when its outputs are rotated over its PEs: the rotator's
# register (fg_dense.v)
L_ROTATE = 1
# A vector's hand-off to the next stage, beyond what the stages' own cycles count: from the last
# item leaving the serializer (the reader's) to the stage's bank whole and its drain started, less
# the stage's compute latency. The channel's FIFO, the merger's fetch, decision and routing
# registers, the PEs' done flags through fg_all's two levels and the decision to drain: 15 cycles
# measured on every hand-off into a private stage of Graph Challenge 1024 x 8 (bench_rtl gc-auto
# and gc-slice, the stages' drains logged in Verilator), and counted at every hand-off: the
# reader's, and into sequential and shared stages (these take 28-49 in gc-dataflow-64, their PEs'
# FIFOs not yet empty). Steady state hides it (the next vector is under way); the first result
# waits for it at every stage (CostModel.first_result).
L_HAND_OFF = 15
DRAIN_LANE_SLACK = 0.005

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
# A private stage of K > 1 units keeps its PEs as busy as its rows fill their lanes (a row's beat
# goes to one unit's P PEs, whatever the others do), where shared PEs take the K units' entries
# through their FIFOs and stay busy when rows are short. The scheduler builds such a stage only
# where the rows, weighted by their activity, fill at least this share of the lanes' beats: the
# per-layer efficiency the engine is held to (issue 10; bench_rtl). Graph Challenge at P = 32 (one
# beat a row of 32 on 32 lanes, its last layer rotated: fpgagen.engine.relabel) fills them; P = 48
# or 64 (32 of the lanes) do not, nor unstructured layers at P >= 16.
PRIVATE_LANE_USE = 0.85
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
# passes of the activity's sample through the tandem line (CostModel.design_interval)
TANDEM_PASSES = 4
# Vectors a stage finishes ahead of the next through a deep channel (CostModel.design_interval):
# measured in Verilator as the tandem line that reproduces the RTL's interval, whatever the channel's
# depth. Graph Challenge 1024 x 8, its 32 images four times: at P = 32, K = 2 (the channels' vectors
# up to 513 items a sub-channel) 676.0 cycles a vector with 512, 1024 and 2048 items alike, modelled
# 682.2 (2 ahead), 639.0 (4 ahead), 721.7 (1 ahead); at P = 64, K = 4 (257 items), 512 items: 357.5,
# modelled 348.9 (2 ahead). What holds a stage is its drain's word FIFO, not the channel (docs/engine.md,
# "Deep channels"): with 128-word FIFOs instead of 32 the RTL ran as the line does 3 or more ahead.
# Since a drain writes no word without a nonzero value, only the vectors with a nonzero output at
# a stage count (CostModel.placed): GC 1024 x 8 at P = 64, K = 4 runs at 328.0 (modelled 328.5),
# and GC 1024 x 24 with its deep layers at P = 40, K = 2, half of its images dead there, at 597.7
# (594.4; 652.8 counting every vector), first result to last over four passes.
DEEP_CHANNEL_AHEAD = 2
# Vectors a stage finishes ahead of the next through a shallow channel: its two banks, one being
# drained into the channel as the next stage takes the items, so a stage finishes vector v only
# once the next has finished vector v - 2 (taken its items, all but the few the channel holds).
# Measured in Verilator, first result to last over four passes of 32 vectors, the same designs
# with shallow channels: Graph Challenge 1024 x 8 at P = 64, K = 4 328.0 (modelled 327.2), at
# P = 40, K = 2 612.7 (597.0), the 1024-wide 90%-sparse MLP of bench_rtl 865.7 (882.3); the rule
# before, every vector waiting for its slowest stage (right while a drain wrote a word for every
# address), said 397.2, 735.6 and 891.8.
SHALLOW_CHANNEL_AHEAD = 1
# Vectors a dataflow stage's issue units, PEs and drain finish ahead of its serializers, a unit of
# their own in the tandem line (CostModel.tandem_line): the drain of vector v - 1 waits for room in
# the word FIFOs, and vector v + 1 for the bank it holds. Measured in Verilator (bench_rtl, first
# result to last; docs/cost-model.md, "Designs"): Graph Challenge 1024 x 8, the scheduler's design,
# 163.4 cycles a vector, modelled 165.8 (175.2 with 0 ahead; 172.8 with the serializers inside the
# stage's unit, holding each vector for the longer of its compute and its outputs, where one
# vector's outputs leave while the next one computes); the other dataflow designs as before.
WORD_FIFO_AHEAD = 1
LOGIC_TERMS = ("PE x acc bit", "PE x entry bit", "fed PE x slot bit", "PE x unit", "issue unit", "stage")
LUT_PER_TERM = (PE_LUT_PER_ACC_BIT, PE_LUT_PER_ENTRY_BIT, FED_PE_LUT_PER_SLOT_BIT, PE_FIFO_LUT, UNIT_LUT, STAGE_LUT)
FF_PER_TERM = (PE_FF_PER_ACC_BIT, PE_FF_PER_ENTRY_BIT, FED_PE_FF_PER_SLOT_BIT, PE_FIFO_FF, UNIT_FF, STAGE_FF)

# How memories map to blocks (docs/cost-model.md, "Memories"), as synthesis maps them.
LUTRAM_DEPTH = 64  # bits per LUT used as distributed RAM
BRAM36_BITS = 36 * 1024
URAM_BITS = URAM_DEPTH * URAM_WIDTH

# What limits a layer's compute: its issue units and PEs, its memory port, or (a sequential layer)
# the serializer that hands it the outputs of the pass before.
COMPUTE_BOUND, MEMORY_BOUND, INPUT_BOUND = "compute", "memory", "input"
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


@dataclass(frozen=True)
class LayerCycles:
    """One layer's cycles per vector on a stage."""

    compute: float  # issue units and PEs (and a sequential layer's memory port), with their latency
    drain: float  # the drain's reading of the bank: what the RTL counts (waits for output room excluded)
    output: float  # the serializers' emitting of the nonzero outputs (0: dense beats, the model's output)
    bound: str  # COMPUTE_BOUND, MEMORY_BOUND or INPUT_BOUND: what limits compute
    # `compute` and `output` per vector of the activity (one expected vector unless measured)
    computes: np.ndarray = field(compare=False, repr=False)
    outputs: np.ndarray = field(compare=False, repr=False)
    # a sequential layer, per vector: its compute's cycles after its last input is looked up (the
    # read's latency, or the end item's lookup when it reads nothing)
    tails: np.ndarray = field(default_factory=lambda: np.zeros(1), compare=False, repr=False)
    # a dataflow layer's drain per vector, where quiet vectors drain their end words alone
    # (`drain` is their mean); None: `drain` for every vector
    drains: np.ndarray | None = field(default=None, compare=False, repr=False)
    # a dataflow layer's empty vectors (no activation: they take no bank), per measured vector,
    # and an empty vector's turn at the drain: its end words, or the model's last layer's beats
    empty: np.ndarray | None = field(default=None, compare=False, repr=False)
    empty_drain: float = L_EMPTY
    # per vector, the items the layer's busiest serializer emits, one a cycle: `outputs` without
    # the drain's latency before the first (0: dense beats, the model's output)
    items: np.ndarray = field(default_factory=lambda: np.zeros(1), compare=False, repr=False)

    @property
    def occupancy(self) -> float:
        """How long the drain holds its bank: until every output is written or serialized."""
        return max(self.drain, self.output)

    @property
    def overlapped(self) -> np.ndarray:
        """Per vector, how long a dataflow layer holds its stage: its compute and the drain of the
        vector before overlap (the two accumulator banks ping-pong: vector v + 1 takes the bank of
        v - 1 once its drain is done), so vector v's slot is the longest of its compute, the
        previous vector's drain and its own outputs (the serializers, behind word FIFOs that hold a
        vector's values, keep to their own vector). Pairing a vector's compute with its own drain missed
        the stall when a short vector follows a long drain: bench_rtl's GC 1024 x 8 at P = 64 with
        drain lanes, half its vectors quiet, modelled 322.0 cycles a vector, measured 355.3. An
        empty vector takes no bank, only its turn at the drain (L_EMPTY), and the vector after it
        pairs with the drain of the last vector that took one and the empty ones' since
        (`empty_drain` each: stage_holds)."""
        return stage_holds(self.computes, self.drain_each, self.empty, self.outputs, self.empty_drain)

    @property
    def computing(self) -> np.ndarray:
        """`overlapped` without the outputs: how long a dataflow stage's issue units, PEs and drain
        hold each vector, its serializers being a unit of their own behind the word FIFOs (the
        tandem line of CostModel.estimate)."""
        return stage_holds(self.computes, self.drain_each, self.empty, empty_drain=self.empty_drain)

    @property
    def drain_each(self) -> np.ndarray:
        """A dataflow layer's drain, per vector of `computes`."""
        return np.broadcast_to(self.drain if self.drains is None else self.drains, self.computes.shape)

    @property
    def held(self) -> np.ndarray:
        """Per vector, how long a sequential layer's pass holds its stage: it starts, computes and
        drains; the serializer's outputs overlap the next pass (`after`)."""
        return L_PASS + self.computes + self.drain

    def after(self, before: LayerCycles, looped_back: bool) -> LayerCycles:
        """This sequential layer's pass when it follows the pass of `before` in its stage
        (docs/cost-model.md, "Sequential passes"). It starts L_PASS cycles after `before`'s drain,
        while the serializer still emits `before`'s nonzero outputs. A layer that takes them from
        the loop-back FIFO computes until the last of them has been looked up and its row read
        (`tails` after it); a stage's first layer takes its inputs from the channel,
        and only its drain waits for the serializer."""
        waiting = self._waiting(before, looped_back)
        computes = np.maximum(self.computes, waiting)
        bound = INPUT_BOUND if float(waiting.mean()) > float(self.computes.mean()) else self.bound
        return replace(self, compute=float(computes.mean()), bound=bound, computes=computes)

    def held_after(self, before: LayerCycles, looped_back: bool) -> np.ndarray:
        """`after(before, looped_back).held` alone: the scheduler sums it over every run of layers
        (tens of thousands), where building the whole LayerCycles took most of its time."""
        return L_PASS + np.maximum(self.computes, self._waiting(before, looped_back)) + self.drain

    def _waiting(self, before: LayerCycles, looped_back: bool) -> np.ndarray:
        """Per vector, how long this pass waits for its inputs after it starts: for `before`'s
        serializer to emit them, and (`looped_back`) for the last one's lookup and read."""
        waiting = before.outputs - before.drain - L_PASS
        return waiting + self.tails if looped_back else waiting


def stage_holds(
    computes: np.ndarray,
    drains: np.ndarray,
    empty: np.ndarray | None,
    outputs: np.ndarray | float = 0.0,
    empty_drain: float = L_EMPTY,
) -> np.ndarray:
    """Per vector, how long a dataflow stage holds it (LayerCycles.overlapped): the longest of its
    compute, its `outputs` and the drain it overlaps, the previous vector's or, where `empty` marks
    the vectors that take no bank, the previous one's that does with the `empty_drain` of each
    empty vector since (the drain takes them in turn); L_EMPTY for an empty vector. The sample
    wraps round, as the tandem line repeats it."""
    if empty is None or not empty.any():
        return np.maximum(np.maximum(computes, np.roll(drains, 1)), outputs)
    order = np.arange(empty.size)
    banked = np.maximum.accumulate(np.where(empty, -1, order))  # the last vector up to v with a bank
    before = np.roll(banked, 1)
    before = np.where(before < 0, banked[-1], before)  # before the sample's first: its last
    between = (order - before - 1) % empty.size  # the empty vectors since
    paired = drains[before] + between * empty_drain
    return np.where(empty, float(L_EMPTY), np.maximum(np.maximum(computes, paired), outputs))


def adder_levels(units: int) -> int:
    """The registered levels of a private stage's adder tree over its K units' sums."""
    return (units - 1).bit_length()


def compute_latency(single_cycle: bool) -> int:
    """Cycles from a vector's last issue decision to its last sum in the banks (L_COMPUTE)."""
    return L_COMPUTE - L_SINGLE_CYCLE if single_cycle else L_COMPUTE


def sequential_latency(single_cycle: bool) -> float:
    """A sequential pass's cycles after its last row is asked for: the read (MEMORY_LATENCY, the
    AXI reader and the RAM) and the PEs' pipeline."""
    return compute_latency(single_cycle) + L_MEMORY + MEMORY_LATENCY


@dataclass(frozen=True)
class StageCost:
    """A stage's cycles per vector and resources, whatever stages surround it."""

    stage: Stage
    interval: float
    latency: float  # the first vector's cycles through the stage, once its weights are in
    resources: Resources
    held: np.ndarray = field(compare=False, repr=False)  # per vector: how long the stage holds it
    # a dataflow stage's serializers, per vector, when they are a unit of their own behind the word
    # FIFOs (CostModel.estimate; `held` then counts the issue units, PEs and drain alone); None: none
    emitted: np.ndarray | None = field(default=None, compare=False, repr=False)
    # cycles of its load phase at a batch's start: a dataflow stage's weights into UltraRAM
    # (through the one load chain, after the loaded stages before it), a sequential stage's
    # tables (through its own reader, beside every other stage's)
    load: float = 0.0

    @property
    def mode(self) -> str:
        return self.stage.mode

    @property
    def first(self) -> int:
        return self.stage.layers[0]

    @property
    def last(self) -> int:
        return self.stage.layers[-1]


@dataclass(frozen=True)
class ReaderCost:
    lanes: int  # values per input beat
    interval: float  # its beats and the gap after them, or its serializers, whichever is longer
    latency: float
    resources: Resources
    held: np.ndarray = field(compare=False, repr=False)  # per vector: the reader's cycles on it


@dataclass(frozen=True)
class Roofline:
    """The board's limits for this model, in vectors per second (docs/cost-model.md)."""

    useful_macs: float  # per vector: sum over layers of sum_i p_i nnz(row i)
    dsp_bound: float  # every DSP busy on the MACs that need a multiplier (inf: none do)
    lut_bound: float  # every LUT in PEs of the least size, each busy on one MAC a cycle
    offchip_bytes: float  # per vector, that no placement of the weights can avoid
    memory_bound: float  # inf when every weight fits on chip

    @property
    def compute_bound(self) -> float:
        return min(self.dsp_bound, self.lut_bound)

    @property
    def bound(self) -> float:
        return min(self.compute_bound, self.memory_bound)


@dataclass(frozen=True)
class LayerEstimate:
    index: int
    name: str
    mode: str
    pes: int
    stage: int
    units: int
    weight_memory: str
    cycles: LayerCycles
    resources: Resources  # a dataflow layer: its stage; a sequential one: none (its stage owns the tables)

    @property
    def compute(self) -> float:
        return self.cycles.compute

    @property
    def drain(self) -> float:
        return self.cycles.drain

    @property
    def bound(self) -> str:
        return self.cycles.bound

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "name": self.name,
            "mode": self.mode,
            "pes": self.pes,
            "units": self.units,
            "stage": self.stage,
            "weight_memory": self.weight_memory,
            "cycles": {"compute": self.compute, "drain": self.drain, "output": self.cycles.output},
            "bound": self.bound,
            "resources": self.resources.as_dict(),
        }


@dataclass(frozen=True)
class StageEstimate:
    index: int
    mode: str
    layers: tuple[int, ...]
    pes: int
    units: int
    weight_memory: str
    channels: int  # memory channels a sequential stage's beats are striped over (1 for a dataflow stage)
    interval: float
    latency: float  # the first vector's cycles through the stage, once its weights are in
    resources: Resources
    load: float = 0.0  # cycles of its load phase (StageCost.load)
    private: bool = False  # a dataflow stage whose units each have P PEs of their own (Stage.private)
    drain_lanes: int | None = None  # what a dataflow stage's drain requantizes a cycle (None: all P)

    def to_dict(self) -> dict:
        values = asdict(self)
        values["layers"] = list(self.layers)
        values["resources"] = self.resources.as_dict()
        return values


def searched(stage: StageCost | StageEstimate) -> float:
    """A stage's term in the latency the scheduler minimizes (`searched_latency`): a dataflow
    stage's latency or its load into UltraRAM, the longer; a sequential stage's latency and the
    load of its tables."""
    if stage.mode == SEQUENTIAL:
        return stage.latency + stage.load
    return max(stage.latency, stage.load)


def searched_latency(reader: float, stages: Sequence[StageCost | StageEstimate]) -> float:
    """The latency the scheduler minimizes, a sum over the stages (which its search needs), each
    stage's latency alone: a proxy for the first result (`CostModel.first_result`), which it
    neither bounds nor is bounded by. It overstates stages that overlap (1.01 to 1.78 times the
    first result on bench_rtl's designs) and understates loads into UltraRAM, which run one after
    another (test_rtl_offchip's dataflow_only, two stages loaded: 811 against 1,351). A
    sequential stage's tables load beside everything from the batch's start, but an early
    stage's load is not hidden, and counting only the longer part there made the search choose
    designs far later than it thought (docs/cost-model.md, "Designs")."""
    return reader + sum(searched(stage) for stage in stages)


@dataclass(frozen=True, eq=False)
class DesignEstimate:
    """The cost model's figures for one schedule; `to_dict` is what `fpgagen schedule --json` prints."""

    model: str
    board: Board
    activity: str
    batch: int
    edges: int  # nonzero weights of the model: the Graph Challenge's edges per vector
    reader: ReaderCost
    layers: tuple[LayerEstimate, ...]
    stages: tuple[StageEstimate, ...]
    roofline: Roofline
    interval: float  # cycles between vectors in steady state: see CostModel.design_interval
    latency: float  # cycles from a batch's start to its first result: see CostModel.first_result
    deep_channels: str | None = None  # the deep channels' kind of memory (Schedule.deep_channels)
    resources: Resources = field(init=False)
    bottleneck: float = field(init=False)  # the slowest stage's (or the reader's) mean interval

    def __post_init__(self) -> None:
        stages_total = sum((stage.resources for stage in self.stages), Resources())
        object.__setattr__(self, "resources", stages_total + self.reader.resources)
        # what the scheduler minimizes: the design's interval is at least this
        object.__setattr__(self, "bottleneck", max([self.reader.interval, *(s.interval for s in self.stages)]))

    @property
    def budget(self) -> Resources:
        return board_budget(self.board)

    @property
    def searched_latency(self) -> float:
        """What the scheduler's latency search minimizes for this design (`searched_latency`)."""
        return searched_latency(self.reader.latency, self.stages)

    def vectors_per_s(self, batch: int | None = None) -> float:
        """Throughput over a batch: the first vector takes the latency, each next one an interval."""
        batch = self.batch if batch is None else batch
        cycles = self.latency + (batch - 1) * self.interval
        return batch * self.board.clock_hz / cycles

    @property
    def steady_vectors_per_s(self) -> float:
        return self.board.clock_hz / self.interval

    @property
    def roofline_ratio(self) -> float:
        """Steady-state throughput over the lower roofline bound (at most 1)."""
        return self.steady_vectors_per_s / self.roofline.bound

    def to_dict(self) -> dict:
        board = self.board
        roofline = self.roofline
        return {
            "model": self.model,
            "board": {
                "name": board.name,
                "part": board.part,
                "clock_mhz": board.clock_mhz,
                "memory": board.memory,
                "channels": board.channels,
                "channel_gbps": board.channel_gbps,
            },
            "activity": self.activity,
            "constants": {
                "L_compute": L_COMPUTE,
                "L_single_cycle": L_SINGLE_CYCLE,
                "L_drain": L_DRAIN,
                "L_words": L_WORDS,
                "L_pass": L_PASS,
                "L_memory": L_MEMORY,
                "memory_latency": MEMORY_LATENCY,
                "L_reader": L_READER,
                "L_lookup": L_LOOKUP,
                "L_hand_off": L_HAND_OFF,
            },
            "reader": {
                "in_lanes": self.reader.lanes,
                "interval": self.reader.interval,
                "latency": self.reader.latency,
                "resources": self.reader.resources.as_dict(),
            },
            "layers": [layer.to_dict() for layer in self.layers],
            "stages": [stage.to_dict() for stage in self.stages],
            "totals": {
                "resources": self.resources.as_dict(),
                "budget": self.budget.as_dict(),
                "interval": self.interval,
                "bottleneck": self.bottleneck,
                "deep_channels": self.deep_channels,
                "latency": self.latency,
                "edges": self.edges,
                "throughput": {
                    "batch": self.batch,
                    "vectors_per_s": self.vectors_per_s(),
                    "edges_per_s": self.vectors_per_s() * self.edges,
                    "steady_vectors_per_s": self.steady_vectors_per_s,
                },
            },
            "roofline": {  # null for a bound that does not exist (no off-chip traffic, no work)
                "useful_macs": roofline.useful_macs,
                "compute_bound": _finite(roofline.compute_bound),
                "dsp_bound": _finite(roofline.dsp_bound),
                "lut_bound": _finite(roofline.lut_bound),
                "offchip_bytes": roofline.offchip_bytes,
                "memory_bound": _finite(roofline.memory_bound),
                "bound": _finite(roofline.bound),
                "ratio": self.roofline_ratio,
            },
        }


# Items a sub-channel holds beyond its FIFO's depth: the FIFO's output register and the consumer's
# merger's head and spare registers (fg_fifo.v, fg_merger.v).
CHANNEL_EXTRA_ITEMS = 3


# A sequential stage that hands its outputs to another stage holds the design in step with it
# (`in_lockstep`): it starts a pass only once the pass before has drained, its drain waits for its
# serializer to have emitted the vector before, and the serializer for the next stage to take the
# items, which it does only while open for that vector. CostModel.chained_interval follows each
# vector through these hand-offs (docs/cost-model.md, "Designs"). Measured in Verilator (bench_rtl's
# gc-seq-chain, Graph Challenge 1024 x 8 on a U280 cut down to 40 BRAM36: sequential, dataflow, three
# sequential, three dataflow stages; 32 images, steady state): 770.3 cycles a vector through shallow
# channels, 754.0 through deep ones, modelled 765.1 and 750.5, where "each vector waits for its
# slowest unit" said 666.4 for both; tests/test_performance.py's design on 20 BRAM36 (sequential,
# two dataflow, sequential; its 32 images four times) 612.3, modelled 594.4 (the rule before 634.7);
# GC 1024 x 3, a sequential stage of two layers at P = 32 feeding a dataflow stage at P = 16, K = 1,
# 1,494.4 through a shallow channel and 1,184.7 through a deep one, modelled 1,497.8 and 1,176.5.
def in_lockstep(stages: Sequence[Stage]) -> bool:
    """Whether a design's stages hand vectors on in step (CostModel.chained_interval): a
    sequential stage hands its outputs to another stage (docs/cost-model.md, "Designs"). The last
    stage's outputs leave the design."""
    return any(stage.mode == SEQUENTIAL for stage in stages[:-1])


@dataclass(frozen=True)
class ChainedStage:
    """A stage as CostModel.chained_interval and CostModel.first_result follow a vector through
    it, per vector."""

    sequential: bool
    # a sequential stage's first pass, its inputs all there; a dataflow stage's hold of the vector,
    # its compute or the drain of the vector before (LayerCycles.computing), up to its own drain
    compute: np.ndarray
    tail: np.ndarray  # from its last input's arrival to the end of that compute
    drain: np.ndarray  # a sequential stage's first pass's drain and every later pass (a dataflow stage: 0)
    last_drain: float  # a sequential stage's last pass's drain, its serializer's start (a dataflow stage: 0)
    outputs: np.ndarray  # from its last drain's start to its serializers' last item, unhindered
    items: np.ndarray  # the items its busiest serializer emits
    takes: np.ndarray  # from its opening for a vector to taking that vector's last item, unhindered
    buffer: int  # items the channel into it holds

    def repeated(self, vectors: int, passes: int) -> ChainedStage:
        """This stage with each per-vector figure for `vectors` vectors (one expected vector
        repeated), the sample run `passes` times in a row."""
        arrays = ("compute", "tail", "drain", "outputs", "items", "takes")
        return replace(self, **{name: _repeated(getattr(self, name), vectors, passes) for name in arrays})


def _repeated(values: np.ndarray, vectors: int, passes: int) -> np.ndarray:
    return np.tile(np.broadcast_to(np.asarray(values, dtype=np.float64), (vectors,)), passes)


def chained_interval(reader: np.ndarray, stages: list[ChainedStage]) -> float:
    """Cycles between vectors of a design in lockstep (`in_lockstep`), each vector followed through
    its stages' hand-offs (docs/cost-model.md, "Designs"). A stage opens for vector v (takes its
    items) once a sequential stage has drained v - 1, or a dataflow stage is done holding v - 1
    (LayerCycles.computing); it computes v until its last item came and the pass's tail after it;
    a sequential stage's drain waits for its serializer to have emitted v - 1; a stage's
    serializers emit v after its drain starts, no faster than the next stage takes the items once
    open, the channel holding `buffer` of them. The sample runs TANDEM_PASSES times in a row and
    the interval is the spacing of the last stage's outputs over the last pass."""
    vectors = max(reader.size, *(stage.compute.size for stage in stages))
    emitting = _repeated(reader, vectors, TANDEM_PASSES)
    runs = [stage.repeated(vectors, TANDEM_PASSES) for stage in stages]
    total = vectors * TANDEM_PASSES
    # a sequential stage's last drain done, a dataflow stage's drain started: it opens for the next
    finished = np.zeros((len(stages), total))
    emitted = np.zeros((len(stages) + 1, total))  # the reader's and each stage's last item of the vector
    for v in range(total):
        opened = finished[:, v - 1] if v else np.zeros(len(stages))
        before = emitted[0, v - 1] if v else 0.0
        emitted[0, v] = max(before + emitting[v], opened[0] + emitting[v] - stages[0].buffer)
        for s, run in enumerate(runs):
            arrived = emitted[s, v]
            previous = emitted[s + 1, v - 1] if v else 0.0
            if run.sequential:
                computed = max(opened[s] + L_PASS + run.compute[v], arrived + run.tail[v])
                done = max(computed, previous + L_PASSING) + run.drain[v]
                out = done - run.last_drain + run.outputs[v]
            else:
                done = max(opened[s] + run.compute[v], arrived + run.tail[v])
                out = max(done + run.outputs[v], previous + run.items[v])
            if s + 1 < len(runs):
                out = float(_handed_on(out, run.items[v], runs[s + 1].takes[v], runs[s + 1].buffer, opened[s + 1]))
            finished[s, v], emitted[s + 1, v] = done, out
    last = emitted[-1]
    return float(last[-1] - last[-vectors - 1]) / vectors


def _handed_on(
    out: np.ndarray | float,
    items: np.ndarray | float,
    takes: np.ndarray | float,
    buffer: int,
    opened: np.ndarray | float,
) -> np.ndarray:
    """When a stage's last item has left, `out` unhindered: the next stage takes its `items` at
    its own pace (`takes`) from its opening or the first item, whichever is later, and the channel
    between holds the last `buffer` of them."""
    items = np.asarray(items, dtype=np.float64)
    paced = np.maximum(opened, out - items) + np.maximum(items, takes) * (1.0 - buffer / np.maximum(items, 1.0))
    return np.where(items > buffer, np.maximum(out, paced), out)


def _by_vector(held: list[np.ndarray]) -> np.ndarray:
    """(units, vectors): how long each unit holds each vector, a unit's one expected vector
    repeated for every vector of the sample."""
    vectors = max(h.size for h in held)
    return np.array([np.broadcast_to(h, (vectors,)) for h in held])


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value


class CostModel:
    """The cost of every stage the engine can build for `model` on `board` under `activity`.

    With `relabel` (by default, unless the model is relabelled already) every layer but the last
    is priced as the relabelling pass will place it on the P PEs of its stage (the scheduler's
    case); without, as it stands.
    """

    def __init__(self, model: Model, board: Board, activity: Activity, relabel: bool | None = None):
        if not model.quantized:
            raise FpgagenError(f"model {model.name} is not quantized; the cost model needs its integer weights")
        if len(activity.probabilities) != len(model.layers) or any(
            p.shape != (layer.in_features,) for p, layer in zip(activity.probabilities, model.layers)
        ):
            raise FpgagenError(f"the activity does not match the layers of model {model.name}")
        self.model = model
        self.board = board
        self.activity = activity
        self.relabel = not model.relabelled if relabel is None else relabel
        self._placements: dict[tuple[int, int], Placement] = {}
        self._shapes: dict[tuple[int, int], LayerShape] = {}
        self._cycles: dict[tuple[int, int, str, int, int, int, bool, int], LayerCycles] = {}
        self._items: dict[tuple[int, int, int, int], np.ndarray] = {}  # shared by a layer's modes, slots, channels
        self._quiet_shares: dict[tuple[int, int], np.ndarray | None] = {}  # shared by a layer's K, PEs' kinds, lanes
        self._empty: dict[int, np.ndarray | None] = {}
        self._issue: dict[tuple[int, int, int], np.ndarray] = {}  # shared by shared and private PEs
        self._pe_busy: dict[tuple[int, int], np.ndarray] = {}  # shared by a dataflow layer's K
        self.encodings = tuple(encoding_of(layer.numerics) for layer in model.layers)
        # the layers whose dataflow stages drain quiet vectors by their end words alone
        self.quiet = tuple(stage_is_quiet(layer, self.is_last(index)) for index, layer in enumerate(model.layers))
        # the layers whose dataflow stages let empty vectors pass their banks, the last among them
        self.passes_empty = tuple(zero_without_input(layer) for layer in model.layers)
        self.uram = board.has_free_uram  # loaded tables may go to UltraRAM

    @property
    def layers(self) -> tuple[Layer, ...]:
        return self.model.layers

    def is_last(self, index: int) -> bool:
        return index == len(self.layers) - 1

    def placement(self, index: int, pes: int) -> Placement:
        key = (index, pes)
        if key not in self._placements:
            last = self.is_last(index)  # the model's outputs keep their order, rotated at most
            self._placements[key] = place(self.layers[index].numerics.weights_q, pes, self.relabel and not last, last)
        return self._placements[key]

    def shape(self, index: int, pes: int) -> LayerShape:
        """Layer `index`'s sizes on P PEs (fpgagen.engine.geometry)."""
        key = (index, pes)
        if key not in self._shapes:
            placement = self.placement(index, pes)
            self._shapes[key] = layer_shape(
                self.layers[index], pes, placement.beats, self.encodings[index], rotation_levels(placement.rotations)
            )
        return self._shapes[key]

    # Cycles --------------------------------------------------------------------------------------

    def cycles(
        self,
        index: int,
        pes: int,
        mode: str,
        units: int = 1,
        slot_width: int | None = None,
        channels: int = 1,
        private: bool = False,
        drain_lanes: int | None = None,
    ) -> LayerCycles:
        """Layer `index` on P PEs and K issue units in `mode` (docs/cost-model.md, "Cycles"), each
        unit with P PEs of its own when `private`, a dataflow drain taking `drain_lanes` a cycle
        (None: P); a sequential layer's beats in off-chip slots of `slot_width` bits, its stage's (by
        default the layer's own, as in a stage of its own), striped over `channels` memory channels."""
        if mode == DATAFLOW:
            slot_width, channels = 0, 1
        elif slot_width is None:
            slot_width = SequentialShape.of(pes, [self.shape(index, pes)]).slot.width
        drain_lanes = drain_lanes or pes
        key = (index, pes, mode, units, slot_width, channels, private, drain_lanes)
        if key not in self._cycles:
            self._cycles[key] = self._layer_cycles(index, pes, mode, units, slot_width, channels, private, drain_lanes)
        return self._cycles[key]

    def _layer_cycles(
        self,
        index: int,
        pes: int,
        mode: str,
        units: int,
        slot_width: int,
        channels: int,
        private: bool,
        drain_lanes: int,
    ) -> LayerCycles:
        if mode == DATAFLOW:
            return self._dataflow_cycles(index, pes, units, private, drain_lanes)
        # a sequential layer: one activation a cycle looked up, one beat a cycle taken, the beats
        # brought over the memory port
        placement = self.placement(index, pes)
        inputs = self.activity.inputs(index)
        drain, _ = self._drain_length(index, pes, units, False, pes)
        items = self._items_per_vector(index, pes, units)
        output = self._outputs_after_drain(index, items)
        beats = inputs.rows @ placement.beats
        work = np.maximum(inputs.rows.sum(axis=1), beats)
        reads = inputs.rows @ (placement.beats > 0)
        memory = self.memory_cycles(beats, reads, slot_width // 8 * pes, channels)
        bound = MEMORY_BOUND if memory.mean() > work.mean() else COMPUTE_BOUND
        # a pass's first read waits MEMORY_LATENCY: its rows come from the pass before
        tails = np.where(reads > 0, sequential_latency(self.shape(index, pes).single_cycle), L_LOOKUP)
        compute = np.maximum(work, memory) + tails
        return LayerCycles(
            float(compute.mean()), drain, float(output.mean()), bound, compute, output, tails, items=items
        )

    def _dataflow_cycles(self, index: int, pes: int, units: int, private: bool, drain_lanes: int) -> LayerCycles:
        shape = self.shape(index, pes)
        drain, delay = self._drain_length(index, pes, units, private, drain_lanes)
        items = self._items_per_vector(index, pes, units, drain_lanes)
        output = self._outputs_after_drain(index, items) + delay
        if private:
            # a private PE takes at most an entry a beat of its own unit: only the units limit
            # (docs/engine.md, "Private PEs")
            compute = self._busiest_unit(index, pes, units) + compute_latency(shape.single_cycle)
        else:
            issue = self._busiest_unit(index, pes, units)
            pes_busy = self._busiest_pe(index, pes)
            if shape.stacked:
                # the drain of the vector before reads in slots of the MAC pipeline: a cycle an
                # address at every PE, and its outputs a cycle later (docs/engine.md, "Stacked banks")
                pes_busy, drain = pes_busy + shape.addresses, drain + 1
            compute = np.maximum(issue, pes_busy) + compute_latency(shape.single_cycle)
        drains = self._drains(index, pes, drain)
        return LayerCycles(
            float(compute.mean()),
            float(drains.mean()),
            float(output.mean()),
            COMPUTE_BOUND,
            compute,
            output,
            drains=drains,
            empty=self._empty_vectors(index),
            # the model's last layer writes an empty vector's beats, zeros, as it drains a bank
            empty_drain=drain if self.is_last(index) else L_EMPTY,
            items=items,
        )

    def _drain_length(self, index: int, pes: int, units: int, private: bool, drain_lanes: int) -> tuple[float, int]:
        """A drain's cycles (without stacked banks' cycle; a sequential pass's: all P lanes, shared
        PEs), and the cycles its outputs come later than all P lanes' unmultiplexed, a private
        stage's unadded sums would."""
        # a row a cycle, each local address of each group of D PEs, then the groups' multiplexer
        # (docs/engine.md, "Drain lanes") and a private stage's adder tree, a cycle a level
        delay = (L_DRAIN_MUX if drain_lanes < pes else 0) + (adder_levels(units) if private else 0)
        shape = self.shape(index, pes)
        rows = shape.drain_rows(drain_lanes)
        # the model's last layer writes dense beats, a cycle later through a rotator (fg_dense.v)
        tail = (L_ROTATE if shape.rotated else 0) if self.is_last(index) else L_WORDS
        return rows + L_DRAIN + tail + delay, delay

    def _drains(self, index: int, pes: int, drain: float) -> np.ndarray:
        """Per vector, a dataflow drain of `drain` cycles, or L_QUIET for a quiet vector: one whose
        active inputs have no beat at all, at a layer whose outputs are then all zero (docs/engine.md,
        "Quiet vectors"); measured vectors are quiet or not, one expected vector quiet with the
        probability that none of the inputs with beats is active."""
        quiet = self._quiet_share(index, pes)
        if quiet is None:
            return np.array([drain])
        return quiet * L_QUIET + (1.0 - quiet) * drain

    def _quiet_share(self, index: int, pes: int) -> np.ndarray | None:
        """Per vector, 1 where it is quiet at layer `index` on P PEs, else 0 (one expected vector: the
        probability); None where no vector is quiet (the layer's outputs are not all zero without
        input, or it is the model's last). Computed once for every K, kind of PE and drain lanes."""
        key = (index, pes)
        if key not in self._quiet_shares:
            self._quiet_shares[key] = None
            if self.quiet[index]:
                inputs = self.activity.inputs(index)
                has_beats = self.placement(index, pes).beats > 0
                if inputs.measured:
                    self._quiet_shares[key] = ((inputs.rows @ has_beats) == 0).astype(np.float64)
                else:
                    with np.errstate(divide="ignore"):  # an input that is always active: never quiet
                        self._quiet_shares[key] = np.exp(np.log1p(-inputs.rows[0][has_beats]).sum(keepdims=True))
        return self._quiet_shares[key]

    def _empty_vectors(self, index: int) -> np.ndarray | None:
        """Per measured vector, whether it brings layer `index` no activation, at a layer whose
        outputs are zero without input (docs/engine.md, "Empty vectors"); None for one expected
        vector, which is never empty: it holds every bank's stall a sometimes empty vector would
        spare."""
        if index not in self._empty:
            inputs = self.activity.inputs(index)
            self._empty[index] = (
                (inputs.rows.sum(axis=1) == 0)
                if self.passes_empty[index] and inputs.measured and len(inputs.rows) > 1
                else None
            )
        return self._empty[index]

    def memory_cycles(self, beats: np.ndarray, reads: np.ndarray, beat_bytes: int, channels: int = 1) -> np.ndarray:
        """Cycles to bring `beats` beats of `beat_bytes` bytes, striped over `channels` memory
        channels, in `reads` bursts (on each channel): at the channels' bandwidth, or as fast as
        MAX_BURSTS bursts in flight on each cover the memory's latency (Little's law), whichever is
        slower."""
        if self.board.channels == 0:
            return np.where(beats > 0, math.inf, 0.0)
        bandwidth = beats * (beat_bytes / (channels * self.board.bytes_per_cycle))
        return np.maximum(bandwidth, reads * (MEMORY_LATENCY / MAX_BURSTS))

    def lane_use(self, index: int, pes: int) -> float:
        """The share of P lanes that layer `index`'s rows fill, weighted by activity: useful MACs
        over P times the cycles a unit spends on the rows (a beat each, one for an empty row):
        what a private stage's PEs do a cycle."""
        placement = self.placement(index, pes)
        rows = self.activity.inputs(index).rows.sum(axis=0)
        cycles = float(rows @ placement.row_cycles)
        return float(rows @ placement.counts.sum(axis=1)) / (pes * cycles) if cycles else 1.0

    def private_fits(self, index: int, pes: int, units: int) -> bool:
        """Whether the scheduler may give layer `index` a private stage of P PEs a unit: its banks
        are its own (not stacked), and with K > 1 its PEs would be busy: its rows fill the lanes
        (PRIVATE_LANE_USE), and, the first layer, its units issue no faster than the input reader
        emits the activations (Graph Challenge 1024 x 8's first layer at P = 32, K = 4: busy 75.2
        cycles a vector in Verilator, 0.65 of its PEs' cycles useful, while its units issue in 58.8)."""
        if self.shape(index, pes).stacked:
            return False
        if units == 1:
            return True
        fed = index > 0 or float(self._busiest_unit(index, pes, units).mean()) >= float(self.reader().held.mean())
        return fed and self.lane_use(index, pes) >= PRIVATE_LANE_USE

    def _busiest_unit(self, index: int, pes: int, units: int) -> np.ndarray:
        """The busiest issue unit's cycles per vector: computed once for shared and private PEs."""
        key = (index, pes, units)
        if key not in self._issue:
            self._issue[key] = issue_cycles(self.activity.inputs(index), self.placement(index, pes).row_cycles, units)
        return self._issue[key]

    def _busiest_pe(self, index: int, pes: int) -> np.ndarray:
        """The busiest PE's entries per vector: computed once for the K issue units priced with it."""
        key = (index, pes)
        if key not in self._pe_busy:
            self._pe_busy[key] = pe_cycles(self.activity.inputs(index), self.placement(index, pes).counts)
        return self._pe_busy[key]

    def _outputs_after_drain(self, index: int, items: np.ndarray) -> np.ndarray:
        """Per vector, from a drain's start to its serializers' last item: the drain's latency
        (its outputs' words) and the busiest serializer's `items`, one a cycle; 0 for the model's
        last layer, whose drain writes dense beats."""
        return items if self.is_last(index) else items + L_DRAIN + L_WORDS

    def _items_per_vector(self, index: int, pes: int, groups: int, drain_lanes: int | None = None) -> np.ndarray:
        """The items of the drain's busiest serializer per vector: each of `groups` emits the
        nonzero outputs of its drain_lanes / groups lanes of each drain row (None: P), one a cycle
        (0 for the model's last layer, which drains dense beats)."""
        if self.is_last(index):
            return np.zeros(1)
        lanes = drain_lanes or pes
        key = (index, pes, groups, lanes)
        if key not in self._items:
            placement = self.placement(index, pes)
            # output j on lane pe[j] at local address j // P: drain row address * P / D + pe[j] // D
            row = np.arange(self.layers[index].out_features) // pes * (pes // lanes) + placement.pe // lanes
            group = placement.pe % lanes // (lanes // groups)
            emitted = serializer_cycles(self.activity.inputs(index + 1), row, group, groups, empty_words=False)
            self._items[key] = emitted
        return self._items[key]

    def reader(self, lanes: int | None = None) -> ReaderCost:
        """The input reader: a beat of `lanes` values a cycle (by default the engine's choice), a
        gap after each vector, its groups serialized (fpgagen.engine.geometry.Groups)."""
        n_in = self.model.in_features
        lanes = in_lanes(n_in) if lanes is None else lanes
        channel = reader_channel(n_in, lanes)
        inputs = np.arange(n_in)
        emitted = serializer_cycles(
            self.activity.inputs(0), inputs // lanes, (inputs % lanes) // (lanes // channel.subs), channel.subs
        )
        held = np.maximum(ceil_div(n_in, lanes) + 1, emitted)
        interval = max(ceil_div(n_in, lanes) + 1, float(emitted.mean()))
        return ReaderCost(
            lanes, interval, interval + L_READER, total(reader_memories(channel, lanes)) + READER_LOGIC, held
        )

    def reader_memories(self, lanes: int | None = None, deep: str | None = None) -> list[Memory]:
        n_in = self.model.in_features
        lanes = in_lanes(n_in) if lanes is None else lanes
        return reader_memories(reader_channel(n_in, lanes, deep), lanes)

    # Dataflow stages ---------------------------------------------------------------------------

    def dataflow_memories(
        self,
        index: int,
        pes: int,
        units: int,
        loaded: bool = False,
        deep: str | None = None,
        private: bool = False,
        drain_lanes: int | None = None,
    ) -> list[Memory]:
        """Every memory of a dataflow stage running layer `index` on P PEs and K units (each with P
        PEs of its own when `private`), its weights `loaded` into UltraRAM or in a ROM, its drain
        taking `drain_lanes` a cycle (None: P), its output channel `deep` or shallow (fpgagen.engine)."""
        shape = self.shape(index, pes)
        output = stage_output(self.model, index, pes, units, deep)
        return dataflow_memories(
            shape, units, bits_for(shape.n_in - 1), output, loaded, private, drain_lanes, self.passes_empty[index]
        )

    def loadable(self, index: int, pes: int) -> bool:
        """Whether the board lets a dataflow stage of layer `index` on P PEs load its weights into
        UltraRAM (geometry.loadable)."""
        return self.uram and loadable(self.shape(index, pes))

    def load(self, index: int, pes: int) -> tuple[float, Resources]:
        """The load phase of a dataflow stage's weights: its cycles (a row a beat of the load's
        port, at most what the memory channel delivers) and the registers of its link in the load
        chain (a beat, its valid bit, the stage's row counter and its loaded flag)."""
        shape = self.shape(index, pes)
        beat_bits = load_port_bits(shape.row_bits)
        rate = min(1.0, self.board.bytes_per_cycle / (beat_bits // 8))
        return shape.rom_beats / rate, Resources(ff=beat_bits + 2 + bits_for(shape.rom_beats))

    def drain_lanes(self, index: int, pes: int, units: int, private: bool) -> int | None:
        """The fewest lanes a cycle (drain_lane_choices) with which layer `index`'s drain keeps the
        stage as fast as with all P, within DRAIN_LANE_SLACK per vector on average: each lane fewer
        is a requantizer fewer (docs/engine.md, "Drain lanes"). None: all P."""
        choices = drain_lane_choices(self.shape(index, pes), units, self.is_last(index))
        every = self.cycles(index, pes, DATAFLOW, units, private=private)
        limit = float(every.overlapped.mean()) * (1.0 + DRAIN_LANE_SLACK)
        for lanes in sorted(choices):
            if lanes == pes:
                return None
            # the drain alone, against the computes of the vectors after it, may already hold the
            # stage longer: then its serializers' outputs (the costly part) need no counting
            drains = self._drains(index, pes, self._drain_length(index, pes, units, private, lanes)[0])
            if float(stage_holds(every.computes, drains, every.empty, empty_drain=every.empty_drain).mean()) > limit:
                continue
            held = self.cycles(index, pes, DATAFLOW, units, private=private, drain_lanes=lanes).overlapped
            if float(held.mean()) <= limit:
                return lanes
        return None

    def dataflow(
        self,
        index: int,
        pes: int,
        units: int = 1,
        loaded: bool = False,
        private: bool = False,
        drain_lanes: int | None = None,
        choose_lanes: bool = False,
    ) -> StageCost:
        """A dataflow stage; `loaded`: its weights in UltraRAM, filled by the load phase at a batch's
        start, which the stages share one after the other (so their load cycles add up in the
        latency, as the stages' latencies do); `private`: each unit with P PEs of its own; its drain
        taking `drain_lanes` a cycle (None: P), or with `choose_lanes` the cost model's choice."""
        if choose_lanes:
            drain_lanes = self.drain_lanes(index, pes, units, private)
        cycles = self.cycles(index, pes, DATAFLOW, units, private=private, drain_lanes=drain_lanes)
        logic = engine_logic(self.shape(index, pes).logic(units, private, drain_lanes))
        load_cycles, load_registers = self.load(index, pes) if loaded else (0.0, Resources())
        memories = self.dataflow_memories(index, pes, units, loaded, private=private, drain_lanes=drain_lanes)
        return StageCost(
            stage=Stage(
                DATAFLOW, (index,), pes, URAM if loaded else BRAM, units, private=private, drain_lanes=drain_lanes
            ),
            interval=max(cycles.compute, cycles.occupancy),  # the two accumulator banks ping-pong
            latency=cycles.compute + cycles.occupancy,
            resources=total(memories) + logic + load_registers,
            held=cycles.computing,
            emitted=None if self.is_last(index) else cycles.outputs,
            load=load_cycles,
        )

    # Sequential stages -------------------------------------------------------------------------

    def stripes(self, beat_bytes: int, pes: int) -> list[int]:
        """The memory channels a sequential stage of P PEs and beats of `beat_bytes` may be striped
        over (STRIPES): those whose ports the engine builds (at most MAX_PORT_BITS, whole slots),
        up to the first whose channels deliver a beat a cycle (the stage takes at most one, so
        more would only take channels from other stages), within the board's channels."""
        counts = []
        for channels in STRIPES:
            if channels > max(1, self.board.channels):
                break
            if not stripable(beat_bytes, pes, channels):
                continue
            counts.append(channels)
            if channels * self.board.bytes_per_cycle >= beat_bytes:
                break
        return counts

    def sequential_runs(
        self, first: int, pes: int, channels: int | None = None, limit: float = math.inf
    ) -> Iterator[StageCost]:
        """Sequential stages on P PEs running layers first..b, for b = first, first+1, ..., each
        striped over every count of channels worth it (`stripes`), or over `channels` if given;
        only those of an interval at most `limit`. A run holds a vector for its passes, each at
        least L_PASS, so its interval only grows with its layers: the runs end where the passes
        after the first already exceed `limit` at every striping.

        Built incrementally (the stage's shape grows by one layer at a time), so all runs from
        `first` cost O(layers) together; the scheduler asks for every run of the model. The
        stage's off-chip slots only widen as the run grows: the passes are summed for every width
        the run may still take, and every striping of that width. A pass depends on the one before
        (`LayerCycles.after`): the passes after the first are summed as the run grows, the first's
        follows the run's last.
        """

        def striping(shape: SequentialShape) -> list[int]:
            if shape.slot.width > OFFCHIP_SLOT_WIDTHS[-1]:
                return []
            if channels is None:
                return self.stripes(shape.beat_bytes, pes)
            fits = channels <= max(1, self.board.channels) and shape.striped(channels).buildable
            return [channels] if fits else []

        shape = SequentialShape(pes)
        looped = {  # the passes after the first, per slot width and channels
            (width, count): np.zeros(1)
            for width in OFFCHIP_SLOT_WIDTHS
            for count in (self.stripes(width // 8 * pes, pes) if channels is None else [channels])
        }
        before: dict[tuple[int, int], LayerCycles] = {}  # the run's last layer
        for last in range(first, len(self.layers)):
            shape = shape.then(self.shape(last, pes))
            stripes = striping(shape)
            if not stripes:
                return
            width = shape.slot.width
            for key in [key for key in looped if key[0] < width]:
                del looped[key]
            for key, passes in looped.items():
                cycles = self.cycles(last, pes, SEQUENTIAL, slot_width=key[0], channels=key[1])
                if last > first:
                    looped[key] = passes + cycles.held_after(before[key], looped_back=True)
                before[key] = cycles
            if min(float(passes.mean()) for passes in looped.values()) > limit:
                return
            output = stage_output(self.model, last, pes, 1)
            for count in stripes:
                striped = shape.striped(count)
                opening = self.cycles(first, pes, SEQUENTIAL, slot_width=width, channels=count)
                held = looped[width, count] + opening.held_after(before[width, count], looped_back=False)
                interval = float(held.mean())
                if interval > limit:
                    continue
                memories = sequential_memories(striped, output, self.uram)
                yield StageCost(
                    stage=Stage(SEQUENTIAL, tuple(range(first, last + 1)), pes, OFFCHIP, channels=count),
                    interval=interval,
                    latency=interval,
                    load=striped.load_cycles,  # its tables, through its own reader at a batch's start
                    resources=total(memories)
                    + engine_logic(striped.logic())
                    + Resources(ff=striped.load_register_bits),
                    held=held,
                )

    def passes(self, stage: Stage, intake: np.ndarray | None = None) -> list[LayerCycles]:
        """The cycles of a sequential stage's layers as its passes follow each other. `intake`: per
        vector, how long the next stage takes to accept the stage's outputs through a shallow
        channel, which its serializer cannot outrun (`throttle`)."""
        alone = self.alone(stage)
        if intake is not None:
            outputs = np.maximum(alone[-1].outputs, intake)
            alone[-1] = replace(alone[-1], output=float(outputs.mean()), outputs=outputs)
        return [cycles.after(alone[k - 1], looped_back=k > 0) for k, cycles in enumerate(alone)]

    def alone(self, stage: Stage) -> list[LayerCycles]:
        """The cycles of a sequential stage's layers each alone, in the stage's off-chip slots."""
        width = self.slot_width(stage)
        return [
            self.cycles(index, stage.pes, SEQUENTIAL, slot_width=width, channels=stage.channels)
            for index in stage.layers
        ]

    def intake(self, stage: Stage) -> np.ndarray:
        """Per vector, the cycles a dataflow stage takes its input items in: its units take them as
        they issue their rows."""
        return self.dataflow_cycles(stage).computes

    def dataflow_cycles(self, stage: Stage) -> LayerCycles:
        """The cycles of a dataflow `stage`'s layer, as the stage is built."""
        return self.cycles(
            stage.layers[0], stage.pes, DATAFLOW, stage.units, private=stage.private, drain_lanes=stage.drain_lanes
        )

    def throttle(self, stage: Stage, consumer: Stage | None, deep_channels: str | None) -> np.ndarray | None:
        """The `intake` of `stage`'s passes when its outputs go to a dataflow `consumer` through a
        shallow channel, else None: its serializer emits them only as fast as the consumer takes
        them, and its next vector's first pass waits for the serializer (docs/cost-model.md,
        "Designs"). A sequential stage feeding a dataflow stage slower than its own last pass held
        25% more cycles a vector in Verilator (2,088) than its cost alone (1,674.5). A deep channel
        holds a vector's items."""
        if stage.mode != SEQUENTIAL or consumer is None or consumer.mode != DATAFLOW or deep_channels:
            return None
        return self.intake(consumer)

    def sequential_shape(self, first: int, last: int, pes: int, channels: int = 1) -> SequentialShape:
        return SequentialShape.of(pes, [self.shape(index, pes) for index in range(first, last + 1)], channels)

    def sequential_memories(
        self, first: int, last: int, pes: int, channels: int = 1, deep: str | None = None
    ) -> list[Memory]:
        """Every memory of a sequential stage running layers first..last, its output channel
        `deep` or shallow (fpgagen.engine)."""
        shape = self.sequential_shape(first, last, pes, channels)
        return sequential_memories(shape, stage_output(self.model, last, pes, 1, deep), self.uram)

    def logic(self, stage: Stage) -> LogicShape:
        """What the logic of `stage` is sized by, as the cost model prices it."""
        if stage.mode == DATAFLOW:
            return self.shape(stage.layers[0], stage.pes).logic(stage.units, stage.private, stage.drain_lanes)
        return self.sequential_shape(stage.layers[0], stage.layers[-1], stage.pes, stage.channels).logic()

    def sequential(self, first: int, last: int, pes: int, channels: int = 1) -> StageCost:
        for cost in self.sequential_runs(first, pes, channels):
            if cost.last == last:
                return cost
        raise ValueError(f"no layers {first}..{last} on {pes} PEs striped over {channels} channel(s)")

    def slot_width(self, stage: Stage) -> int | None:
        """The width of a sequential stage's off-chip slots (None for a dataflow stage)."""
        if stage.mode == DATAFLOW:
            return None
        return self.sequential_shape(stage.layers[0], stage.layers[-1], stage.pes).slot.width

    def stage(self, stage: Stage) -> StageCost:
        if stage.mode == DATAFLOW:
            return self.dataflow(
                stage.layers[0], stage.pes, stage.units, stage.weight_memory == URAM, stage.private, stage.drain_lanes
            )
        return self.sequential(stage.layers[0], stage.layers[-1], stage.pes, stage.channels)

    # Whole designs -----------------------------------------------------------------------------

    def roofline(self) -> Roofline:
        """Compute bounds: all DSPs busy on the useful MACs that need a multiplier; all LUTs in PEs
        of the least size the engine can build, each busy on a useful MAC every cycle. Memory
        bound: the off-chip traffic left when on-chip memory holds the most often used weights (a
        fractional knapsack)."""
        board = self.board
        useful = []  # (probability, nonzeros) of every row of every layer
        bits_per_weight = []
        slot_bytes = []  # the narrowest off-chip slot of each row's weights, a PE of one address
        multiplied = pe_luts = 0.0  # per vector: MACs that need a DSP; MACs x their PE's LUTs
        for layer, p, encoding in zip(self.layers, self.activity.probabilities, self.encodings):
            nnz = np.diff(layer.numerics.weights_q.indptr)
            useful.append((p, nnz))
            # the smallest on-chip entry: valid bit, one local-address bit, the weight if any
            bits_per_weight.append(np.full(layer.in_features, 2 + encoding.weight_bits))
            # (a sequential stage keeps a layer's weights in its slots unless it shares one value)
            weight_bits = 0 if encoding.positions_only else layer.numerics.weight_format.bits
            narrowest = offchip_slot(bits_for(0), weight_bits).width // 8
            slot_bytes.append(np.full(layer.in_features, narrowest))
            macs = float(p @ nnz)
            multiplied += macs if encoding.multiplies else 0.0
            pe_luts += macs * least_pe_luts(accumulator_bits(layer.numerics.acc_bits), encoding)
        p = np.concatenate([u[0] for u in useful])
        nnz = np.concatenate([u[1] for u in useful]).astype(np.float64)
        entry = np.concatenate(bits_per_weight)
        macs = float(p @ nnz)
        budget = board_budget(board)
        dsp_bound = math.inf if multiplied == 0 else budget.dsp * board.clock_hz / multiplied
        lut_bound = math.inf if pe_luts == 0 else budget.lut * board.clock_hz / pe_luts
        # Every LUT counted as 64 bits of distributed RAM overstates the fabric's storage, which
        # keeps this an upper bound on any design.
        capacity = budget.bram * BRAM36_BITS + budget.uram * URAM_BITS + budget.lut * LUTRAM_DEPTH
        order = np.argsort(-p, kind="stable")
        row_bits = (nnz * entry)[order]
        kept_bits = np.minimum(row_bits, np.maximum(0.0, capacity - (np.cumsum(row_bits) - row_bits)))
        left_weights = (row_bits - kept_bits) / entry[order]
        offchip = float(p[order] @ (left_weights * np.concatenate(slot_bytes)[order]))
        bandwidth = board.channels * board.channel_gbps * 1e9
        memory_bound = math.inf if offchip <= 0 else bandwidth / offchip
        return Roofline(macs, dsp_bound, lut_bound, offchip, memory_bound)

    def estimate(
        self,
        stages: tuple[Stage, ...],
        batch: int,
        in_lanes: int | None = None,
        deep_channels: str | None = None,
    ) -> DesignEstimate:
        """The figures of a design of `stages` (and a reader of `in_lanes` values a beat, by default
        the engine's choice) over a batch, its channels deep in the kind of memory `deep_channels`
        names, or shallow (None)."""
        layer_estimates: list[LayerEstimate] = []
        stage_estimates: list[StageEstimate] = []
        reader = self.reader(in_lanes)
        if deep_channels:
            reader = replace(reader, resources=reader.resources + self.reader_deepening(reader.lanes, deep_channels))
        held = [reader.held]
        emitted = []
        for number, stage in enumerate(stages):
            cost = self.stage(stage)
            if deep_channels:
                cost = replace(cost, resources=cost.resources + self.output_deepening(stage, deep_channels))
            if stage.mode == DATAFLOW:
                cycles = [self.dataflow_cycles(stage)]
            else:
                consumer = stages[number + 1] if number + 1 < len(stages) else None
                intake = self.throttle(stage, consumer, deep_channels)
                cycles = self.passes(stage, intake)
                if intake is not None:
                    passes_held = sum(layer_cycles.held for layer_cycles in cycles)
                    cost = replace(cost, interval=float(passes_held.mean()), held=passes_held)
            held.append(cost.held)
            emitted.append(cost.emitted)
            for index, layer_cycles in zip(stage.layers, self.counted(stages, number, cycles)):
                layer_estimates.append(
                    LayerEstimate(
                        index=index,
                        name=self.layers[index].name,
                        mode=stage.mode,
                        pes=stage.pes,
                        stage=number,
                        units=stage.units,
                        weight_memory=stage.weight_memory,
                        cycles=layer_cycles,
                        # a dataflow layer is its stage; a sequential one shares its stage's tables and engine
                        resources=cost.resources if stage.mode == DATAFLOW else Resources(),
                    )
                )
            stage_estimates.append(
                StageEstimate(
                    index=number,
                    mode=stage.mode,
                    layers=stage.layers,
                    pes=stage.pes,
                    units=stage.units,
                    weight_memory=stage.weight_memory,
                    channels=stage.channels,
                    interval=cost.interval,
                    latency=cost.latency,
                    resources=cost.resources,
                    load=cost.load,
                    private=stage.private,
                    drain_lanes=stage.drain_lanes,
                )
            )
        chained = self.chained(stages, reader.lanes, deep_channels)
        if in_lockstep(stages):
            interval = chained_interval(reader.held, chained)
        else:
            interval = self.design_interval(*self.tandem_line(stages, held, emitted, deep_channels))
        return DesignEstimate(
            model=self.model.name,
            board=self.board,
            activity=self.activity.source,
            batch=batch,
            edges=self.model.nnz,
            reader=reader,
            layers=tuple(layer_estimates),
            stages=tuple(stage_estimates),
            roofline=self.roofline(),
            interval=interval,
            latency=self.first_result(stages, reader, [estimate.load for estimate in stage_estimates], chained),
            deep_channels=deep_channels,
        )

    def reader_deepening(self, lanes: int, deep: str) -> Resources:
        """What `deep` channels add to the reader: its channel's FIFOs, deeper and in block RAM or
        UltraRAM instead of LUTRAM."""
        return total(self.reader_memories(lanes, deep)) - total(self.reader_memories(lanes))

    def output_deepening(self, stage: Stage, deep: str) -> Resources:
        """What `deep` channels add to `stage`: its output channel's FIFOs (nothing for the model's
        last stage, which drains dense beats). The scheduler prices every candidate's, so this
        builds the channel alone, not the stage's memories."""
        shallow = self.output(stage)
        if isinstance(shallow, DenseOutput):
            return Resources()
        return total(self.output(stage, deep).memories("output")) - total(shallow.memories("output"))

    def output(self, stage: Stage, deep: str | None = None) -> Output:
        """Where `stage` drains: the next stage's channel (a sub-channel per issue unit of a
        dataflow stage, one for a sequential stage), deep or shallow, or dense beats."""
        units = stage.units if stage.mode == DATAFLOW else 1
        return stage_output(self.model, stage.layers[-1], stage.pes, units, deep)

    def counted(self, stages: tuple[Stage, ...], number: int, cycles: list[LayerCycles]) -> list[LayerCycles]:
        """The cycles of stage `number`'s layers as the RTL counts a layer's busy cycles (its
        work, not its waits): a sequential stage's first layer without its wait for the stage's
        serializer, which it spends drained (docs/cost-model.md, "Sequential passes"); a dataflow
        layer fed by a sequential stage at least as long as that stage's serializer takes to hand
        it the vector's items, one a cycle, which its units work on as they come."""
        stage = stages[number]
        producer = stages[number - 1] if number else None
        if stage.mode == SEQUENTIAL:
            return [self.alone(stage)[0], *cycles[1:]]
        if producer is None or producer.mode != SEQUENTIAL:
            return cycles
        items = self.alone(producer)[-1].items
        computes = np.maximum(cycles[0].computes, items)
        bound = INPUT_BOUND if float(items.mean()) > cycles[0].compute else cycles[0].bound
        return [replace(cycles[0], compute=float(computes.mean()), computes=computes, bound=bound)]

    def chained(self, stages: tuple[Stage, ...], in_lanes: int, deep_channels: str | None) -> list[ChainedStage]:
        """The stages of a design as `chained_interval` and `first_result` follow a vector through
        them: each with its cycles alone (no neighbour's throttle: the recursions have the
        neighbours) and the items the channel into it holds."""
        chained = []
        for number, stage in enumerate(stages):
            if number == 0:
                into = reader_channel(self.model.in_features, in_lanes, deep_channels)
            else:
                into = self.output(stages[number - 1], deep_channels)
            buffer = into.depth + CHANNEL_EXTRA_ITEMS  # a sub-channel's: `items` are the busiest serializer's
            if stage.mode == DATAFLOW:
                last = self.dataflow_cycles(stage)
                single = self.shape(stage.layers[0], stage.pes).single_cycle
                compute, tail, drain, last_drain = last.computing, compute_latency(single), 0.0, 0.0
                takes = self.intake(stage)
            else:
                alone = self.alone(stage)
                first, last = alone[0], alone[-1]
                later = sum((cycles.held for cycles in self.passes(stage)[1:]), np.zeros(1))
                compute, tail, takes = first.computes, first.tails, first.computes - first.tails
                drain, last_drain = first.drain + later, last.drain
            chained.append(
                ChainedStage(
                    sequential=stage.mode == SEQUENTIAL,
                    compute=compute,
                    tail=np.atleast_1d(tail),
                    drain=np.atleast_1d(drain),
                    last_drain=last_drain,
                    outputs=last.outputs,
                    items=last.items,
                    takes=takes,
                    buffer=buffer,
                )
            )
        return chained

    def first_result(
        self, stages: tuple[Stage, ...], reader: ReaderCost, loads: list[float], chained: list[ChainedStage]
    ) -> float:
        """Cycles from a batch's start to its first result's last beat, the mean over the sample's
        vectors of each as the batch's first: the vector followed through the stages (`chained`)
        as `chained_interval` follows every vector, nothing ahead of it (docs/cost-model.md,
        "Designs", latency). Each item reaches the next stage L_HAND_OFF after it left. A stage
        starts on its first item, or when its `loads` have ended if later: the loader fills the
        loaded dataflow stages' UltraRAM one after another after the memory's latency; a
        sequential stage loads its tables through its own reader from the batch's start. It
        computes until its last item came and its compute's tail after it, or at its own pace from
        its start if slower (a sequential stage then runs its later passes); its drain's first item
        comes after the drain's latency, its last after the serializers' items, no sooner than the
        next stage takes them (an empty vector's end words at its turn at the drain); the last
        stage drains its dense beats."""
        if not stages:
            raise ValueError("a design has at least one stage")
        first, last = np.full(1, float(L_READER)), L_READER + reader.held
        loading = float(MEMORY_LATENCY)  # where the loader's chain of loads has got to
        for number, (stage, run, load) in enumerate(zip(stages, chained, loads, strict=True)):
            first, last = first + L_HAND_OFF, last + L_HAND_OFF
            empty = False  # the vectors that take no bank: only a dataflow stage's
            if stage.mode == DATAFLOW:
                loading += load
                start = np.maximum(first, loading if load else 0.0)
                cycles = self.dataflow_cycles(stage)
                done = np.maximum(start + cycles.computes, last + run.tail)
                drain_start, result = done, done + cycles.drain_each
                empty = False if cycles.empty is None else cycles.empty
            else:
                start = np.maximum(first, load)
                done = np.maximum(start + L_PASS + run.compute, last + run.tail) + run.drain
                drain_start, result = done - run.last_drain, done
            if number + 1 < len(stages):
                out, items = np.where(empty, L_EMPTY, run.outputs), np.where(empty, 0.0, run.items)
                taker = chained[number + 1]
                first = drain_start + out - items
                last = _handed_on(drain_start + out, items, taker.takes, taker.buffer, 0.0)
        return float(np.mean(result))

    def tandem_line(
        self,
        stages: tuple[Stage, ...],
        held: list[np.ndarray],
        emitted: list[np.ndarray | None],
        deep_channels: str | None,
    ) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
        """The units of `design_interval` (how long each holds each vector), the capacities between
        them and the vectors that take a place there: the reader, then each stage and, where they
        are a unit of their own (`emitted`), its serializers behind its word FIFOs
        (WORD_FIFO_AHEAD), the channel to the next stage between (DEEP_CHANNEL_AHEAD or
        SHALLOW_CHANNEL_AHEAD). A drain writes words only for a vector with a nonzero output."""
        ahead = DEEP_CHANNEL_AHEAD if deep_channels else SHALLOW_CHANNEL_AHEAD
        into = self.placed(stages)  # the vectors that take a place in the channel into each stage
        units, capacities, placed = [held[0]], [], []
        for number, (stage_held, serializers) in enumerate(zip(held[1:], emitted)):
            capacities.append(ahead)
            placed.append(into[number])
            units.append(stage_held)
            if serializers is not None:
                capacities.append(WORD_FIFO_AHEAD)
                placed.append(into[number + 1])  # the design's last stage drains dense beats
                units.append(serializers)
        return units, capacities, placed

    def placed(self, stages: tuple[Stage, ...]) -> list[np.ndarray]:
        """Per vector, whether the reader and each stage but the last take a place in the channel
        behind them (`design_interval`): the reader always (it writes a word for every group of
        every beat), a stage when one of its outputs is nonzero (its drain writes no word without)."""
        placed = [np.ones(1, bool)]
        for stage in stages[:-1]:
            outputs = self.activity.inputs(stage.layers[-1] + 1).rows
            placed.append(outputs.sum(axis=1) > 0)
        return placed

    @staticmethod
    def design_interval(held: list[np.ndarray], capacities: list[int], placed: list[np.ndarray] | None = None) -> float:
        """Cycles between vectors in steady state, from how long the reader and each stage hold
        each vector (docs/cost-model.md, "Designs").

        A tandem line: each unit takes the vectors in order, each as soon as it has finished the
        one before and the unit before has finished it, and holds it until there is room behind:
        channel s lets unit s finish a vector `capacities[s]` vectors before unit s + 1 has
        finished it (SHALLOW_CHANNEL_AHEAD, DEEP_CHANNEL_AHEAD). Only the vectors that take a
        place behind unit s count (`placed[s]`, per vector; all of them by default): a stage's
        drain writes no word for a vector whose outputs are all zero, which leaves its end words
        alone in the word FIFO and the channel. The sample runs TANDEM_PASSES times in a row and
        the interval is the last pass's mean: the first one fills the line, and a sample whose
        first vectors are light (Graph Challenge images that die early) would read as a backlog
        there. It is at least the slowest unit's mean."""
        units = _by_vector(held)
        vectors = units.shape[1]
        bottleneck = float(units.mean(axis=1).max())
        if vectors == 1:
            return bottleneck
        units = np.tile(units, TANDEM_PASSES)
        # behind[s][v]: the vector unit s + 1 must have finished before unit s finishes v, or -1
        behind = np.full((len(capacities), units.shape[1]), -1)
        for s, capacity in enumerate(capacities):
            taking = np.ones(vectors, bool) if placed is None else np.broadcast_to(placed[s], (vectors,))
            order = np.flatnonzero(np.tile(taking, TANDEM_PASSES))  # the vectors that take a place, in turn
            behind[s, order[capacity + 1 :]] = order[: max(0, order.size - capacity - 1)]
        finished = np.zeros_like(units)
        for v in range(units.shape[1]):
            ready = 0.0  # when the unit before has finished vector v
            for s in range(len(units)):
                done = max(finished[s, v - 1] if v else 0.0, ready) + units[s, v]
                if s < len(capacities) and behind[s, v] >= 0:  # room behind: the unit after is far enough
                    done = max(done, finished[s + 1, behind[s, v]])
                finished[s, v] = ready = done
        return max(bottleneck, float(finished[-1, -1] - finished[-1, -vectors - 1]) / vectors)
