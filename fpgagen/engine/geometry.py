"""The engine's geometry: every memory of a stage, and every width, from a few numbers per layer.

These functions take the shapes below (sizes, beats, widths) and nothing else, so the cost model
can ask them about tens of thousands of candidate stages without building any weight layout, and
the engine plan (`fpgagen.engine.plan`) asks them about the stages of one design with the real
layouts: both see the same memories by construction. docs/engine.md describes the hardware;
the constants below are its fixed parameters, each with the reason for its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .memory import REGISTERS, Memory

VALUE_BITS = 16  # activations travel between stages as 16-bit values (activation widths are at most 16)
MAX_IN_LANES = 16  # input reader lanes: a 256-bit AXI4-Stream beat of 16-bit values
MASK_DEPTH = 4  # masks a channel buffers: the vectors that can be in flight between two stages
OUTPUT_DEPTH = (
    4  # dense output beats buffered in front of AXI4-Stream out, so a stalled host does not stop the drain at once
)
ROW_TASK_DEPTH = 4  # HLS: row tasks between the row reader and the MAC loop (the RTL's S1 -> S2 registers)
REQUEST_DEPTH = 16  # row reads a sequential stage queues for its AXI master: as many as bursts in flight
MAX_BURSTS = 16  # AXI4 read bursts in flight, enough to cover the memory latency with short rows
ACTIVATION_DEPTH = 32  # activations waiting for their rows' beats: two per burst in flight
AXI_ADDRESS_BITS = 64  # byte addresses of the AXI4 master
MAX_BURST_BEATS = 256  # AXI4 INCR bursts are at most 256 beats
AXI_PAGE = 4096  # AXI4 bursts may not cross a 4 KB boundary; sequential layers start on one
DESCRIPTOR_FIELDS = (
    8  # a sequential layer's parameters: n_out, addresses, row and bias offsets, base (2 words), shift, clamp
)
DESCRIPTOR_FIELD_BITS = 32
OFFCHIP_WEIGHT_BITS = 16  # off-chip slot {valid, local, weight}: one little-endian 32-bit word
OFFCHIP_LOCAL_BITS = 15
MIN_ACC_BITS = 2  # a layer whose sums are all tiny still gets a sign bit and a magnitude bit


def bits_for(value: int) -> int:
    """Width of an unsigned field that holds 0..value (at least one bit)."""
    return max(1, int(value).bit_length())


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def in_lanes(in_features: int) -> int:
    """K, the input reader's lanes: the next power of two >= N_in, at most MAX_IN_LANES."""
    return min(MAX_IN_LANES, 1 << max(0, (in_features - 1).bit_length()))


def accumulator_bits(exact_bits: int) -> int:
    """The accumulator width of a layer: its exact worst-case bound (docs/numerics.md). Products
    wider than it wrap, which is exact because the true sum fits."""
    return max(MIN_ACC_BITS, exact_bits)


@dataclass(frozen=True)
class SlotWord:
    """One PE's slot of a weight beat, {valid, local address, weight} from the top bit down."""

    local_bits: int
    weight_bits: int

    @property
    def width(self) -> int:
        return 1 + self.local_bits + self.weight_bits


OFFCHIP_SLOT = SlotWord(OFFCHIP_LOCAL_BITS, OFFCHIP_WEIGHT_BITS)
OFFCHIP_SLOT_BYTES = OFFCHIP_SLOT.width // 8
OFFCHIP_MAX_ADDRESSES = 1 << OFFCHIP_LOCAL_BITS  # local addresses an off-chip slot can name


@dataclass(frozen=True)
class Channel:
    """Activation vectors of `length` values over `lanes` lane FIFOs and a mask FIFO.

    Lane b carries the nonzero activations whose index is b mod `lanes` as items {last, index,
    value}. A lane FIFO holds a whole vector's share plus one item: the producer writes all lanes
    in step while the consumer drains them one after another, so anything less could deadlock.
    """

    lanes: int
    length: int

    @property
    def index_bits(self) -> int:
        return bits_for(self.length - 1)

    @property
    def item_bits(self) -> int:
        return 1 + self.index_bits + VALUE_BITS

    @property
    def lane_depth(self) -> int:
        return ceil_div(self.length, self.lanes) + 1

    def memories(self, role: str) -> list[Memory]:
        return [
            Memory.sized(f"{role} lanes", self.lane_depth, self.item_bits, self.lanes),
            Memory(f"{role} mask", MASK_DEPTH, self.lanes, REGISTERS),
        ]


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


def output_memories(output: Output) -> list[Memory]:
    return output.memories() if isinstance(output, DenseOutput) else output.memories("output")


@dataclass(frozen=True)
class LayerShape:
    """A layer on P PEs, as far as the hardware's sizes go."""

    n_in: int
    n_out: int
    pes: int
    beats: int  # the weight image's depth: sum over rows of beats_i (fpgagen.engine.layout)
    max_row_beats: int
    acc_bits: int  # accumulator_bits of the layer
    weight_bits: int

    @property
    def addresses(self) -> int:
        """Local addresses of a PE: accumulator (and bias) entries, ceil(N_out / P)."""
        return ceil_div(self.n_out, self.pes)

    @property
    def slot(self) -> SlotWord:
        return SlotWord(bits_for(self.addresses - 1), self.weight_bits)

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


def dataflow_memories(layer: LayerShape, output: Output) -> list[Memory]:
    """A dataflow stage: its layer's weight ROM, row table, bias ROM, two accumulator banks per
    PE, and its output."""
    pes = layer.pes
    return [
        Memory.sized("weights", layer.rom_beats, pes * layer.slot.width),
        Memory.sized("row table", layer.n_in, layer.start_bits + layer.count_bits),
        Memory.sized("bias", layer.addresses, pes * layer.acc_bits),
        Memory.sized("accumulators", layer.addresses, layer.acc_bits, 2 * pes),
        *output_memories(output),
    ]


@dataclass(frozen=True)
class SequentialShape:
    """A sequential stage running a run of layers on P PEs: what its shared tables and engine are
    sized by. `then` adds the next layer of the run, so all runs from one layer cost O(layers)."""

    pes: int
    layers: int = 0
    rows: int = 0  # row-table entries: the layers' inputs, stacked
    bias_rows: int = 0  # bias-table entries: the layers' local addresses, stacked
    start_bits: int = 1
    count_bits: int = 1
    acc_bits: int = MIN_ACC_BITS
    weight_bits: int = 1
    addresses: int = 1  # the widest layer's local addresses
    looped: int = 0  # the longest vector a layer hands to the next one of the run (0: none)
    last: LayerShape | None = field(default=None, compare=False)

    def then(self, layer: LayerShape) -> SequentialShape:
        looped = self.looped if self.last is None else max(self.looped, self.last.n_out)
        return SequentialShape(
            pes=self.pes,
            layers=self.layers + 1,
            rows=self.rows + layer.n_in,
            bias_rows=self.bias_rows + layer.addresses,
            start_bits=max(self.start_bits, layer.start_bits),
            count_bits=max(self.count_bits, layer.count_bits),
            acc_bits=max(self.acc_bits, layer.acc_bits),
            weight_bits=max(self.weight_bits, layer.weight_bits),
            addresses=max(self.addresses, layer.addresses),
            looped=looped,
            last=layer,
        )

    @cached_property
    def loop(self) -> Channel | None:
        """The loop-back channel, sized for the longest vector it carries; none for one layer."""
        return Channel(self.pes, self.looped) if self.looped else None

    @property
    def request_bits(self) -> int:
        """A row read: its byte address and beats."""
        return AXI_ADDRESS_BITS + self.count_bits

    @property
    def activation_bits(self) -> int:
        """An activation waiting for its row: its value and the row's beats."""
        return VALUE_BITS + self.count_bits


def sequential_memories(stage: SequentialShape, output: Output) -> list[Memory]:
    """A sequential stage: the descriptors, row tables and biases of all its layers, stacked; one
    set of accumulators for its widest layer; its row-read and activation queues; its loop-back
    channel and its output. No weights: they stream from off chip."""
    pes = stage.pes
    memories = [
        Memory.sized("descriptors", stage.layers, DESCRIPTOR_FIELDS * DESCRIPTOR_FIELD_BITS),
        Memory.sized("row table", stage.rows, stage.start_bits + stage.count_bits),
        Memory.sized("bias", stage.bias_rows, pes * stage.acc_bits),
        Memory.sized("accumulators", stage.addresses, stage.acc_bits, 2 * pes),
        Memory.sized("row requests", REQUEST_DEPTH, stage.request_bits),
        Memory.sized("waiting activations", ACTIVATION_DEPTH, stage.activation_bits),
    ]
    if stage.loop is not None:
        memories += stage.loop.memories("loop-back")
    return memories + output_memories(output)


def reader_memories(channel: Channel) -> list[Memory]:
    """The input reader writes the model's input into the first channel."""
    return channel.memories("input")
