"""What the HLS templates print: the engine plan (fpgagen.engine) in C++ terms.

Every size, width, depth, offset and packed word comes from the plan: widths from its channels,
groups and stages, stream depths from the depth of the memory the plan gives each FIFO. This
module adds only what is particular to C++: names (from `Model.name` and `Layer.name`, already
identifiers), the C types that hold the plan's tables, the storage a memory kind binds to, and
the clock period of the plan's board. Templates print these fields; they decide nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...engine import EnginePlan, LayerPlan, StagePlan
from ...engine.geometry import MAX_BURSTS, VALUE_BITS, Channel, Groups
from ...engine.interface import WeightPort
from ...engine.memory import BRAM, CONSTANT, LUTRAM, REGISTERS, URAM, Memory
from ...errors import FpgagenError
from .carrays import signed_type, unsigned_type

# BIND_STORAGE implementations of the plan's memory kinds: for tables (not for a constant, a table
# of one row, which is partitioned into its values), and for FIFOs (a FIFO of registers is a shift
# register).
TABLE_STORAGE = {BRAM: "bram", LUTRAM: "lutram", URAM: "uram", REGISTERS: "lutram"}
FIFO_STORAGE = {BRAM: "bram", LUTRAM: "lutram", REGISTERS: "srl", URAM: "uram"}  # UG1399, BIND_STORAGE type=fifo
# A link of the load chain, the one stream the plan has no memory for: the RTL passes a beat from
# stage to stage through a register (fg_stage.v), and every link's consumer takes a beat a cycle,
# so two beats of registers suffice.
LOAD_LINK_DEPTH = 2
# The flag a vector from the PEs to the drain of a stage that skips quiet vectors, the other stream
# the plan has no memory for (fg_stage.v keeps a `touched` bit a bank instead): written once as a
# vector's bank is whole and read once as its drain starts, so no more flags wait than the PIPO
# buffer has banks: two, in a shift register.
QUIET_FLAG_DEPTH = 2


@dataclass(frozen=True)
class Fifo:
    """A stream's depth and the FIFO storage of its memory in the plan."""

    depth: int
    impl: str


def fifo(memory: Memory) -> Fifo:
    return Fifo(memory.depth, FIFO_STORAGE[memory.kind])


@dataclass(frozen=True)
class ChannelView:
    """Channel k of the top function: `subs` streams `ch<k>` of items with `index_bits`."""

    name: str
    subs: int
    index_bits: int
    fifo: Fifo

    @property
    def item_type(self) -> str:
        return f"{self.name}_item_t"


@dataclass(frozen=True)
class GroupsView:
    """A word's groups as the serializers take them (fpgagen.engine.geometry.Groups)."""

    size: int
    count: int
    base_bits: int
    count_bits: int


def groups_view(groups: Groups) -> GroupsView:
    return GroupsView(groups.size, groups.count, groups.base_bits, groups.count_bits)


@dataclass(frozen=True, eq=False)
class Tables:
    """A stage's on-chip tables: row tables and biases (with the rounding term) in their C types."""

    row_start: np.ndarray
    row_beats: np.ndarray
    bias: np.ndarray  # (rows, D): bias[r][d] of output r * D + d (D = P but for drain lanes), rounding included
    # the dense beats' rotation at each local address of the model's last layer ((0,): in place)
    rotations: tuple[int, ...]
    start_type: str
    beats_type: str
    bias_type: str


@dataclass(frozen=True)
class Reader:
    lanes: int
    n_in: int
    groups: GroupsView
    words: Fifo


@dataclass(frozen=True)
class LoadLink:
    """A loaded dataflow stage's link of the load chain: it reads stream load[`link`], keeps its
    rows (beats `first` .. `first` + rows - 1 of the load image) and passes the next `passes` beats,
    the later loaded stages' rows, on to load[`link` + 1] (the chain's last stage passes none and
    has no stream out)."""

    link: int
    first: int
    passes: int
    slot_bits: int  # a slot of a beat: PE p's in bits [p * slot_bits, (p + 1) * slot_bits)


@dataclass(frozen=True)
class Loader:
    """The load phase of the dataflow stages whose weights are in UltraRAM: `port` reads the load
    image into the load chain, streams load[0 .. links - 1], one into each loaded stage."""

    port: WeightPort
    stages: tuple[int, ...]  # the loaded stages, in the order of the chain
    fifo: Fifo  # each link's

    @property
    def links(self) -> int:
        return len(self.stages)


@dataclass(frozen=True, eq=False)
class DataflowStage:
    number: int
    layer_index: int
    name: str  # the layer's name
    namespace: str
    header: str  # weights/stage<s>.h
    in_channel: ChannelView
    out_channel: ChannelView | None  # None: the model's dense output
    pes: int
    units: int
    private: bool  # each unit has `pes` PEs of its own; the drain adds their sums (Stage.private)
    groups: GroupsView
    n_in: int
    n_out: int
    addresses: int
    beats: int  # ROM depth (at least 1: an empty layer keeps one all-invalid beat)
    acc_bits: int
    sum_bits: int  # the banks
    pe_scale: int  # a PE multiplies a positions-only entry's x by it
    drain_scale: int  # the drain multiplies a sum by it
    weight_bits: int  # 0: positions only; with a codebook, its index
    codebook: tuple[int, ...]  # the weights a slot's index names (empty: the field is the weight)
    codebook_bits: int
    local_bits: int
    start_bits: int
    count_bits: int
    shift: int
    lo: int
    hi: int
    nnz: int
    slot_type: str
    storage: dict[str, str]  # BIND_STORAGE impl of its row table, weights and bias
    fifos: dict[str, Fifo]  # unit items, unit rows, PE entries, drained words
    tables: Tables
    rom: np.ndarray  # (beats, P) packed slots
    load: LoadLink | None  # its weights are in UltraRAM: the load phase fills `rom`, not the bitstream
    stacked: bool  # both banks of a PE in one memory: the PEs and the drain one process, in turn
    drain_lanes: int  # D: what the drain requantizes a cycle, a drain row
    drain_steps: int  # P / D: groups of PEs the drain reads in turn at a local address
    drain_rows: int  # what the drain reads a vector, a row a cycle
    skips_quiet: bool  # a vector that puts no entry on its PEs drains its end words alone
    quiet: Fifo | None  # the PEs' flag a vector to a separate drain process of a stage that skips quiet vectors

    sequential = False
    ports = ()  # its weights are on chip: no memory channel

    @property
    def bias_rows(self) -> int:
        """One row per drain row, or one for all when the biases are one value."""
        return int(self.tables.bias.shape[0])


@dataclass(frozen=True)
class SequentialLayer:
    index: int
    name: str
    n_out: int
    addresses: int
    rows: int  # offset in the stage's row tables
    bias: int  # offset in the stage's bias table (local addresses)
    base: int  # first beat in the off-chip image
    shift: int
    lo: int
    hi: int


@dataclass(frozen=True, eq=False)
class SequentialStage:
    number: int
    namespace: str
    header: str
    in_channel: ChannelView
    out_channel: ChannelView | None
    pes: int
    layers: tuple[SequentialLayer, ...]
    acc_bits: int
    addresses: int
    local_bits: int
    start_bits: int
    count_bits: int
    pass_index_bits: int  # the widest index a pass reads: its input's or its loop-back's
    loop_index_bits: int
    groups: GroupsView
    ports: tuple[WeightPort, ...]  # its memory channels, a share of every beat each, channel 0 first
    max_bursts: int
    slot_local_bits: int
    slot_weight_bits: int  # 0: positions only
    pe_scale: int  # positions only: what a PE multiplies x by (1 when the drain shifts instead)
    drain_scale: int  # positions only: the shared weight +-2^k the drain multiplies a sum by
    row_table_beats: int  # the load phase's: row-table entries at the image's start, P to a beat
    bias_words: int  # then the bias rows, each value in this many 32-bit words
    table_parts: int  # beats in a beat of those tables
    storage: dict[str, str]  # row table, bias
    fifos: dict[str, Fifo]  # unit items, row requests, waiting activations, PE entries, words, loop-back
    tables: Tables

    sequential = True
    load = None  # its weights come from off chip, on no load chain

    @property
    def rows(self) -> int:
        return int(self.tables.row_start.size)

    @property
    def bias_rows(self) -> int:
        return int(self.tables.bias.shape[0])


@dataclass(frozen=True, eq=False)
class Design:
    model: str
    top: str
    namespace: str
    guard: str
    in_lanes: int
    out_lanes: int
    in_bits: int  # of an AXI4-Stream input beat
    out_bits: int
    out_beats: int  # dense output beats per vector: the last layer's local addresses
    output: Fifo  # the dense beats in front of y_out
    n_in: int
    part: str
    clock_period_ns: str
    reader: Reader
    channels: tuple[ChannelView, ...]
    stages: tuple[DataflowStage | SequentialStage, ...]
    layer_names: tuple[str, ...]
    layer_outputs: tuple[int, ...]
    nnz: int
    loader: Loader | None  # None: no stage's weights are in UltraRAM
    max_bursts: int  # AXI4 read bursts in flight on a port

    @property
    def sequential(self) -> list[SequentialStage]:
        return [stage for stage in self.stages if stage.sequential]


def plan_design(plan: EnginePlan) -> Design:
    """The C++ side of an engine plan (on the plan's own board)."""
    model = plan.model
    producers = [plan.reader_memories, *(stage.memories for stage in plan.stages)]
    channels = [
        ChannelView(f"ch{k}", channel.subs, channel.index_bits, fifo(_role(found, "input items", "output items")))
        for k, (channel, found) in enumerate(zip(plan.channels, producers))
    ]
    links = _load_links(plan)
    stages: list[DataflowStage | SequentialStage] = []
    for stage in plan.stages:
        out_channel = None if stage.last else channels[stage.index + 1]
        if stage.sequential:
            ports = tuple(plan.interface.ports[port] for port in stage.ports)
            stages.append(_sequential_stage(stage, channels[stage.index], out_channel, ports))
        else:
            stages.append(_dataflow_stage(stage, channels[stage.index], out_channel, links.get(stage.index)))
    last = plan.stages[-1]
    reader_groups = plan.reader_groups
    return Design(
        model=model.name,
        top=plan.top,
        namespace=f"{model.name}_stages",
        guard=f"{model.name.upper()}_TOP_H",
        in_lanes=plan.in_lanes,
        out_lanes=plan.out_lanes,
        in_bits=plan.interface.in_bits,
        out_bits=plan.interface.out_bits,
        out_beats=last.layers[-1].shape.addresses,
        output=fifo(last.memory("output beats")),
        n_in=model.in_features,
        part=plan.board.part,
        clock_period_ns=f"{clock_period(plan.board.clock_mhz):.3f}",
        reader=Reader(
            plan.lanes, model.in_features, groups_view(reader_groups), fifo(_role(plan.reader_memories, "input words"))
        ),
        channels=tuple(channels),
        stages=tuple(stages),
        layer_names=tuple(layer.name for layer in model.layers),
        layer_outputs=tuple(layer.out_features for layer in model.layers),
        nnz=model.nnz,
        loader=_loader(plan),
        max_bursts=MAX_BURSTS,
    )


def _loader(plan: EnginePlan) -> Loader | None:
    port = plan.interface.load_port
    if port is None:
        return None
    return Loader(port, tuple(stage.index for stage in plan.loaded), Fifo(LOAD_LINK_DEPTH, FIFO_STORAGE[REGISTERS]))


def _load_links(plan: EnginePlan) -> dict[int, LoadLink]:
    """Each loaded stage's link of the load chain, by stage index: the load image holds the loaded
    stages' rows, a row a beat, stage after stage (`EnginePlan.load_image`)."""
    rows = [stage.layers[0].shape.rom_beats for stage in plan.loaded]
    return {
        stage.index: LoadLink(link, sum(rows[:link]), sum(rows[link + 1 :]), stage.layers[0].shape.slot.width)
        for link, stage in enumerate(plan.loaded)
    }


def clock_period(clock_mhz: float) -> float:
    """The clock period in ns of the schedule's clock."""
    if not math.isfinite(clock_mhz) or clock_mhz <= 0:
        raise FpgagenError(f"clock {clock_mhz} MHz is not a positive frequency")
    return 1000.0 / clock_mhz


def _role(memories, *roles: str) -> Memory:
    (found,) = [memory for memory in memories if memory.role in roles]
    return found


def _optional(stage: StagePlan, role: str) -> Fifo | None:
    found = stage.optional_memory(role)
    return fifo(found) if found is not None else None


def _dataflow_stage(
    stage: StagePlan, in_channel: ChannelView, out_channel: ChannelView | None, load: LoadLink | None
) -> DataflowStage:
    (plan,) = stage.layers
    layer, shape = plan.layer, plan.shape
    slot_type, slot_np = ("uint32_t", np.uint32) if shape.slot.width <= 32 else ("uint64_t", np.uint64)
    fifos = {
        "items": fifo(stage.memory("unit activations")),
        "rows": fifo(stage.memory("unit rows")),
    }
    for name, role in (("entries", "PE entries"), ("words", "drained words")):  # private PEs have no FIFO
        found = _optional(stage, role)
        if found is not None:
            fifos[name] = found
    return DataflowStage(
        number=stage.index,
        layer_index=plan.index,
        name=layer.name,
        namespace=stage.name,
        header=f"weights/{stage.name}.h",
        in_channel=in_channel,
        out_channel=out_channel,
        pes=stage.pes,
        units=stage.units,
        private=stage.private,
        groups=groups_view(stage.groups),
        n_in=shape.n_in,
        n_out=shape.n_out,
        addresses=stage.addresses,
        beats=shape.rom_beats,
        acc_bits=stage.acc_bits,
        sum_bits=stage.sum_bits,
        pe_scale=stage.encoding.pe_scale,
        drain_scale=stage.encoding.drain_scale,
        weight_bits=stage.encoding.weight_bits,
        codebook=stage.encoding.codebook,
        codebook_bits=stage.encoding.codebook_bits,
        local_bits=stage.local_bits,
        start_bits=stage.start_bits,
        count_bits=stage.count_bits,
        shift=plan.shift,
        lo=plan.lo,
        hi=plan.hi,
        nnz=layer.nnz,
        slot_type=slot_type,
        storage={
            role: TABLE_STORAGE[stage.memory(role).kind]
            for role in ("row table", "weights", "bias")
            if stage.memory(role).kind != CONSTANT
        },
        fifos=fifos,
        tables=_tables(stage),
        rom=plan.rom_words.astype(slot_np),
        load=load,
        stacked=stage.stacked,
        drain_lanes=stage.drain_lanes,
        drain_steps=stage.drain_steps,
        drain_rows=stage.drain_rows,
        skips_quiet=stage.skips_quiet,
        # stacked banks: the PEs and the drain are one process, which keeps the flag to itself
        quiet=Fifo(QUIET_FLAG_DEPTH, FIFO_STORAGE[REGISTERS]) if stage.skips_quiet and not stage.stacked else None,
    )


def _sequential_layer(plan: LayerPlan, port_bytes: int) -> SequentialLayer:
    """A sequential layer's descriptor; its base is in beats of each channel's image."""
    return SequentialLayer(
        index=plan.index,
        name=plan.name,
        n_out=plan.shape.n_out,
        addresses=plan.shape.addresses,
        rows=plan.row_offset,
        bias=plan.bias_offset,
        base=plan.offchip_base // port_bytes,
        shift=plan.shift,
        lo=plan.lo,
        hi=plan.hi,
    )


def _sequential_stage(
    stage: StagePlan, in_channel: ChannelView, out_channel: ChannelView | None, ports: tuple[WeightPort, ...]
) -> SequentialStage:
    port_bytes = ports[0].data_bits // 8
    items = stage.memory("unit activations")
    fifos = {
        "items": fifo(items),
        "requests": fifo(stage.memory("row requests")),
        "waiting": fifo(stage.memory("waiting activations")),
        "entries": fifo(stage.memory("PE entries")),
    }
    words = _optional(stage, "drained words")
    if words is not None:
        fifos["words"] = words
    loop = _optional(stage, "loop-back items")
    if loop is not None:
        fifos["loop"] = loop
    return SequentialStage(
        number=stage.index,
        namespace=stage.name,
        header=f"weights/{stage.name}.h",
        in_channel=in_channel,
        out_channel=out_channel,
        pes=stage.pes,
        layers=tuple(_sequential_layer(plan, port_bytes) for plan in stage.layers),
        acc_bits=stage.acc_bits,
        addresses=stage.addresses,
        local_bits=stage.local_bits,
        start_bits=stage.start_bits,
        count_bits=stage.count_bits,
        pass_index_bits=items.width - 1 - VALUE_BITS,  # the unit activations' items {end, index, value}
        loop_index_bits=stage.loop.index_bits if isinstance(stage.loop, Channel) else 1,
        groups=groups_view(stage.groups),
        ports=ports,
        max_bursts=MAX_BURSTS,
        slot_local_bits=stage.sequential_shape.slot.local_bits,
        slot_weight_bits=stage.sequential_shape.slot.weight_bits,
        pe_scale=stage.encoding.pe_scale,
        drain_scale=stage.encoding.drain_scale,
        row_table_beats=stage.sequential_shape.row_table_beats,
        bias_words=stage.sequential_shape.bias_words,
        table_parts=stage.sequential_shape.table_parts,
        storage={role: TABLE_STORAGE[stage.memory(role).kind] for role in ("row table", "bias")},
        fifos=fifos,
        tables=_tables(stage),
    )


def _tables(stage: StagePlan) -> Tables:
    """The stage's stacked row tables and biases, rounding terms included, in their narrowest C types."""
    row_start, row_beats = stage.row_start, stage.row_beats
    bias = stage.rounded_bias
    start_type, start_np = unsigned_type(int(row_start.max(initial=0)))
    beats_type, beats_np = unsigned_type(int(row_beats.max(initial=0)))
    return Tables(
        row_start=row_start.astype(start_np),
        row_beats=row_beats.astype(beats_np),
        bias=bias,
        rotations=(0,) if stage.rotations is None else tuple(int(turn) for turn in stage.rotations),
        start_type=start_type,
        beats_type=beats_type,
        bias_type=signed_type(int(np.abs(bias).max(initial=0))),
    )
