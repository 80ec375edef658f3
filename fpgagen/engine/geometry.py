"""The engine's geometry: every memory of a stage, and every width, from a few numbers per layer.

These functions take the shapes below (sizes, beats, widths) and nothing else, so the cost model
can ask them about tens of thousands of candidate stages without building any weight layout, and
the engine plan (`fpgagen.engine.plan`) asks them about the stages of one design with the real
layouts: both see the same memories by construction. docs/engine.md describes the hardware; the
constants below are its fixed parameters, each with the reason for its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from .encoding import Encoding
from .memory import BRAM, LUTRAM, URAM, URAM_DEPTH, URAM_WIDTH, Memory, fits_ramb18, memory_kind

# Values and streams.
VALUE_BITS = 16  # activations travel between stages as 16-bit values (activation widths are at most 16)
MAX_IN_LANES = 16  # input values per AXI4-Stream beat: a 256-bit beat of 16-bit values
READER_GROUPS = 4  # sub-channels the input reader writes: as many activations a cycle as a stage takes (K <= 4)
# The model's last stage drains dense beats of its P values (fg_dense.v): a 1024-bit AXI4-Stream beat at most.
MAX_OUT_LANES = 64
# A dataflow stage's PEs, every unit's (K x P when private): fg_all ANDs their flags in two registered
# levels of two LUTs each, up to 288 of them (fg_stage.v).
MAX_STAGE_PES = 256
# Values of a drained word, whose nonzeros the drain counts in one cycle (fg_stage.v's W2 and
# fg_seq_stage.v's): a dataflow stage's D / K, a sequential stage's P. 32 take 6 LUT levels (Yosys,
# bench_timing's sequential designs at P = 32); 64 took 7 in a sequential stage (narrow_w4a8 at P = 64)
# and 8 in a P = 64, K = 1 dataflow stage draining every lane.
MAX_WORD_VALUES = 32

# FIFOs. Depths of 32 or less are one LUTRAM column (RAM32M16) whatever the depth, so the engine
# takes 32 where more buffering helps at no cost.
CHANNEL_DEPTH = 32  # items a sub-channel buffers between two stages
# A deep channel (the scheduler's choice when block RAM is left: Schedule.deep_channels) buffers
# a whole vector's items or more per sub-channel in block RAM, so that a stage slow on one vector
# does not stall the stages before it (docs/engine.md, "Deep channels"); at least one RAMB18
# (512 x 36) each
DEEP_CHANNEL_DEPTH = 512
CHANNEL_SLACK = 3  # a serializer's item register and the flag's own register
# entries an issue unit can queue at one PE. A PE that falls behind fills its queue and stalls
# every unit; on the 90%-sparse MLP at P=64, K=4 (bench_rtl) 32 gave efficiency 0.85-0.89 and the
# cost model 4-7% short, 64 (one RAM64M8 column per 7 bits instead of RAM32M16 per 14) 0.91-0.95
# (Verilator, 2026-11-28: 902 cycles a vector with 64, 969 with 32). A layer whose rows put at most
# BALANCED_ROW_BEATS entries on any PE loads its PEs evenly, row by row, and a queue of 32 does as
# well: Graph Challenge 1024 x 8, 128 images, 628 -> 629 cycles a vector at P = 40, K = 2; 566 ->
# 567 at P = 40, K = 4; 360 -> 360 at P = 64, K = 4 (pe_fifo_depth).
PE_FIFO_DEPTH = 64
BALANCED_PE_FIFO_DEPTH = 32
BALANCED_ROW_BEATS = 2
PE_SLACK = 8  # entries in flight from an issue decision to the FIFO: ROM (2), entry register, the room AND (3)
ITEM_FIFO_DEPTH = 8  # activations queued at an issue unit, dealt by the merger
ITEM_SLACK = 3  # the merger's register between deciding and routing, and the flag's own register
# vectors between a quiet stage's merger and its drain, a flag each (docs/engine.md, "Empty
# vectors"): empty ones queue there while a vector computes, the drain takes them in turn
ORDER_DEPTH = 16
ROW_FIFO_DEPTH = 8  # looked-up rows waiting for their beats to issue
WORD_FIFO_DEPTH = 32  # drained words waiting for a serializer: the drain runs ahead of sparse outputs
# words in flight: six to the PEs' outputs (seven with stacked banks, one more for drain lanes'
# multiplexer and one a level of a private stage's adder tree: up to nine at K = 4 with drain
# lanes), two word registers, the end word, the flag
DRAIN_SLACK = 13
OUTPUT_DEPTH = 32  # dense output beats buffered in front of AXI4-Stream out (DRAIN_SLACK of them in flight)
READER_WORD_DEPTH = 16  # input beats waiting for their group's serializer

# Sequential stages.
REQUEST_DEPTH = 16  # row reads queued for the AXI master
# Off-chip memory answers a burst MEMORY_LATENCY cycles after its address (HBM at 300 MHz: about
# 330 ns; the testbench's memory model and the cost model assume it). To keep the channel busy
# meanwhile, the reader keeps MAX_BURSTS bursts in flight: with rows of two or three beats, more
# than the channel delivers in MEMORY_LATENCY cycles (at most one beat a cycle).
MEMORY_LATENCY = 100
# Rows of one beat (Graph Challenge at P=32) at 0.75 beats a cycle need about 90 bursts in flight
# to cover MEMORY_LATENCY and the read path's own cycles.
MAX_BURSTS = 128  # AXI4 read bursts in flight
# Activations waiting for their rows' beats: one per burst in flight, and the 7 lookups that may
# be on their way when the FIFO's room flag is seen (fg_seq_stage.v, SLACK).
ACTIVATION_DEPTH = MAX_BURSTS + 7
AXI_ADDRESS_BITS = 64  # byte addresses of the AXI4 master
MAX_BURST_BEATS = 256  # AXI4 INCR bursts are at most 256 beats
AXI_PAGE = 4096  # AXI4 bursts may not cross a 4 KB boundary; sequential layers start on one
DESCRIPTOR_FIELDS = 8  # a layer's n_out, addresses, row and bias offsets, base (2 words), shift, clamp
DESCRIPTOR_FIELD_BITS = 32
TABLE_SLOT_BITS = 32  # off-chip field of a row-table entry, and the unit of a bias value's field
# An off-chip slot is a little-endian field of 8, 16 or 32 bits, the narrowest its stage's
# {valid, local, weight} fit: a sequential stage is bound by its channel, and every bit of a slot
# is read once per nonzero input (2 or 4 times fewer bytes than 32-bit slots for 8-bit weights).
OFFCHIP_SLOT_WIDTHS = (8, 16, 32)
# An AXI4 master's data: the HBM and DDR ports of Vitis platforms take at most 512 bits, so a
# sequential stage of 16-bit slots may have 32 PEs on one channel.
MAX_PORT_BITS = 512
# Memory channels a sequential stage's beats may be striped over (docs/engine.md, "Striped
# channels"): each channel holds a share of every beat, PEs c*P/C .. (c+1)*P/C-1 of channel c. Two
# keep a 512-bit beat busy (one U280 HBM pseudo channel delivers 0.75 of it a cycle at 300 MHz) and
# carry the widest the engine builds (P = 32, 32-bit slots, 1024 bits) at 0.75. Not four: joining
# four channels' valid flags with the stage's readiness, and a 64-bit port's page arithmetic, made
# 7 LUT levels (Yosys, the test MLP narrow_w4a8 on four 64-bit ports), above the engine's 6.
STRIPES = (1, 2)

MIN_ACC_BITS = 2  # a layer whose sums are all tiny still gets a sign bit and a magnitude bit
UNITS = (1, 2, 4)  # issue units of a dataflow stage: a block RAM port each, two per copy of its ROMs
# Groups of PEs a dataflow stage's drain may read in turn, each of drain_lanes = P / steps lanes
# (docs/engine.md, "Drain lanes"): a power of two, so that the drain's row holds the PEs' address
# and the group in its bits, and at most 8, whose 8:1 multiplexer before the requantizers is two
# LUTs and a MUXF7 a bit.
DRAIN_STEPS = (1, 2, 4, 8)


def bits_for(value: int) -> int:
    """Width of an unsigned field that holds 0..value (at least one bit)."""
    return max(1, int(value).bit_length())


def log2(value: int) -> int:
    """The exponent of a power of two."""
    return int(value).bit_length() - 1


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def in_lanes(in_features: int) -> int:
    """Values per input beat: the next power of two >= N_in, at most MAX_IN_LANES."""
    return min(MAX_IN_LANES, 1 << max(0, (in_features - 1).bit_length()))


def accumulator_bits(exact_bits: int) -> int:
    """The accumulator width of a layer: its exact worst-case bound (docs/numerics.md). Products
    wider than it wrap, which is exact because the true sum fits."""
    return max(MIN_ACC_BITS, exact_bits)


def sum_bits(acc_bits: int, encoding: Encoding) -> int:
    """The accumulators' width: a layer's exact bound, less what its encoding leaves to the drain."""
    return max(MIN_ACC_BITS, acc_bits - encoding.sum_narrowing)


def rom_copies(units: int) -> int:
    """Copies of a stage's row table and weight ROM: a block RAM gives two units a port each."""
    return ceil_div(units, 2)


def rom_ports(units: int) -> int:
    """Read ports of each copy."""
    return min(2, units)


@dataclass(frozen=True)
class SlotWord:
    """One PE's slot of a weight beat, {valid, local address, weight} from the top bit down."""

    local_bits: int
    weight_bits: int

    @property
    def width(self) -> int:
        return 1 + self.local_bits + self.weight_bits


def offchip_slot(local_bits: int, weight_bits: int) -> SlotWord:
    """The off-chip slot of a stage whose PEs have `local_bits`-bit addresses and whose weights are
    `weight_bits` wide: the narrowest of OFFCHIP_SLOT_WIDTHS (a power of two beyond them, which no
    stage can take: SequentialShape.buildable), its local field padded to fill it."""
    needed = 1 + local_bits + weight_bits
    width = next((w for w in OFFCHIP_SLOT_WIDTHS if needed <= w), 1 << (needed - 1).bit_length())
    return SlotWord(width - 1 - weight_bits, weight_bits)


def entry_bits(local_bits: int, weight_bits: int) -> int:
    """An entry of a PE's FIFO: {local address, weight, activation}. An activation of zero marks an
    end entry (only nonzero ones are issued), and the PE knows each FIFO's bank (fg_pe.v)."""
    return local_bits + weight_bits + VALUE_BITS


@dataclass(frozen=True)
class LogicShape:
    """What a stage's logic is sized by; the cost model prices it (`engine_logic`).

    All P PEs are built and kept by synthesis, FIFOs and banks, even a PE that holds no output
    (its end entries and the drain's reads of it are live). What synthesis does remove is the
    issue side of a PE whose weight slots are all empty, and its multiplier, whose product is
    always zero: `fed_pes` counts the others (Yosys on the test MLPs: sequential_middle, whose last
    stage has 16 PEs for 5 outputs, 15 DSP48E2s, 2 + 8 + 5, where one a PE said 26; dataflow_only,
    64 PEs for 11 outputs in its last stage, 14 where one a PE said 67).
    """

    pes: int
    fed_pes: int  # PEs whose slot of a weight beat can be valid: the issue path synthesis keeps
    units: int
    acc_bits: int  # the accumulators' width (the sums' bits of the encoding)
    entry_bits: int
    slot_bits: int  # a PE's slot of a weight beat {valid, local address, weight}
    multipliers: int  # DSPs: one per fed PE, unless the encoding has no multiplier
    lookup_luts: int = 0  # per PE: its codebook, a table of constants (one LUT per weight bit)
    channels: int = 1  # a sequential stage's memory channels: an AXI reader and its addresses each
    stacked: bool = False  # the PEs' two banks in one memory: no multiplexers between them
    single_cycle: bool = False  # banks in LUT RAM, no multiplier: the one-cycle read-modify-write
    private: bool = False  # each unit has pes / units PEs of its own, without FIFOs (Stage.private)
    drain_lanes: int = 0  # what the drain requantizes a cycle (Stage.drain_lanes); 0: all `lanes`
    # the dense beats' rotator (the model's last layer, rotated: fg_dense.v): its lanes (0: none),
    # levels, and the local addresses of its table of rotations
    rotated_lanes: int = 0
    rotated_levels: int = 0
    rotated_addresses: int = 0

    @property
    def lanes(self) -> int:
        """The outputs an address of the drain holds: one per PE, or per PE of a unit when private."""
        return self.pes // self.units if self.private else self.pes

    @property
    def drained(self) -> int:
        """The requantizers: lanes the drain takes a cycle."""
        return self.drain_lanes or self.lanes

    @property
    def drain_steps(self) -> int:
        """Groups of PEs the drain reads in turn, through a multiplexer before its requantizers."""
        return self.lanes // self.drained

    @classmethod
    def sized(
        cls, pes: int, fed_pes: int, units: int, acc_bits: int, local_bits: int, encoding: Encoding
    ) -> LogicShape:
        """The logic of PEs whose entries and weight slots carry `local_bits`-bit addresses, with
        weights in `encoding`."""
        weight_bits = encoding.weight_bits
        slot = SlotWord(local_bits, weight_bits).width
        multipliers = fed_pes if encoding.multiplies else 0
        entry = entry_bits(local_bits, weight_bits)
        return cls(pes, fed_pes, units, acc_bits, entry, slot, multipliers, encoding.codebook_bits)


@dataclass(frozen=True)
class Channel:
    """Activation vectors of `length` values between two stages, over `subs` sub-channel FIFOs.

    A sub-channel carries items {end, index, value}: the nonzero activations its producer's group
    found, then one end item per vector. The consumer's merger deals them to its issue units.
    """

    subs: int
    length: int
    depth: int = CHANNEL_DEPTH  # items per sub-channel: CHANNEL_DEPTH, or `deep_depth` when deep
    memory: str | None = None  # a deep channel's kind of memory, the schedule's (None: by its size)

    @property
    def index_bits(self) -> int:
        return bits_for(self.length - 1)

    @property
    def item_bits(self) -> int:
        return 1 + self.index_bits + VALUE_BITS

    @property
    def vector_items(self) -> int:
        """The most items a vector puts on one sub-channel: every value of its group nonzero, and
        the end item."""
        return ceil_div(self.length, self.subs) + 1

    @property
    def deep_depth(self) -> int:
        """The depth of this channel when deep: a whole vector's items, in a power of two, and at
        least DEEP_CHANNEL_DEPTH."""
        return max(DEEP_CHANNEL_DEPTH, 1 << (self.vector_items - 1).bit_length())

    def memories(self, role: str) -> list[Memory]:
        if self.memory is not None:
            return [Memory(f"{role} items", self.depth, self.item_bits, self.memory, self.subs)]
        return [Memory.sized(f"{role} items", self.depth, self.item_bits, self.subs)]


@dataclass(frozen=True)
class DenseOutput:
    """The model's last stage drains dense beats of P values into a FIFO in front of AXI4-Stream
    out, TLAST beside them."""

    pes: int

    @property
    def beat_bits(self) -> int:
        return VALUE_BITS * self.pes

    def memories(self) -> list[Memory]:
        return [Memory.sized("output beats", OUTPUT_DEPTH, self.beat_bits + 1)]


Output = Channel | DenseOutput


@dataclass(frozen=True)
class Groups:
    """How a drain (or the reader) splits a word of `width` values into `count` serialized groups."""

    width: int  # values per word: the PEs, or the values of an input beat
    count: int  # groups, one sub-channel each
    base_bits: int  # bits of a word's number (its local address, or its beat)

    @property
    def size(self) -> int:
        return self.width // self.count

    @property
    def count_bits(self) -> int:
        return bits_for(self.size)

    @property
    def position_bits(self) -> int:
        """Bits of a value's position in its group: 0 .. size - 1."""
        return bits_for(self.size - 1)

    @property
    def word_bits(self) -> int:
        """A word {end, base, count, mask, values}."""
        return 1 + self.base_bits + self.count_bits + self.size + self.size * VALUE_BITS


def drain_memories(
    groups: Groups, output: Output, word_depth: int = WORD_FIFO_DEPTH, uram: bool = False
) -> list[Memory]:
    """A drain's word FIFOs (`word_depth` deep, in UltraRAM when `uram` and large) and what it
    writes into: its output channel, or dense beats."""
    if isinstance(output, DenseOutput):
        return output.memories()
    return [
        Memory.written("drained words", word_depth, groups.word_bits, uram, groups.count),
        *output.memories("output"),
    ]


@dataclass(frozen=True)
class LayerShape:
    """A layer on P PEs, as far as the hardware's sizes go."""

    n_in: int
    n_out: int
    pes: int
    beats: int  # the weight image's depth: sum over rows of beats_i (fpgagen.engine.layout)
    max_row_beats: int
    acc_bits: int  # accumulator_bits of the layer: its sums of products, bias and rounding included
    weight_bits: int  # the weights' format: an off-chip slot holds them in any case
    encoding: Encoding  # its slots on chip (a dataflow stage)
    one_bias: bool = False  # every output has the same bias (every Graph Challenge layer's)
    # the model's last layer, its outputs rotated over the PEs: the rotator's levels (0: in place;
    # fpgagen.engine.relabel.rotation_levels)
    rotation_levels: int = 0

    @property
    def sum_bits(self) -> int:
        """A dataflow stage's accumulators: the sums its encoding leaves to the PEs."""
        return sum_bits(self.acc_bits, self.encoding)

    @property
    def addresses(self) -> int:
        """Local addresses of a PE: accumulator (and bias) entries, ceil(N_out / P)."""
        return ceil_div(self.n_out, self.pes)

    @property
    def local_bits(self) -> int:
        return bits_for(self.addresses - 1)

    @property
    def slot(self) -> SlotWord:
        return SlotWord(self.local_bits, self.encoding.weight_bits)

    @property
    def stacked(self) -> bool:
        """A dataflow stage's PEs keep both banks in one memory (`stacked_banks`)."""
        return stacked_banks(self.addresses, self.sum_bits)

    @property
    def row_bits(self) -> int:
        """A weight row (a beat of its layout): the P slots side by side, PE 0's lowest."""
        return self.pes * self.slot.width

    @property
    def fed_pes(self) -> int:
        """PEs that hold outputs, min(P, N_out): the others' columns of the weight ROM are empty, so
        synthesis trims their issue path and the scheduler must not pay for it."""
        return min(self.pes, self.n_out)

    @property
    def single_cycle(self) -> bool:
        """The PEs' read-modify-write takes one cycle (`single_cycle`)."""
        return single_cycle(self.addresses, self.sum_bits, self.encoding)

    def logic(self, units: int, private: bool = False, drain_lanes: int | None = None) -> LogicShape:
        """The logic of a dataflow stage running this layer with K issue units, each with P PEs of
        its own when `private`, its drain taking `drain_lanes` a cycle (None: P)."""
        copies = units if private else 1
        logic = LogicShape.sized(
            self.pes * copies, self.fed_pes * copies, units, self.sum_bits, self.local_bits, self.encoding
        )
        drained = 0 if drain_lanes in (None, self.pes) else drain_lanes
        return replace(
            logic,
            stacked=self.stacked,
            single_cycle=self.single_cycle,
            private=private,
            drain_lanes=drained,
            **self.rotator,
        )

    @property
    def rotator(self) -> dict[str, int]:
        """The LogicShape fields of the dense beats' rotator of a rotated layer (none otherwise)."""
        if not self.rotated:
            return {}
        return {"rotated_lanes": self.pes, "rotated_levels": self.rotation_levels, "rotated_addresses": self.addresses}

    @property
    def rotated(self) -> bool:
        """The model's last layer, its outputs rotated over the PEs (docs/engine.md, "Rotated outputs")."""
        return self.rotation_levels > 0

    def drain_rows(self, drain_lanes: int | None = None) -> int:
        """What a dataflow stage's drain reads per vector: each local address of every group of
        `drain_lanes` PEs, a row a cycle; row r holds outputs r * drain_lanes onwards."""
        return self.addresses * (self.pes // (drain_lanes or self.pes))

    def drain_groups(self, units: int, drain_lanes: int | None = None) -> Groups:
        """How a dataflow stage's drain splits a row of `drain_lanes` outputs (None: P) among its K
        serializers, a word's base the row's number."""
        lanes = drain_lanes or self.pes
        return Groups(lanes, units, bits_for(self.drain_rows(lanes) - 1))

    def bias_rows(self, drain_lanes: int | None = None) -> int:
        """Rows of a dataflow stage's bias table: one word of `drain_lanes` biases (None: P) per
        drain row, or one word for all when the biases are one value (the drain skips outputs past
        N_out, so the last row's padding can hold it too)."""
        return 1 if self.one_bias else self.drain_rows(drain_lanes)

    @property
    def rom_beats(self) -> int:
        """Depth of an on-chip weight ROM: a layer without weights keeps one all-invalid beat."""
        return max(1, self.beats)

    @property
    def start_bits(self) -> int:
        return bits_for(self.beats)

    @property
    def count_bits(self) -> int:
        return bits_for(self.max_row_beats)


def drain_lane_choices(layer: LayerShape, units: int, last: bool) -> tuple[int, ...]:
    """The lanes a dataflow stage's drain may take a cycle (DRAIN_STEPS): P / steps, whole groups of
    the K serializers, each word of at most MAX_WORD_VALUES values. The model's last layer drains
    dense beats of P values (no words), and stacked banks lend the drain one MAC slot an address:
    both take all P at once; stacked banks only where the words stay short enough (none else)."""
    if last:
        return (layer.pes,)
    lanes = [
        layer.pes // steps
        for steps in ((1,) if layer.stacked else DRAIN_STEPS)
        if layer.pes % steps == 0 and (layer.pes // steps) % units == 0
    ]
    return tuple(d for d in lanes if d // units <= MAX_WORD_VALUES)


def stacked_banks(addresses: int, acc_bits: int) -> bool:
    """Whether a dataflow stage's PEs keep both accumulator banks in one memory, the bank its top
    address bit (docs/engine.md, "Stacked banks"): when a bank alone would be block RAM, and one
    RAMB18 holds both. Each bank of its own would take a block half empty; stacked, the drain's
    reads take slots of the MAC pipeline (a block RAM has one read and one write port, and the
    MAC's read-modify-write takes both every cycle): a cycle a local address, per vector."""
    return memory_kind(addresses, acc_bits) == BRAM and fits_ramb18(2 << bits_for(addresses - 1), acc_bits)


def single_cycle(addresses: int, acc_bits: int, encoding: Encoding) -> bool:
    """Whether a PE's read-modify-write takes one cycle, with nothing to forward (docs/engine.md,
    "Processing elements"): when its banks, words of the sum and a valid bit, are LUT RAM, which
    reads without a clock, and it has no multiplier. A PE that multiplies keeps the pipeline: the
    first one-cycle PE, an adder a bank, took more LUTs there than the forwarding (Yosys: the test
    MLPs dataflow_only and sequential_only +7% and +10%); the one-adder PE is not measured there."""
    return memory_kind(addresses, acc_bits + 1) == LUTRAM and not encoding.multiplies


def pe_fifo_depth(max_row_beats: int) -> int:
    """The depth of a PE's entry FIFOs for a layer whose rows take at most `max_row_beats` beats
    (the most entries a row puts on one PE): shallow when every row loads the PEs about evenly."""
    return BALANCED_PE_FIFO_DEPTH if max_row_beats <= BALANCED_ROW_BEATS else PE_FIFO_DEPTH


def pe_memories(
    pes: int,
    units: int,
    addresses: int,
    local_bits: int,
    weight_bits: int,
    acc_bits: int,
    stacked: bool = False,
    single: bool = False,
    fifo_depth: int = PE_FIFO_DEPTH,
    private: bool = False,
) -> list[Memory]:
    """The PEs' FIFOs (one per issue unit at every PE, `fifo_depth` entries) and their two
    accumulator banks, each a memory of its own, or `stacked` in one: `2 << local_bits` words, the
    bank the top address bit. A `single`-cycle PE's words carry a valid bit beside the sum (fg_pe.v).
    `private`: each unit has `pes` PEs of its own, which take its entries without a FIFO."""
    if private:
        banks = Memory.sized("accumulators", addresses, acc_bits + int(single), 2 * pes * units)
        return [banks]
    if stacked:
        banks = Memory.sized("accumulators", 2 << local_bits, acc_bits, pes)
    else:
        banks = Memory.sized("accumulators", addresses, acc_bits + int(single), 2 * pes)
    return [Memory.sized("PE entries", fifo_depth, entry_bits(local_bits, weight_bits), units * pes), banks]


def load_port_bits(row_bits: int) -> int:
    """The data width of the AXI4 master that loads weight rows of `row_bits` (a row a beat): a
    power of two of at least 32 bits."""
    return max(32, 1 << (row_bits - 1).bit_length())


def loaded_weights(layer: LayerShape, units: int) -> Memory:
    """A dataflow stage's weights in UltraRAM, which the load phase fills: a copy per issue unit
    (the load writes through the other port of the block), a row of P slots a word."""
    return Memory("weights", layer.rom_beats, layer.row_bits, URAM, units)


def loadable(layer: LayerShape) -> bool:
    """Whether a dataflow stage's weights may go to UltraRAM: a row fits one beat of the load's
    port, as a ROM they would be block RAM, and they fill at least a quarter of the UltraRAM
    blocks they take (4096 x 72 each: a shallow table wastes most of them). The scheduler then
    chooses between the two by the board's budget."""
    width = layer.row_bits
    if load_port_bits(width) > MAX_PORT_BITS:
        return False
    blocks = ceil_div(width, URAM_WIDTH) * ceil_div(layer.rom_beats, URAM_DEPTH)
    return (
        memory_kind(layer.rom_beats, width) == BRAM and blocks * URAM_DEPTH * URAM_WIDTH <= 4 * layer.rom_beats * width
    )


def dataflow_memories(
    layer: LayerShape,
    units: int,
    input_index_bits: int,
    output: Output,
    loaded: bool = False,
    private: bool = False,
    drain_lanes: int | None = None,
    passes_empty: bool = False,
) -> list[Memory]:
    """A dataflow stage of K issue units: its row table and weight ROM (a copy per two units), or
    its `loaded` weights in UltraRAM, bias ROM (a word of `drain_lanes` biases a drain row, a
    constant when it is one word), the units' activation and row FIFOs, the PEs' FIFOs and banks
    (or each unit's `private` PEs' banks), and its drain (`drain_lanes` a cycle; None: P); and the
    order of vectors where empty vectors pass its banks (`passes_empty`)."""
    pes, copies, ports = layer.pes, rom_copies(units), rom_ports(units)
    lanes = drain_lanes or pes
    row_bits = layer.start_bits + layer.count_bits
    bias_bits = lanes * layer.acc_bits
    if layer.bias_rows(lanes) == 1:
        bias = Memory.constant("bias", bias_bits)
    else:
        bias = Memory.sized("bias", layer.bias_rows(lanes), bias_bits)
    return [
        Memory.sized("row table", layer.n_in, row_bits, copies, ports),
        loaded_weights(layer, units)
        if loaded
        else Memory.sized("weights", layer.rom_beats, layer.row_bits, copies, ports),
        bias,
        Memory.sized("unit activations", ITEM_FIFO_DEPTH, 1 + input_index_bits + VALUE_BITS, units),
        Memory.sized("unit rows", ROW_FIFO_DEPTH, 1 + row_bits + VALUE_BITS, units),
        *pe_memories(
            pes,
            units,
            layer.addresses,
            layer.local_bits,
            layer.encoding.weight_bits,
            layer.sum_bits,
            layer.stacked,
            layer.single_cycle,
            pe_fifo_depth(layer.max_row_beats),
            private,
        ),
        *drain_memories(layer.drain_groups(units, lanes), output, drained_words(pes, lanes)),
        *([Memory.sized("vector order", ORDER_DEPTH, 1)] if passes_empty else []),
    ]


def drained_words(pes: int, drain_lanes: int) -> int:
    """The depth of a dataflow drain's word FIFOs: WORD_FIFO_DEPTH words of P / K values, or as
    many values in words of D / K (drain lanes): how far the drain runs ahead of its serializers,
    which lets the stage finish vectors ahead of the next (docs/engine.md, "Deep channels"; with
    32 words of a quarter of the values, bench_rtl's GC 1024 x 8 at P = 64 ran 12% slower)."""
    return WORD_FIFO_DEPTH * (pes // drain_lanes)


def stripable(beat_bytes: int, pes: int, channels: int) -> bool:
    """Whether beats of `beat_bytes` over P slots can be striped over `channels`: a count of
    STRIPES, at most P (a channel holds whole slots), each channel's port at most MAX_PORT_BITS."""
    return channels in STRIPES and channels <= pes and 8 * beat_bytes <= channels * MAX_PORT_BITS


@dataclass(frozen=True)
class SequentialShape:
    """A sequential stage running a run of layers on P PEs: what its shared tables and engine are
    sized by. `then` adds the next layer of the run, so all runs from one layer cost O(layers)."""

    pes: int
    channels: int = 1  # memory channels its beats are striped over
    layers: int = 0
    rows: int = 0  # row-table entries: the layers' inputs, stacked
    bias_rows: int = 0  # bias-table entries: the layers' local addresses, stacked
    start_bits: int = 1
    count_bits: int = 1
    acc_bits: int = MIN_ACC_BITS
    weight_bits: int = 1
    shared: int | None = None  # the one weight every layer's nonzeros share (None: they do not)
    addresses: int = 1  # the widest layer's local addresses
    looped: int = 0  # the longest vector a layer hands to the next one of the run (0: none)
    input_bits: int = 1  # index bits of the widest vector a pass reads
    last: LayerShape | None = field(default=None, compare=False)

    @classmethod
    def of(cls, pes: int, layers: list[LayerShape], channels: int = 1) -> SequentialShape:
        """The stage running `layers` in turn on P PEs, its beats striped over `channels`."""
        shape = cls(pes, channels)
        for layer in layers:
            shape = shape.then(layer)
        return shape

    def then(self, layer: LayerShape) -> SequentialShape:
        looped = self.looped if self.last is None else max(self.looped, self.last.n_out)
        scale = layer.encoding.scale if layer.encoding.positions_only else None
        return SequentialShape(
            pes=self.pes,
            channels=self.channels,
            layers=self.layers + 1,
            rows=self.rows + layer.n_in,
            bias_rows=self.bias_rows + layer.addresses,
            start_bits=max(self.start_bits, layer.start_bits),
            count_bits=max(self.count_bits, layer.count_bits),
            acc_bits=max(self.acc_bits, layer.acc_bits),
            weight_bits=max(self.weight_bits, layer.weight_bits),
            shared=scale if self.last is None or scale == self.shared else None,
            addresses=max(self.addresses, layer.addresses),
            looped=looped,
            input_bits=max(self.input_bits, bits_for(layer.n_in - 1)),
            last=layer,
        )

    @cached_property  # asked for hundreds of thousands of times by the scheduler's runs
    def local_bits(self) -> int:
        return bits_for(self.addresses - 1)

    def logic(self) -> LogicShape:
        """The shared engine's logic: one issue path, and every PE fed, since the slots come from
        the memory port, where synthesis cannot see which stay empty. Priced as slots with
        weights whatever the encoding, with the multipliers the encoding needs: Yosys keeps as
        many LUTs for a positions-only stage (GC 1024 x 3 at P=16: 8,423 against 8,311 with
        weights), where pricing its narrower slots put the model at 0.71 of Yosys."""
        priced = LogicShape.sized(self.pes, self.pes, 1, self.acc_bits, self.local_bits, Encoding(self.weight_bits))
        return replace(
            priced,
            multipliers=self.pes if self.encoding.multiplies else 0,
            channels=self.channels,
            single_cycle=self.single_cycle,
            **(self.last.rotator if self.last is not None else {}),
        )

    @property
    def single_cycle(self) -> bool:
        """The PEs' read-modify-write takes one cycle (`single_cycle`)."""
        return single_cycle(self.addresses, self.sum_bits, self.encoding)

    @cached_property  # asked for hundreds of thousands of times by the scheduler's runs
    def encoding(self) -> Encoding:
        """Positions only when every layer's nonzeros share one weight (every Graph Challenge
        layer's is 1/16): the PEs' constant, as in a dataflow stage. Otherwise every slot carries
        its weight, in the layers that share one value or a few too: the PEs' constant and
        codebook are the stage's, not a layer's."""
        if self.shared is not None:
            return Encoding(0, self.shared)
        return Encoding(self.weight_bits)

    @property
    def sum_bits(self) -> int:
        """The accumulators: sums of products, or of bare activations 2^k times smaller when the
        shared weight is +-2^k."""
        return sum_bits(self.acc_bits, self.encoding)

    @cached_property
    def loop(self) -> Channel | None:
        """The loop-back FIFO's items, sized for the longest vector it carries; none for one layer."""
        return Channel(1, self.looped) if self.looped else None

    @property
    def word_depth(self) -> int:
        """The drained words' FIFO holds a whole pass's words and its end word beside its slack:
        a drain never waits for the serializer, so the next pass starts as soon as the drain has
        read the banks and takes the loop-back items while the serializer emits them. With
        WORD_FIFO_DEPTH words GC 1024's deeper passes at P=32 drained in 190-310 cycles instead
        of 41, waiting for the serializer (bench_rtl)."""
        return max(WORD_FIFO_DEPTH, self.addresses + 1 + DRAIN_SLACK)

    @property
    def loop_depth(self) -> int:
        """The next pass reads none of a pass's outputs before that pass's drain has ended, and
        the drain ends only when its words have passed the serializer's word FIFO: the loop-back
        FIFO holds a whole vector and its end item, with the slack its room flag keeps."""
        return self.looped + 1 + CHANNEL_SLACK

    @cached_property  # asked for hundreds of thousands of times by the scheduler's runs
    def slot(self) -> SlotWord:
        """The stage's off-chip slots: every layer's weights in one format, as the port is one."""
        return offchip_slot(self.local_bits, self.encoding.weight_bits)

    @property
    def beat_bytes(self) -> int:
        """A beat the stage takes: P off-chip slots, a share from each of its channels."""
        return self.slot.width // 8 * self.pes

    @property
    def port_bytes(self) -> int:
        """A beat of one channel's memory port: P / channels slots."""
        return self.beat_bytes // self.channels

    def striped(self, channels: int) -> SequentialShape:
        """The same stage with its beats striped over `channels`."""
        return replace(self, channels=channels)

    @property
    def buildable(self) -> bool:
        """Whether its slots are one of OFFCHIP_SLOT_WIDTHS and its beats can be striped over its
        channels (`stripable`). A longer run of layers never is when a shorter one is not: its slots
        only widen."""
        return self.slot.width <= OFFCHIP_SLOT_WIDTHS[-1] and stripable(self.beat_bytes, self.pes, self.channels)

    @property
    def table_parts(self) -> int:
        """Port beats in a beat of the tables, whose fields stay TABLE_SLOT_BITS wide."""
        return TABLE_SLOT_BITS // self.slot.width

    @property
    def row_bits(self) -> int:
        """A row-table entry {start, beats}; the load phase reads it from a TABLE_SLOT_BITS field."""
        return self.start_bits + self.count_bits

    @property
    def row_table_beats(self) -> int:
        """Off-chip beats of the row tables: TABLE_SLOT_BITS-bit entries, P to a beat."""
        return ceil_div(self.rows, self.pes)

    @property
    def bias_slot_bits(self) -> int:
        """The off-chip field of one bias value: whole 32-bit words, so a bias row of P values is
        a whole number of beats."""
        return TABLE_SLOT_BITS * ceil_div(self.acc_bits, TABLE_SLOT_BITS)

    @property
    def table_beats(self) -> int:
        """The tables' beats of TABLE_SLOT_BITS-bit fields, P to a beat: the row tables, then the
        bias rows."""
        return self.row_table_beats + self.bias_beats

    @property
    def load_beats(self) -> int:
        """The port beats the load phase reads: `table_parts` for each beat of the tables."""
        return self.table_beats * self.table_parts

    @property
    def load_register_bits(self) -> int:
        """The load phase's registers (fg_seq_stage.v): a row-table beat and a bias row on their way
        in, the port beats of a table beat so far and their 2-bit count, the written entry and the
        tables' addresses, four beat counters, the read address, and seven flags."""
        row_address, bias_address = bits_for(self.rows - 1), bits_for(self.bias_rows - 1)
        beats = TABLE_SLOT_BITS * self.pes * (1 + self.bias_words) + 8 * (self.table_parts - 1) * self.beat_bytes
        return beats + 2 + self.row_bits + 2 * row_address + 2 * bias_address + 4 * 32 + AXI_ADDRESS_BITS + 7

    @property
    def load_cycles(self) -> int:
        """The load phase: the first beat's memory latency, then a row-table entry (P a beat,
        padding included) or a port beat a cycle, whichever is slower (fg_seq_stage.v)."""
        return (
            MEMORY_LATENCY + self.row_table_beats * max(self.pes, self.table_parts) + self.bias_beats * self.table_parts
        )

    @property
    def bias_words(self) -> int:
        """32-bit words of a bias value off chip: a bias row of P values is this many beats."""
        return self.bias_slot_bits // TABLE_SLOT_BITS

    @property
    def bias_beats(self) -> int:
        return self.bias_rows * self.bias_words

    @property
    def request_bits(self) -> int:
        """A row read on one channel: its byte address and beats."""
        return AXI_ADDRESS_BITS + self.count_bits

    @property
    def activation_bits(self) -> int:
        """An activation waiting for its row: its value and the row's beats."""
        return VALUE_BITS + self.count_bits


def sequential_memories(stage: SequentialShape, output: Output, uram: bool) -> list[Memory]:
    """A sequential stage: the descriptors, row tables and biases of all its layers, stacked (the
    tables filled by the load phase, in UltraRAM when `uram` and large); its activation FIFO; its
    read queues (row requests, one per channel); one set of PE FIFOs and banks for its widest layer; its loop-back FIFO and its
    drain, whose FIFOs hold a whole vector and a whole pass (in UltraRAM too when large: a FIFO
    needs no initial contents). No weights: they stream from off chip."""
    pes = stage.pes
    memories = [
        Memory.sized("descriptors", stage.layers, DESCRIPTOR_FIELDS * DESCRIPTOR_FIELD_BITS),
        Memory.written("row table", stage.rows, stage.row_bits, uram),
        Memory.written("bias", stage.bias_rows, pes * stage.acc_bits, uram),
        Memory.sized("unit activations", ITEM_FIFO_DEPTH, 1 + stage.input_bits + VALUE_BITS),
        Memory.sized("row requests", REQUEST_DEPTH, stage.request_bits, stage.channels),  # one per channel
        Memory.sized("waiting activations", ACTIVATION_DEPTH, stage.activation_bits),
        *pe_memories(
            pes,
            1,
            stage.addresses,
            stage.local_bits,
            stage.encoding.weight_bits,
            stage.sum_bits,
            single=stage.single_cycle,
        ),
    ]
    groups = Groups(pes, 1, stage.local_bits)
    if stage.loop is not None:
        memories.append(Memory.written("loop-back items", stage.loop_depth, stage.loop.item_bits, uram))
        if isinstance(output, DenseOutput):  # the words of the layers before the last are serialized
            memories.append(Memory.written("drained words", stage.word_depth, groups.word_bits, uram))
    return memories + drain_memories(groups, output, stage.word_depth, uram)


def reader_memories(channel: Channel, lanes: int) -> list[Memory]:
    """The input reader: its groups' beat FIFOs, and the first channel."""
    groups = Groups(lanes, channel.subs, bits_for(ceil_div(channel.length, lanes) - 1))
    return [
        Memory.sized("input words", READER_WORD_DEPTH, groups.word_bits, groups.count),
        *channel.memories("input"),
    ]
