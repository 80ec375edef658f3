"""What the HLS templates print: the engine plan (fpgagen.engine) in C++ terms.

Every size, width, depth, offset and packed word comes from the plan; this module adds only what
is particular to C++: names (from `Model.name` and `Layer.name`, already identifiers), the C types
that hold the plan's tables, and the clock period. Templates print these fields; they decide
nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...engine import EnginePlan, LayerPlan, StagePlan
from ...engine.geometry import MASK_DEPTH, OFFCHIP_SLOT, ROW_TASK_DEPTH, Channel
from ...engine.interface import WeightPort
from ...engine.memory import BRAM, LUTRAM
from ...errors import FpgagenError
from .carrays import signed_type, unsigned_type

# BIND_STORAGE implementations of the plan's memory kinds.
STORAGE = {BRAM: "bram", LUTRAM: "lutram"}


@dataclass(frozen=True)
class ChannelView:
    """A channel of the top function: `lanes` streams `<name>` and the mask stream `<name>_mask`."""

    name: str
    lanes: int
    depth: int  # per lane
    index_bits: int

    @property
    def mask(self) -> str:
        return f"{self.name}_mask"

    @property
    def mask_depth(self) -> int:
        return MASK_DEPTH

    @property
    def item_type(self) -> str:
        return f"{self.name}_item_t"


def channel_view(name: str, channel: Channel) -> ChannelView:
    return ChannelView(name, channel.lanes, channel.lane_depth, channel.index_bits)


@dataclass(frozen=True, eq=False)
class Tables:
    """A stage's on-chip tables: row tables and lane-major biases, with their C types."""

    row_start: np.ndarray
    row_beats: np.ndarray
    bias: np.ndarray  # (P, addresses): bias[p][a] is output a * P + p, in the accumulator's scale
    start_type: str
    beats_type: str
    bias_type: str


class _Output:
    """How a stage's run() names its output: the next stage's lanes and mask, or the model's
    output stream. Mixed into the stage dataclasses below, which define `pes` and `out_channel`.
    """

    @property
    def out_param(self) -> str:
        if self.out_channel is None:
            return "hls::stream<out_beat>& out"
        channel = self.out_channel
        return (
            f"hls::stream<{channel.item_type}> (&out)[{channel.lanes}], "
            f"hls::stream<ap_uint<{channel.lanes}> >& out_mask"
        )

    @property
    def out_names(self) -> str:
        """The output parameters, as run() hands them on to the engine."""
        return "out" if self.out_channel is None else "out, out_mask"

    @property
    def out_arg(self) -> str:
        return "y_out" if self.out_channel is None else f"{self.out_channel.name}, {self.out_channel.mask}"

    @property
    def in_param(self) -> str:
        channel = self.in_channel
        return (
            f"hls::stream<{channel.item_type}> (&in)[{channel.lanes}], hls::stream<ap_uint<{channel.lanes}> >& in_mask"
        )


@dataclass(frozen=True, eq=False)
class DataflowStage(_Output):
    number: int
    layer_index: int
    name: str  # the layer's name
    namespace: str
    header: str  # weights/stage<s>.h
    in_channel: ChannelView
    out_channel: ChannelView | None  # None: the model's output stream
    pes: int
    n_in: int
    n_out: int
    addresses: int
    beats: int  # ROM depth (at least 1: an empty layer keeps one all-invalid beat)
    acc_bits: int
    weight_bits: int
    local_bits: int
    word_type: str
    rom_storage: str  # BIND_STORAGE impl of the weight ROM
    shift: int
    lo: int
    hi: int
    nnz: int
    tables: Tables
    rom: np.ndarray  # (beats, P) packed slots
    task_depth: int

    sequential = False


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
class SequentialStage(_Output):
    number: int
    namespace: str
    header: str  # weights/stage<s>.h
    in_channel: ChannelView
    out_channel: ChannelView | None
    loop: ChannelView | None  # declared inside the stage
    pes: int
    layers: tuple[SequentialLayer, ...]
    acc_bits: int
    addresses: int
    port: WeightPort
    slot_local_bits: int
    slot_weight_bits: int
    tables: Tables

    sequential = True

    @property
    def loop_index_bits(self) -> int:
        """The loop-back items' index width; a single-layer stage loops nothing back."""
        return self.loop.index_bits if self.loop is not None else 1

    @property
    def loop_depth(self) -> int:
        return self.loop.depth if self.loop is not None else 1

    @property
    def loop_mask_depth(self) -> int:
        return MASK_DEPTH

    @property
    def rows(self) -> int:
        return int(self.tables.row_start.size)

    @property
    def bias_rows(self) -> int:
        return int(self.tables.bias.shape[1])


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
    n_in: int
    part: str
    clock_period_ns: str
    channels: tuple[ChannelView, ...]
    stages: tuple[DataflowStage | SequentialStage, ...]
    layer_names: tuple[str, ...]
    layer_outputs: tuple[int, ...]
    nnz: int

    @property
    def sequential(self) -> list[SequentialStage]:
        return [stage for stage in self.stages if stage.sequential]


def plan_design(plan: EnginePlan) -> Design:
    """The C++ side of an engine plan."""
    model = plan.model
    channels = [channel_view(f"ch{number}", channel) for number, channel in enumerate(plan.channels)]
    stages: list[DataflowStage | SequentialStage] = []
    for stage in plan.stages:
        out_channel = None if stage.last else channels[stage.index + 1]
        if stage.sequential:
            port = plan.interface.ports[stage.port]
            stages.append(_sequential_stage(stage, channels[stage.index], out_channel, port))
        else:
            stages.append(_dataflow_stage(stage, channels[stage.index], out_channel))
    return Design(
        model=model.name,
        top=plan.top,
        namespace=f"{model.name}_stages",
        guard=f"{model.name.upper()}_TOP_H",
        in_lanes=plan.in_lanes,
        out_lanes=plan.out_lanes,
        in_bits=plan.interface.in_bits,
        out_bits=plan.interface.out_bits,
        n_in=model.in_features,
        part=plan.board.part,
        clock_period_ns=f"{clock_period(plan.board.clock_mhz):.3f}",
        channels=tuple(channels),
        stages=tuple(stages),
        layer_names=tuple(layer.name for layer in model.layers),
        layer_outputs=tuple(layer.out_features for layer in model.layers),
        nnz=model.nnz,
    )


def clock_period(clock_mhz: float) -> float:
    """The clock period in ns of the schedule's clock."""
    if not math.isfinite(clock_mhz) or clock_mhz <= 0:
        raise FpgagenError(f"clock {clock_mhz} MHz is not a positive frequency")
    return 1000.0 / clock_mhz


def _dataflow_stage(stage: StagePlan, in_channel: ChannelView, out_channel: ChannelView | None) -> DataflowStage:
    (plan,) = stage.layers
    layer, numerics, shape = plan.layer, plan.layer.numerics, plan.shape
    slot = shape.slot
    word_type, word_np = ("uint32_t", np.uint32) if slot.width <= 32 else ("uint64_t", np.uint64)
    return DataflowStage(
        number=stage.index,
        layer_index=plan.index,
        name=layer.name,
        namespace=stage.name,
        header=f"weights/{stage.name}.h",
        in_channel=in_channel,
        out_channel=out_channel,
        pes=stage.pes,
        n_in=shape.n_in,
        n_out=shape.n_out,
        addresses=shape.addresses,
        beats=shape.rom_beats,
        acc_bits=stage.acc_bits,
        weight_bits=slot.weight_bits,
        local_bits=slot.local_bits,
        word_type=word_type,
        rom_storage=STORAGE[stage.memory("weights").kind],
        shift=numerics.shift,
        lo=numerics.lo_q,
        hi=numerics.hi_q,
        nnz=layer.nnz,
        tables=_tables(stage),
        rom=plan.rom_words.astype(word_np),
        task_depth=ROW_TASK_DEPTH,
    )


def _sequential_layer(plan: LayerPlan, beat_bytes: int) -> SequentialLayer:
    return SequentialLayer(
        index=plan.index,
        name=plan.name,
        n_out=plan.shape.n_out,
        addresses=plan.shape.addresses,
        rows=plan.row_offset,
        bias=plan.bias_offset,
        base=plan.offchip_base // beat_bytes,
        shift=plan.shift,
        lo=plan.lo,
        hi=plan.hi,
    )


def _sequential_stage(
    stage: StagePlan, in_channel: ChannelView, out_channel: ChannelView | None, port: WeightPort
) -> SequentialStage:
    beat_bytes = port.data_bits // 8
    return SequentialStage(
        number=stage.index,
        namespace=stage.name,
        header=f"weights/{stage.name}.h",
        in_channel=in_channel,
        out_channel=out_channel,
        loop=None if stage.loop is None else channel_view("loop", stage.loop),
        pes=stage.pes,
        layers=tuple(_sequential_layer(plan, beat_bytes) for plan in stage.layers),
        acc_bits=stage.acc_bits,
        addresses=stage.addresses,
        port=port,
        slot_local_bits=OFFCHIP_SLOT.local_bits,
        slot_weight_bits=OFFCHIP_SLOT.weight_bits,
        tables=_tables(stage),
    )


def _tables(stage: StagePlan) -> Tables:
    """The stage's stacked row tables and biases (lane-major), in their narrowest C types."""
    row_start, row_beats = stage.row_start, stage.row_beats
    bias = stage.bias.T
    start_type, start_np = unsigned_type(int(row_start.max(initial=0)))
    beats_type, beats_np = unsigned_type(int(row_beats.max(initial=0)))
    return Tables(
        row_start=row_start.astype(start_np),
        row_beats=row_beats.astype(beats_np),
        bias=bias,
        start_type=start_type,
        beats_type=beats_type,
        bias_type=signed_type(int(np.abs(bias).max(initial=0))),
    )
