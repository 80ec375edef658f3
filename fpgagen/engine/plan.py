"""The engine plan: everything the hardware of one scheduled model is made of.

For a quantized, scheduled (and relabelled, fpgagen.passes.relabel) model on a board, `plan_engine`
lays every layer's weights out over its stage's PEs and derives, with the geometry functions the
cost model uses too, every stage, channel and memory, each width, the packed words, the stacked
tables with their offsets, and the off-chip images. The HLS and RTL back ends, the testbench and
the manifest render or record this plan; they derive nothing of their own. Data and derivation
only: no pricing (fpgagen.schedule.cost_model), no text (fpgagen.backends).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..errors import FpgagenError
from ..ir import DATAFLOW, URAM, Layer, Model
from ..numerics import requantize
from ..schedule.boards import Board
from .encoding import Encoding, encoding_of
from .geometry import (
    AXI_PAGE,
    MAX_BURST_BEATS,
    READER_GROUPS,
    TABLE_SLOT_BITS,
    Channel,
    DenseOutput,
    Groups,
    LayerShape,
    LogicShape,
    Output,
    SequentialShape,
    accumulator_bits,
    bits_for,
    ceil_div,
    dataflow_memories,
    reader_memories,
    sequential_memories,
)
from .interface import Interface, plan_interface
from .layout import LaneLayout, beats_per_row, lane_layout
from .memory import Memory
from .relabel import output_rotations, pe_of_rotated_outputs, rotation_levels


def layer_shape(
    layer: Layer,
    pes: int,
    row_beats: np.ndarray | None = None,
    encoding: Encoding | None = None,
    rotation_levels: int = 0,
) -> LayerShape:
    """The shape of a quantized layer on P PEs (`row_beats`: its beats per row, and `encoding`,
    if known; `rotation_levels`: the model's last layer, its outputs rotated over the PEs)."""
    numerics = layer.numerics
    beats = beats_per_row(numerics.weights_q, pes) if row_beats is None else row_beats
    return LayerShape(
        n_in=layer.in_features,
        n_out=layer.out_features,
        pes=pes,
        beats=int(beats.sum()),
        max_row_beats=int(beats.max(initial=0)),
        acc_bits=accumulator_bits(numerics.acc_bits),
        weight_bits=numerics.weight_format.bits,
        encoding=encoding_of(numerics) if encoding is None else encoding,
        one_bias=bool(np.all(numerics.bias_q == numerics.bias_q[0])),
        rotation_levels=rotation_levels,
    )


def zero_without_input(layer: Layer) -> bool:
    """Whether every output of a quantized layer is zero when no input reaches it (its bias alone
    requantizes to zero: every Graph Challenge layer's), so a vector that puts no entry on the
    layer's PEs drains no word (docs/engine.md, "Quiet vectors")."""
    numerics = layer.numerics
    return not np.any(requantize(numerics.bias_q.astype(np.int64), numerics.shift, numerics.lo_q, numerics.hi_q))


def stage_is_quiet(layer: Layer, last: bool) -> bool:
    """Whether a dataflow stage of `layer` (`last`: the model's last, which drains dense beats)
    drains a vector that reached none of its PEs by its end words alone (docs/engine.md, "Quiet
    vectors"). Every dataflow stage whose outputs are zero without input lets an empty vector
    pass its banks, the last too ("Empty vectors")."""
    return not last and zero_without_input(layer)


def channel(subs: int, length: int, deep: str | None) -> Channel:
    """A channel of `subs` sub-channels carrying vectors of `length`: deep, in the kind of memory
    `deep` names (Schedule.deep_channels), or shallow (None)."""
    shallow = Channel(subs, length)
    if deep is None:
        return shallow
    return replace(shallow, depth=shallow.deep_depth, memory=deep)


def stage_output(model: Model, last_layer: int, pes: int, units: int, deep: str | None = None) -> Output:
    """Where a stage ending with `last_layer` drains: the next stage's channel, one sub-channel
    per issue unit (a stage serializes as many activations a cycle as it takes), or dense beats."""
    if last_layer == len(model.layers) - 1:
        return DenseOutput(pes)
    return channel(units, model.layers[last_layer].out_features, deep)


def reader_channel(in_features: int, lanes: int, deep: str | None = None) -> Channel:
    """The first channel: the input reader's groups of each beat."""
    return channel(min(READER_GROUPS, lanes), in_features, deep)


@dataclass(frozen=True, eq=False)
class LayerPlan:
    """One layer on its stage's PEs: its layout, and where its tables and weights sit."""

    index: int
    layer: Layer
    shape: LayerShape
    layout: LaneLayout
    row_offset: int  # its first entry in the stage's row table
    bias_offset: int  # its first local address in the stage's bias table
    offchip_base: int  # byte offset of its beats in each of the stage's off-chip images (sequential stages)
    # the model's last layer, rotated: output a * P + q on PE (q + rotations[a]) mod P (None: on PE q)
    rotations: np.ndarray | None = None

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def shift(self) -> int:
        return self.layer.numerics.shift

    @property
    def lo(self) -> int:
        return self.layer.numerics.lo_q

    @property
    def hi(self) -> int:
        return self.layer.numerics.hi_q

    @property
    def rounding(self) -> int:
        """2^(shift-1), what the requantization adds before its shift (0 without a shift)."""
        return 1 << (self.shift - 1) if self.shift > 0 else 0

    @cached_property
    def bias(self) -> np.ndarray:
        """(addresses, P): at [a, p] the bias of the output on PE p at local address a (a * P + p,
        or rotated), zero past the last output."""
        addresses, pes = self.shape.addresses, self.shape.pes
        padded = np.zeros(addresses * pes, dtype=np.int64)
        padded[: self.shape.n_out] = self.layer.numerics.bias_q
        bias = np.zeros_like(padded)
        bias[np.arange(padded.size) // pes * pes + pe_of_rotated_outputs(padded.size, pes, self.rotations)] = padded
        return bias.reshape(addresses, pes)

    @property
    def rounded_bias(self) -> np.ndarray:
        """The bias with the rounding term added, as the RTL's bias ROM holds it: the drain adds
        one number to an accumulator before the shift (docs/numerics.md)."""
        return self.bias + self.rounding

    @cached_property
    def rom_words(self) -> np.ndarray:
        """(rom_beats, P) on-chip slot words of a dataflow layer, the weight field in the layer's
        encoding (a codebook index where it has one); one empty beat at least."""
        if self.layout.beats == 0:
            return np.zeros((1, self.shape.pes), dtype=np.uint64)
        fields = np.where(self.layout.valid, self.shape.encoding.fields(self.layout.weight), 0)
        return replace(self.layout, weight=fields).slot_words(self.shape.slot)


@dataclass(frozen=True, eq=False)
class StagePlan:
    """One stage: a dataflow layer, or a run of sequential layers on a shared engine."""

    index: int
    mode: str
    pes: int
    units: int  # issue units: activations taken per cycle; sub-channels of the output channel
    private: bool  # a dataflow stage whose units each have `pes` PEs of their own (Stage.private)
    drain_lanes: int  # what its drain requantizes a cycle (Stage.drain_lanes): P for a sequential stage
    # a dataflow stage that drains a vector reaching none of its PEs by its end words alone
    # (stage_is_quiet; docs/engine.md, "Quiet vectors")
    skips_quiet: bool
    # a dataflow stage that lets a vector without activations pass its banks (zero_without_input;
    # docs/engine.md, "Empty vectors")
    passes_empty: bool
    layers: tuple[LayerPlan, ...]
    input: Channel
    output: Output
    loop: Channel | None  # a sequential stage's loop-back items
    loop_depth: int  # ... and its FIFO's depth: a whole vector (0 without loop-back)
    port: int | None  # k of the first AXI4 master weights<k> of a sequential stage
    channels: int  # its AXI4 masters, weights<port> onwards (1 for a dataflow stage)
    loaded: bool  # a dataflow stage whose weights are in UltraRAM: the load phase fills them
    acc_bits: int  # the drain's sums: bias, rounding and the scaled accumulator
    sum_bits: int  # the accumulators' width
    encoding: Encoding  # the weight slots of its PEs
    start_bits: int  # row-table fields
    count_bits: int
    addresses: int  # accumulator entries per PE: the widest layer's local addresses
    logic: LogicShape
    memories: tuple[Memory, ...]
    sequential_shape: SequentialShape | None  # a sequential stage's: its stacked tables, which its load phase reads

    @property
    def name(self) -> str:
        return f"stage{self.index}"

    @property
    def sequential(self) -> bool:
        return self.port is not None

    @property
    def ports(self) -> range:
        """The k of each AXI4 master weights<k> of a sequential stage, channel 0 first."""
        return range(self.port, self.port + self.channels) if self.sequential else range(0)

    @property
    def stacked(self) -> bool:
        """A dataflow stage whose PEs keep both banks in one memory (geometry.stacked_banks)."""
        return not self.sequential and self.layers[0].shape.stacked

    @property
    def last(self) -> bool:
        """The model's last stage: drains dense beats to AXI4-Stream out."""
        return isinstance(self.output, DenseOutput)

    @property
    def rotations(self) -> np.ndarray | None:
        """The model's last stage's dense beats: its last layer's rotations (None: in place)."""
        return self.layers[-1].rotations if self.last else None

    @property
    def local_bits(self) -> int:
        """The local address field of the slots the PEs take: as wide as `addresses` needs."""
        return bits_for(self.addresses - 1)

    @property
    def drain_rows(self) -> int:
        """What the drain reads per vector, a row a cycle: each local address of each group of
        `drain_lanes` PEs; row r holds outputs r * drain_lanes onwards."""
        return self.addresses * self.drain_steps

    @property
    def drain_steps(self) -> int:
        """The groups of PEs the drain reads in turn at a local address."""
        return self.pes // self.drain_lanes

    @property
    def groups(self) -> Groups:
        """How the drain splits a row's outputs among its serializers."""
        if self.sequential:
            return Groups(self.pes, self.units, self.local_bits)
        return self.layers[0].shape.drain_groups(self.units, self.drain_lanes)

    @property
    def rows(self) -> int:
        return sum(plan.shape.n_in for plan in self.layers)

    @property
    def bias_rows(self) -> int:
        """Rows of the bias table: a sequential stage stacks its layers' local addresses; a dataflow
        stage keeps one row when its biases are all one value."""
        if self.sequential:
            return sum(plan.shape.addresses for plan in self.layers)
        return self.layers[0].shape.bias_rows(self.drain_lanes)

    def memory(self, role: str) -> Memory:
        """The stage's memory that holds `role` (fpgagen.engine.geometry names them)."""
        (found,) = [memory for memory in self.memories if memory.role == role]
        return found

    def optional_memory(self, role: str) -> Memory | None:
        """The stage's memory that holds `role`, or None where the stage has none (private PEs have
        no entry FIFOs, the model's last stage no drained words, one layer no loop-back)."""
        found = [memory for memory in self.memories if memory.role == role]
        return found[0] if found else None

    @property
    def row_start(self) -> np.ndarray:
        """The stacked row table's first beats (relative to each layer's own weights)."""
        return np.concatenate([plan.layout.row_start for plan in self.layers])

    @property
    def row_beats(self) -> np.ndarray:
        return np.concatenate([plan.layout.row_beats for plan in self.layers])

    @property
    def bias(self) -> np.ndarray:
        """(bias_rows, drain_lanes): the stacked bias tables of the layers, a drain row each (output
        a * P + s * D + d at [a * P / D + s, d]: the same numbers in rows of D)."""
        return self._drain_rows_of(np.concatenate([plan.bias for plan in self.layers]))

    @property
    def rounded_bias(self) -> np.ndarray:
        """(bias_rows, drain_lanes): the stacked bias tables with each layer's rounding term."""
        return self._drain_rows_of(np.concatenate([plan.rounded_bias for plan in self.layers]))

    def _drain_rows_of(self, table: np.ndarray) -> np.ndarray:
        return table.reshape(-1, self.drain_lanes)[: self.bias_rows]

    @property
    def max_burst(self) -> int:
        """The longest read a row of a sequential stage asks for, in beats."""
        longest = max(plan.shape.max_row_beats for plan in self.layers)
        return min(MAX_BURST_BEATS, max(1, longest))

    @property
    def table_words(self) -> np.ndarray:
        """What a sequential stage's load phase reads, as little-endian 32-bit words, P to a beat:
        the stacked row table, one entry `start << count_bits | beats` per word (padded to whole
        beats), then the bias rows, each value (rounding term included) sign-extended to
        `bias_slot_bits`, low word first."""
        rows = np.zeros(self.sequential_shape.row_table_beats * self.pes, dtype=np.int64)
        rows[: self.rows] = (self.row_start << self.count_bits) | self.row_beats
        words_per_value = self.sequential_shape.bias_words
        bias = self.rounded_bias.astype(np.int64)
        words = np.stack([(bias >> (TABLE_SLOT_BITS * w)) & 0xFFFFFFFF for w in range(words_per_value)], axis=-1)
        return np.concatenate([rows, words.reshape(-1)]).astype("<u4")

    @cached_property
    def offchip_images(self) -> tuple[bytes, ...]:
        """A sequential stage's images, one per channel. Together they are a sequence of beats:
        the tables of its load phase (`table_words`), then every layer's beats at its 4 KB-aligned
        base, each beat P little-endian slots of the stage's width (SequentialShape.slot). Channel
        c holds bytes c * port_bytes .. (c + 1) * port_bytes - 1 of every beat: the slots of PEs
        c * P / C .. (c + 1) * P / C - 1, or that share of the tables' fields."""
        shape = self.sequential_shape
        slot_type = np.dtype(f"<u{shape.slot.width // 8}")
        stripes = shape.channels
        # every offset is a channel's; the beats as the stage takes them are `stripes` times longer
        size = stripes * max(plan.offchip_base + plan.layout.beats * shape.port_bytes for plan in self.layers)
        beats = bytearray(size)
        tables = self.table_words.tobytes()
        beats[: len(tables)] = tables
        for plan in self.layers:
            slots = plan.layout.slot_words(shape.slot).astype(slot_type).tobytes()
            at = stripes * plan.offchip_base
            beats[at : at + len(slots)] = slots
        shares = np.frombuffer(bytes(beats), dtype=np.uint8).reshape(-1, stripes, shape.port_bytes)
        return tuple(shares[:, c, :].tobytes() for c in range(stripes))

    @property
    def image_beats(self) -> int:
        """Beats of each channel's image."""
        return len(self.offchip_images[0]) // self.sequential_shape.port_bytes

    @property
    def row_bits(self) -> int:
        """A dataflow stage's weight row: P slots, PE 0's in the lowest bits."""
        return self.layers[0].shape.row_bits

    def load_rows(self, beat_bits: int) -> bytes:
        """A loaded stage's part of the load image: each weight row in a little-endian beat of
        `beat_bits` bits, PE 0's slot lowest, zeros above the row."""
        words = self.layers[0].rom_words
        width = self.layers[0].shape.slot.width
        bits = np.zeros((len(words), beat_bits), dtype=np.uint8)
        shifts = np.arange(width, dtype=np.uint64)
        bits[:, : self.row_bits] = ((words[:, :, None] >> shifts) & np.uint64(1)).reshape(len(words), -1)
        return np.packbits(bits, axis=1, bitorder="little").tobytes()


@dataclass(frozen=True, eq=False)
class EnginePlan:
    model: Model
    board: Board
    lanes: int  # values per input beat
    channels: tuple[Channel, ...]  # channels[s] feeds stage s; channels[0] comes from the reader
    stages: tuple[StagePlan, ...]
    interface: Interface

    @property
    def top(self) -> str:
        """The HLS top function and the RTL top module."""
        return f"{self.model.name}_top"

    @property
    def core(self) -> str:
        """The RTL core with ap_ctrl_hs pins that the top wraps."""
        return f"{self.model.name}_core"

    @property
    def in_lanes(self) -> int:
        return self.lanes

    @property
    def out_lanes(self) -> int:
        return self.stages[-1].pes

    @property
    def reader_groups(self) -> Groups:
        channel = self.channels[0]
        return Groups(self.lanes, channel.subs, bits_for(ceil_div(channel.length, self.lanes) - 1))

    @property
    def sequential(self) -> list[StagePlan]:
        return [stage for stage in self.stages if stage.sequential]

    @property
    def loaded(self) -> list[StagePlan]:
        """The dataflow stages whose weights the load phase fills, in the order of the load chain."""
        return [stage for stage in self.stages if stage.loaded]

    @cached_property
    def load_image(self) -> bytes:
        """What the load port reads at a batch's start: every loaded stage's weight rows, a row a
        beat, stage after stage (docs/engine.md, "Dataflow weights in UltraRAM")."""
        port = self.interface.load_port
        return b"".join(stage.load_rows(port.data_bits) for stage in self.loaded) if port else b""

    @property
    def reader_memories(self) -> list[Memory]:
        return reader_memories(self.channels[0], self.lanes)

    def layer(self, index: int) -> LayerPlan:
        stage = self.stages[self.model.layers[index].schedule.stage]
        return next(plan for plan in stage.layers if plan.index == index)


def plan_engine(model: Model, board: Board) -> EnginePlan:
    """The engine of a quantized, scheduled model on `board`."""
    schedule = model.schedule
    if schedule is None or not model.quantized:
        raise ValueError("plan a quantized, scheduled model")
    deep = schedule.deep_channels
    channels = [reader_channel(model.in_features, schedule.in_lanes, deep)]
    stages = []
    port = 0
    for number, stage in enumerate(schedule.stages):
        output = stage_output(model, stage.layers[-1], stage.pes, stage.units, deep)
        sequential = stage.mode != DATAFLOW
        loaded = stage.weight_memory == URAM
        if loaded and not board.has_free_uram:
            raise FpgagenError(
                f"stage {number}: its weights are to be loaded into UltraRAM, which {board.name} has none of"
            )
        layer_plans, tables = _layer_plans(model, stage.layers, stage.pes, stage.channels if sequential else 0)
        quiet = not sequential and stage_is_quiet(layer_plans[0].layer, isinstance(output, DenseOutput))
        passes_empty = not sequential and zero_without_input(layer_plans[0].layer)
        if tables is not None:
            shape = tables
            memories = sequential_memories(shape, output, board.has_free_uram)
            loop, loop_depth = shape.loop, shape.loop_depth
            logic = shape.logic()
        else:
            (plan,) = layer_plans
            shape, loop, loop_depth = plan.shape, None, 0
            memories = dataflow_memories(
                plan.shape,
                stage.units,
                channels[-1].index_bits,
                output,
                loaded,
                stage.private,
                stage.drain_lanes,
                passes_empty,
            )
            logic = plan.shape.logic(stage.units, stage.private, stage.drain_lanes)
        stages.append(
            StagePlan(
                index=number,
                mode=stage.mode,
                pes=stage.pes,
                units=stage.units,
                private=stage.private,
                drain_lanes=stage.drain_lanes or stage.pes,
                skips_quiet=quiet,
                passes_empty=passes_empty,
                layers=layer_plans,
                input=channels[-1],
                output=output,
                loop=loop,
                loop_depth=loop_depth if loop is not None else 0,
                port=port if sequential else None,
                channels=stage.channels,
                loaded=loaded,
                acc_bits=shape.acc_bits,
                sum_bits=shape.sum_bits,
                encoding=shape.encoding,
                start_bits=shape.start_bits,
                count_bits=shape.count_bits,
                addresses=shape.addresses,
                logic=logic,
                memories=tuple(memories),
                sequential_shape=shape if sequential else None,
            )
        )
        port += stage.channels if sequential else 0
        if isinstance(output, Channel):
            channels.append(output)
    stages = tuple(stages)
    interface = plan_interface(stages, schedule.in_lanes, board)
    return EnginePlan(model, board, schedule.in_lanes, tuple(channels), stages, interface)


def _layer_plans(
    model: Model, indices: tuple[int, ...], pes: int, channels: int
) -> tuple[tuple[LayerPlan, ...], SequentialShape | None]:
    """The layers of one stage: layouts, and offsets in the stage's stacked tables and images; and
    a sequential stage's shape (its beats striped over `channels`; 0 for a dataflow stage), whose
    tables its load phase reads from the images' start (`table_words`)."""
    layers = [model.layers[index] for index in indices]
    rotations = [_rotations(model, index, pes) for index in indices]
    layouts = [
        lane_layout(layer.numerics.weights_q, pes, pe_of_rotated_outputs(layer.out_features, pes, turns))
        for layer, turns in zip(layers, rotations)
    ]
    shapes = [
        layer_shape(layer, pes, layout.row_beats, rotation_levels=rotation_levels(turns))
        for layer, layout, turns in zip(layers, layouts, rotations)
    ]
    tables = _sequential_shape(layers, shapes, pes, channels) if channels else None
    base = _pages(tables.load_beats * tables.port_bytes) if tables is not None else 0
    plans = []
    rows = bias = 0
    for index, layout, shape, turns in zip(indices, layouts, shapes, rotations):
        plans.append(LayerPlan(index, model.layers[index], shape, layout, rows, bias, base, turns))
        rows += shape.n_in
        bias += shape.addresses
        base += _pages(shape.beats * tables.port_bytes) if tables is not None else 0
    return tuple(plans), tables


def row_beats(model: Model, index: int, pes: int) -> np.ndarray:
    """Beats each row of layer `index` takes on P PEs as the engine lays it out, the model's last
    layer's outputs rotated where that saves beats: what a sequential stage reads of the row."""
    layer = model.layers[index]
    turns = _rotations(model, index, pes)
    return beats_per_row(layer.numerics.weights_q, pes, pe_of_rotated_outputs(layer.out_features, pes, turns))


def _rotations(model: Model, index: int, pes: int) -> np.ndarray | None:
    """The rotations of layer `index`'s outputs over P PEs: the model's last layer's, where they
    save beats (fpgagen.engine.relabel.output_rotations); None for every other layer."""
    if index != len(model.layers) - 1:
        return None
    return output_rotations(model.layers[index].numerics.weights_q, pes)


def _pages(size: int) -> int:
    """`size` bytes rounded up to whole 4 KB pages: every layer's weights start on one."""
    return ceil_div(size, AXI_PAGE) * AXI_PAGE


def _sequential_shape(layers: list[Layer], shapes: list[LayerShape], pes: int, channels: int) -> SequentialShape:
    shape = SequentialShape.of(pes, shapes, channels)
    if shape.row_bits > TABLE_SLOT_BITS:
        names = ", ".join(layer.name for layer in layers)
        raise FpgagenError(
            f"the sequential stage of layers {names} needs {shape.row_bits}-bit row-table entries, "
            f"more than the {TABLE_SLOT_BITS} bits its load phase reads: give it more PEs"
        )
    return shape
