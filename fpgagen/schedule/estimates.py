"""The cost model's figures of a stage and of a whole design: what the scheduler compares and
`fpgagen schedule --json` prints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..engine.geometry import MEMORY_LATENCY
from ..ir import SEQUENTIAL, Stage
from .boards import Board
from .cycles import (
    L_COMPUTE,
    L_DRAIN,
    L_HAND_OFF,
    L_LOOKUP,
    L_MEMORY,
    L_PASS,
    L_READER,
    L_SINGLE_CYCLE,
    L_WORDS,
    LayerCycles,
)
from .resources import Resources, board_budget


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
    interval: float  # cycles between vectors in steady state: see pacing.design_interval
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


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value
