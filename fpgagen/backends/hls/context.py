"""What the HLS templates print, prepared from the engine plan (fpgagen.backends.engine_plan).

The plan holds the engine's parameters, shared with the RTL back end: lanes, layouts, widths,
channel depths, off-chip images. This module adds only what is particular to C++: names (from
`Model.name` and `Layer.name`, already identifiers), C types of the tables, the packed ROM slots,
the header files and the FPGA part. Templates print these fields; they decide nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import FpgagenError
from ...ir import DATAFLOW
from ...layout import OFFCHIP_ENTRY_BYTES
from ...schedule.boards import load_board
from ..engine_plan import MASK_DEPTH, EnginePlan, LayerPlan, StagePlan, bits_for
from .carrays import signed_type, unsigned_type

MAX_BURST = 256  # AXI4 INCR bursts are at most 256 beats


@dataclass(frozen=True)
class Link:
    """A channel of the top function: lanes `c<s>` and mask `c<s>_mask` feed stage s."""

    name: str
    lanes: int
    depth: int  # per lane

    @property
    def mask(self) -> str:
        return f"{self.name}_mask"

    @property
    def mask_depth(self) -> int:
        return MASK_DEPTH


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
    output stream. Mixed into the stage dataclasses below, which define `lanes` and `out_link`.
    """

    @property
    def out_param(self) -> str:
        if self.out_link is None:
            return "hls::stream<out_beat>& out"
        return f"hls::stream<item_t> (&out)[{self.lanes}], hls::stream<ap_uint<{self.lanes}> >& out_mask"

    @property
    def out_names(self) -> str:
        """The output parameters, as run() hands them on to the engine."""
        return "out" if self.out_link is None else "out, out_mask"

    @property
    def out_arg(self) -> str:
        return "y_out" if self.out_link is None else f"{self.out_link.name}, {self.out_link.mask}"


@dataclass(frozen=True, eq=False)
class DataflowStage(_Output):
    number: int
    layer_index: int
    name: str  # the layer's name
    namespace: str
    header: str  # weights/<layer>.h
    in_link: Link
    out_link: Link | None  # None: the model's output stream
    lanes: int
    n_in: int
    n_out: int
    depth: int
    beats: int  # ROM depth (at least 1: an empty layer keeps one all-invalid beat)
    acc_bits: int
    weight_bits: int
    local_bits: int
    word_type: str
    shift: int
    lo: int
    hi: int
    nnz: int
    tables: Tables
    rom: np.ndarray  # (beats, P) packed slots

    sequential = False


@dataclass(frozen=True)
class SequentialLayer:
    index: int
    name: str
    position: int  # within its stage
    n_out: int
    depth: int
    rows: int  # offset in the stage's row tables
    bias: int  # offset in the stage's bias table (local addresses)
    base: int  # first beat in the off-chip image
    shift: int
    lo: int
    hi: int


@dataclass(frozen=True, eq=False)
class SequentialStage(_Output):
    number: int
    ordinal: int  # k: AXI port weights<k>, bundle gmem<k>, image weights<k>.bin
    namespace: str
    header: str  # weights/seq<k>.tables.h
    in_link: Link
    out_link: Link | None
    lanes: int
    layers: tuple[SequentialLayer, ...]
    acc_bits: int
    max_depth: int
    image: bytes  # weights<k>.bin
    loop_depth: int  # per loop-back lane
    max_burst: int
    tables: Tables

    sequential = True

    @property
    def port(self) -> str:
        return f"weights{self.ordinal}"

    @property
    def bundle(self) -> str:
        return f"gmem{self.ordinal}"

    @property
    def image_beats(self) -> int:
        return len(self.image) // (OFFCHIP_ENTRY_BYTES * self.lanes)

    @property
    def axi_depth(self) -> int:
        """Beats of the off-chip image, as the m_axi depth co-simulation needs (at least 1)."""
        return max(1, self.image_beats)

    @property
    def rows(self) -> int:
        return int(self.tables.row_start.size)

    @property
    def bias_depth(self) -> int:
        return int(self.tables.bias.shape[1])

    @property
    def loop_mask_depth(self) -> int:
        return MASK_DEPTH


@dataclass(frozen=True, eq=False)
class Design:
    model: str
    top: str
    namespace: str
    guard: str
    in_lanes: int
    out_lanes: int
    n_in: int
    index_bits: int
    part: str
    clock_period_ns: str
    links: tuple[Link, ...]
    stages: tuple[DataflowStage | SequentialStage, ...]
    layer_names: tuple[str, ...]
    layer_outputs: tuple[int, ...]
    nnz: int

    @property
    def sequential(self) -> list[SequentialStage]:
        return [stage for stage in self.stages if stage.sequential]


def plan_design(plan: EnginePlan) -> Design:
    """The C++ side of an engine plan."""
    model, schedule = plan.model, plan.model.schedule
    links = [Link(f"c{number}", channel.lanes, channel.depth) for number, channel in enumerate(plan.channels)]
    stages: list[DataflowStage | SequentialStage] = []
    for stage in plan.stages:
        out_link = None if stage.last else links[stage.index + 1]
        if stage.mode == DATAFLOW:
            stages.append(_dataflow_stage(stage, links[stage.index], out_link))
        else:
            stages.append(_sequential_stage(stage, links[stage.index], out_link))
    return Design(
        model=model.name,
        top=plan.top,
        namespace=f"{model.name}_stages",
        guard=f"{model.name.upper()}_TOP_H",
        in_lanes=plan.in_lanes,
        out_lanes=plan.out_lanes,
        n_in=model.in_features,
        index_bits=plan.index_bits,
        part=load_board(schedule.board).part,
        clock_period_ns=f"{clock_period(schedule.clock_mhz):.3f}",
        links=tuple(links),
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


def _dataflow_stage(stage: StagePlan, in_link: Link, out_link: Link | None) -> DataflowStage:
    (plan,) = stage.layers
    layer, num = plan.layer, plan.layer.numerics
    weight_bits = num.weight_format.bits
    local_bits = bits_for(plan.depth - 1)
    word_type, word_np = ("uint32_t", np.uint32) if 1 + local_bits + weight_bits <= 32 else ("uint64_t", np.uint64)
    rom = _pack_slots(plan, weight_bits, local_bits, word_np)
    return DataflowStage(
        number=stage.index,
        layer_index=plan.index,
        name=layer.name,
        namespace=f"layer_{layer.name}",
        header=f"weights/{layer.name}.h",
        in_link=in_link,
        out_link=out_link,
        lanes=stage.pes,
        n_in=layer.in_features,
        n_out=layer.out_features,
        depth=plan.depth,
        beats=int(rom.shape[0]),
        acc_bits=plan.acc_bits,
        weight_bits=weight_bits,
        local_bits=local_bits,
        word_type=word_type,
        shift=num.shift,
        lo=num.lo_q,
        hi=num.hi_q,
        nnz=layer.nnz,
        tables=_tables(stage),
        rom=rom,
    )


def _pack_slots(plan: LayerPlan, weight_bits: int, local_bits: int, word_np: type) -> np.ndarray:
    """(beats, P) words valid << (LB + WB) | local << WB | (w & (2^WB - 1)); one empty beat at least."""
    layout = plan.layout
    if layout.beats == 0:
        return np.zeros((1, layout.pes), dtype=word_np)
    words = (
        (layout.valid.astype(np.uint64) << np.uint64(local_bits + weight_bits))
        | (layout.local.astype(np.uint64) << np.uint64(weight_bits))
        | (layout.weight.astype(np.int64) & ((1 << weight_bits) - 1)).astype(np.uint64)
    )
    return words.astype(word_np)


def _sequential_stage(stage: StagePlan, in_link: Link, out_link: Link | None) -> SequentialStage:
    beat_bytes = OFFCHIP_ENTRY_BYTES * stage.pes
    row_offsets = np.cumsum([0] + [plan.layer.in_features for plan in stage.layers])
    bias_offsets = np.cumsum([0] + [plan.depth for plan in stage.layers])
    layers = tuple(
        SequentialLayer(
            index=plan.index,
            name=plan.layer.name,
            position=position,
            n_out=plan.layer.out_features,
            depth=plan.depth,
            rows=int(row_offsets[position]),
            bias=int(bias_offsets[position]),
            base=plan.dram_base // beat_bytes,
            shift=plan.layer.numerics.shift,
            lo=plan.layer.numerics.lo_q,
            hi=plan.layer.numerics.hi_q,
        )
        for position, plan in enumerate(stage.layers)
    )
    return SequentialStage(
        number=stage.index,
        ordinal=stage.port,
        namespace=f"seq{stage.port}",
        header=f"weights/seq{stage.port}.tables.h",
        in_link=in_link,
        out_link=out_link,
        lanes=stage.pes,
        layers=layers,
        acc_bits=stage.acc_bits,
        max_depth=stage.depth,
        image=stage.offchip_image,
        loop_depth=stage.loop_depth,
        max_burst=min(MAX_BURST, max(1, max(plan.max_row_beats for plan in stage.layers))),
        tables=_tables(stage),
    )


def _tables(stage: StagePlan) -> Tables:
    """Row tables and lane-major biases of the stage's layers, concatenated."""
    row_start = np.concatenate([plan.layout.row_start for plan in stage.layers])
    row_beats = np.concatenate([plan.layout.row_beats for plan in stage.layers])
    lane_bias = []
    for plan in stage.layers:
        padded = np.zeros(plan.depth * stage.pes, dtype=np.int64)
        padded[: plan.layer.out_features] = plan.layer.numerics.bias_q
        lane_bias.append(padded.reshape(plan.depth, stage.pes).T)
    bias = np.concatenate(lane_bias, axis=1)
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
