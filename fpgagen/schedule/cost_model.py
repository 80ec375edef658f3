"""The cost model: cycles and resources of the engine in docs/engine.md, per layer, stage and design.

Formulas only; the search over schedules is in scheduler.py. docs/cost-model.md states every
formula used here, with the constants and where they come from.

Cycle counts are expectations per input vector: an input activation i costs its row's beats
only when it is nonzero, which happens with probability p_i (the `Activity`). A stage's cycles
depend on its own layers and P only (lane switches are free), so every stage the scheduler can
choose has a fixed interval, latency and resource use: see `StageCost`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import cache

import numpy as np
import scipy.sparse as sp

from ..engine.geometry import (
    OFFCHIP_SLOT_BYTES,
    Channel,
    LayerShape,
    SequentialShape,
    dataflow_memories,
    in_lanes,
    reader_memories,
    sequential_memories,
)
from ..engine.layout import beats_per_row
from ..engine.memory import BRAM as BLOCK_RAM
from ..engine.memory import LUTRAM, REGISTERS, Memory
from ..engine.plan import layer_shape, stage_output
from ..errors import FpgagenError
from ..golden import GoldenModel, flatten_inputs
from ..ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, Layer, Model, Stage
from .boards import Board

# Pipeline depths of the RTL (docs/engine.md, "Timing"), measured in RTL simulation by
# bench/bench_rtl.py: a vector's compute ends 2 cycles after its last row (the end token through
# the issue stage), a drain 2 cycles after its last address (read, requantize), plus 2 more for a
# sparse drain (the held items, then the mask); the AXI reader and RAM model add about 6.
L_COMPUTE = 2
L_DRAIN = 2
L_FLUSH = 2
L_MEMORY = 6

# Logic: per PE, linear in the accumulator width (multiply-accumulate, requantize, forwarding);
# per stage (control, counters); per sequential stage (AXI4 read master, descriptors, loop-back).
# Least-squares fits to Yosys synth_xilinx on seven designs (bench/bench_resources.py).
LANE_LUT_PER_ACC_BIT, LANE_FF_PER_ACC_BIT = 4, 8
STAGE_LUT, STAGE_FF = 1100, 0
SEQUENTIAL_LUT, SEQUENTIAL_FF = 500, 1600

# How memories map to blocks (docs/cost-model.md, "Memories"), as synthesis maps them.
LUTRAM_DEPTH = 64  # bits per LUT used as distributed RAM
BRAM36_SHAPES = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72))
BRAM18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
BRAM36_BITS = 36 * 1024
URAM_BITS = 4096 * 72  # on-chip capacity for the roofline only: URAM holds no weight ROM

COMPUTE_BOUND, MEMORY_BOUND = "compute", "memory"
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

    def __mul__(self, count: int) -> Resources:
        return Resources(self.dsp * count, self.bram * count, self.uram * count, self.lut * count, self.ff * count)

    def as_tuple(self) -> tuple[int, ...]:
        return (self.dsp, self.bram, self.uram, self.lut, self.ff)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def fits(self, budget: Resources) -> bool:
        return all(used <= have for used, have in zip(self.as_tuple(), budget.as_tuple()))


def board_budget(board: Board) -> Resources:
    return Resources(board.dsp, board.bram36, board.uram, board.lut, board.ff)


def lutram_luts(depth: int, width: int) -> int:
    """LUTs of a simple dual-port LUTRAM: 8 LUTs hold 32 x 14 bits (RAM32M16) or 64 x 7 bits
    (RAM64M8), the primitives synthesis picks for the engine's memories."""
    if depth <= 32:
        return 8 * math.ceil(width / 14)
    return 8 * math.ceil(width / 7) * math.ceil(depth / 64)


def bram18_halves(depth: int, width: int) -> int:
    """RAMB18s (halves of a BRAM36) of one memory: the fewest over both block sizes' shapes."""
    whole = min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM36_SHAPES)
    halves = min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM18_SHAPES)
    return min(2 * whole, halves)


@cache
def price(memory: Memory) -> Resources:
    """What `memory.count` alike memories cost, by kind; two that each fit a RAMB18 share a BRAM36."""
    if memory.depth <= 0 or memory.width <= 0:
        return Resources()
    if memory.kind == REGISTERS:
        return Resources(ff=memory.bits)
    if memory.kind == LUTRAM:
        return Resources(lut=lutram_luts(memory.depth, memory.width) * memory.count)
    if memory.kind == BLOCK_RAM:
        return Resources(bram=math.ceil(memory.count * bram18_halves(memory.depth, memory.width) / 2))
    raise ValueError(f"no price for memories of kind {memory.kind!r}")


def total(memories: list[Memory]) -> Resources:
    return sum((price(memory) for memory in memories), Resources())


SEQUENTIAL_LOGIC = Resources(lut=SEQUENTIAL_LUT, ff=SEQUENTIAL_FF)
READER_LOGIC = Resources(lut=STAGE_LUT, ff=STAGE_FF)


@cache
def lane_logic(pes: int, acc_bits: int) -> Resources:
    """P multiply-accumulate PEs (one DSP each) plus the stage's control."""
    return Resources(
        dsp=pes,
        lut=pes * LANE_LUT_PER_ACC_BIT * acc_bits + STAGE_LUT,
        ff=pes * LANE_FF_PER_ACC_BIT * acc_bits + STAGE_FF,
    )


@dataclass(frozen=True, eq=False)
class Activity:
    """Per layer, the probability that each of its inputs is nonzero."""

    probabilities: tuple[np.ndarray, ...]
    source: str  # said in every output: what the cycle counts assume

    @classmethod
    def uniform(cls, model: Model, density: float = 1.0) -> Activity:
        if not 0.0 <= density <= 1.0:
            raise FpgagenError(f"activation density {density} is outside [0, 1]")
        note = " (the worst case: every input nonzero)" if density == 1.0 else ""
        return cls(
            tuple(np.full(layer.in_features, float(density)) for layer in model.layers),
            f"uniform activation density {density:g}{note}",
        )

    @classmethod
    def from_calibration(cls, model: Model, x: np.ndarray) -> Activity:
        """How often each input of each layer is nonzero in fixed point on the inputs `x`."""
        if not model.quantized:
            raise FpgagenError("measure activity on a quantized model")
        x = flatten_inputs(model, x, "calibration inputs")
        if x.shape[0] == 0:
            raise FpgagenError("calibration inputs: the array holds no samples")
        golden = GoldenModel(model)
        x_q = golden.quantize_inputs(x)
        inputs = [sp.csr_array(x_q), *golden.run_q(x_q, trace=True)[:-1]]
        batch = x.shape[0]
        return cls(
            tuple(
                np.bincount(act.indices, minlength=layer.in_features) / batch
                for act, layer in zip(inputs, model.layers)
            ),
            f"activation density measured on {batch} calibration inputs",
        )


@dataclass(frozen=True)
class LayerWork:
    """What one layer asks of an engine of P PEs, in expected beats per vector."""

    index: int
    shape: LayerShape  # its sizes on P PEs (fpgagen.engine.geometry)
    issued: float  # sum_i p_i max(1, beats_i): beats issued per vector
    streamed: float  # sum_i p_i beats_i: beats read from off chip per vector (sequential)
    dense: bool  # the model's last layer: drains dense beats, no lanes to flush

    @property
    def pes(self) -> int:
        return self.shape.pes

    @property
    def drain(self) -> int:
        return self.shape.addresses + L_DRAIN + (0 if self.dense else L_FLUSH)

    def memory_cycles(self, board: Board) -> float:
        """Cycles to bring the streamed beats (P off-chip slots each) over one memory channel."""
        if self.streamed == 0:
            return 0.0
        if board.channels == 0:
            return math.inf
        return self.streamed * OFFCHIP_SLOT_BYTES * self.pes / board.bytes_per_cycle


@dataclass(frozen=True)
class StageCost:
    """A stage's cycles per vector and resources, whatever stages surround it."""

    stage: Stage
    interval: float
    latency: float
    resources: Resources

    @property
    def first(self) -> int:
        return self.stage.layers[0]

    @property
    def last(self) -> int:
        return self.stage.layers[-1]


@dataclass(frozen=True)
class ReaderCost:
    lanes: int
    interval: int
    resources: Resources

    @property
    def latency(self) -> int:
        return self.interval


@dataclass(frozen=True)
class Roofline:
    """The board's limits for this model, in vectors per second (docs/cost-model.md)."""

    useful_macs: float  # per vector: sum over layers of sum_i p_i nnz(row i)
    compute_bound: float
    offchip_bytes: float  # per vector, that no placement of the weights can avoid
    memory_bound: float  # inf when every weight fits on chip

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
    weight_memory: str
    compute: float
    drain: int
    bound: str  # COMPUTE_BOUND or MEMORY_BOUND: which term of the compute time dominates
    resources: Resources  # a dataflow layer: its stage; a sequential one: none (its stage owns the tables)

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "name": self.name,
            "mode": self.mode,
            "pes": self.pes,
            "stage": self.stage,
            "weight_memory": self.weight_memory,
            "cycles": {"compute": self.compute, "drain": self.drain},
            "bound": self.bound,
            "resources": self.resources.as_dict(),
        }


@dataclass(frozen=True)
class StageEstimate:
    index: int
    mode: str
    layers: tuple[int, ...]
    pes: int
    weight_memory: str
    lanes_in: int  # lanes of the channel that feeds it (the reader's K for the first stage)
    interval: float
    latency: float
    resources: Resources

    def to_dict(self) -> dict:
        values = asdict(self)
        values["layers"] = list(self.layers)
        values["resources"] = self.resources.as_dict()
        return values


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
    resources: Resources = field(init=False)
    interval: float = field(init=False)
    latency: float = field(init=False)

    def __post_init__(self) -> None:
        stages_total = sum((stage.resources for stage in self.stages), Resources())
        object.__setattr__(self, "resources", stages_total + self.reader.resources)
        object.__setattr__(self, "interval", max([self.reader.interval, *(s.interval for s in self.stages)]))
        object.__setattr__(self, "latency", self.reader.latency + sum(s.latency for s in self.stages))

    @property
    def budget(self) -> Resources:
        return board_budget(self.board)

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
            "constants": {"L_compute": L_COMPUTE, "L_drain": L_DRAIN, "L_flush": L_FLUSH, "L_memory": L_MEMORY},
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
                "offchip_bytes": roofline.offchip_bytes,
                "memory_bound": _finite(roofline.memory_bound),
                "bound": _finite(roofline.bound),
                "ratio": self.roofline_ratio,
            },
        }


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value


class CostModel:
    """The cost of every stage the engine can build for `model` on `board` under `activity`."""

    def __init__(self, model: Model, board: Board, activity: Activity):
        if not model.quantized:
            raise FpgagenError(f"model {model.name} is not quantized; the cost model needs its integer weights")
        if len(activity.probabilities) != len(model.layers) or any(
            p.shape != (layer.in_features,) for p, layer in zip(activity.probabilities, model.layers)
        ):
            raise FpgagenError(f"the activity does not match the layers of model {model.name}")
        self.model = model
        self.board = board
        self.activity = activity
        self._work: dict[tuple[int, int], LayerWork] = {}

    @property
    def layers(self) -> tuple[Layer, ...]:
        return self.model.layers

    def work(self, index: int, pes: int) -> LayerWork:
        key = (index, pes)
        if key not in self._work:
            layer = self.layers[index]
            beats = beats_per_row(layer.numerics.weights_q, pes)
            p = self.activity.probabilities[index]
            self._work[key] = LayerWork(
                index=index,
                shape=layer_shape(layer, pes, beats),
                issued=float(p @ np.maximum(beats, 1)),
                streamed=float(p @ beats),
                dense=self.is_last(index),
            )
        return self._work[key]

    def is_last(self, index: int) -> bool:
        return index == len(self.layers) - 1

    def reader_channel(self, lanes: int | None = None) -> Channel:
        """The input reader's channel: `lanes` lanes (by default the engine's choice, `in_lanes`)."""
        n_in = self.model.in_features
        return Channel(in_lanes(n_in) if lanes is None else lanes, n_in)

    def reader_memories(self, lanes: int | None = None) -> list[Memory]:
        return reader_memories(self.reader_channel(lanes))

    def reader(self, lanes: int | None = None) -> ReaderCost:
        channel = self.reader_channel(lanes)
        return ReaderCost(channel.lanes, channel.lane_depth, total(reader_memories(channel)) + READER_LOGIC)

    def compute(self, index: int, pes: int, mode: str) -> tuple[float, str]:
        """Compute cycles of one layer on P lanes in `mode`, and which term dominates them."""
        work = self.work(index, pes)
        if mode == DATAFLOW:
            return work.issued + L_COMPUTE, COMPUTE_BOUND
        memory = work.memory_cycles(self.board)
        bound = MEMORY_BOUND if memory > work.issued else COMPUTE_BOUND
        return max(work.issued, memory) + L_COMPUTE + L_MEMORY, bound

    # Dataflow stages ---------------------------------------------------------------------------

    def dataflow_memories(self, index: int, pes: int) -> list[Memory]:
        """Every memory of a dataflow stage running layer `index` on P PEs (fpgagen.engine)."""
        return dataflow_memories(self.work(index, pes).shape, stage_output(self.model, index, pes))

    def dataflow(self, index: int, pes: int) -> StageCost:
        work = self.work(index, pes)
        compute, _ = self.compute(index, pes, DATAFLOW)
        return StageCost(
            stage=Stage(DATAFLOW, (index,), pes, BRAM),
            interval=max(compute, work.drain),  # the two accumulator banks ping-pong
            latency=compute + work.drain,
            resources=total(self.dataflow_memories(index, pes)) + lane_logic(pes, work.shape.acc_bits),
        )

    # Sequential stages -------------------------------------------------------------------------

    def sequential_runs(self, first: int, pes: int) -> Iterator[StageCost]:
        """Sequential stages on P PEs running layers first..b, for b = first, first+1, ...

        Built incrementally (the stage's shape grows by one layer at a time), so all runs from
        `first` cost O(layers) together; the scheduler asks for every run of the model.
        """
        shape = SequentialShape(pes)
        time = 0.0
        for last in range(first, len(self.layers)):
            work = self.work(last, pes)
            shape = shape.then(work.shape)
            compute, _ = self.compute(last, pes, SEQUENTIAL)
            time += compute + work.drain
            memories = sequential_memories(shape, stage_output(self.model, last, pes))
            yield StageCost(
                stage=Stage(SEQUENTIAL, tuple(range(first, last + 1)), pes, OFFCHIP),
                interval=time,
                latency=time,
                resources=total(memories) + lane_logic(pes, shape.acc_bits) + SEQUENTIAL_LOGIC,
            )

    def sequential_memories(self, first: int, last: int, pes: int) -> list[Memory]:
        """Every memory of a sequential stage running layers first..last (fpgagen.engine)."""
        shape = SequentialShape(pes)
        for index in range(first, last + 1):
            shape = shape.then(self.work(index, pes).shape)
        return sequential_memories(shape, stage_output(self.model, last, pes))

    def sequential(self, first: int, last: int, pes: int) -> StageCost:
        for cost in self.sequential_runs(first, pes):
            if cost.last == last:
                return cost
        raise ValueError(f"no layers {first}..{last}")

    def stage(self, stage: Stage) -> StageCost:
        if stage.mode == DATAFLOW:
            return self.dataflow(stage.layers[0], stage.pes)
        return self.sequential(stage.layers[0], stage.layers[-1], stage.pes)

    # Whole designs -----------------------------------------------------------------------------

    def roofline(self) -> Roofline:
        """Compute bound: all DSPs busy on useful MACs. Memory bound: the off-chip traffic left
        when on-chip memory holds the most often used weights (a fractional knapsack)."""
        board = self.board
        useful = []  # (probability, nonzeros) of every row of every layer
        bits_per_weight = []
        for layer, p in zip(self.layers, self.activity.probabilities):
            nnz = np.diff(layer.numerics.weights_q.indptr)
            useful.append((p, nnz))
            # the smallest on-chip entry: valid bit, one local-address bit, the weight
            bits_per_weight.append(np.full(layer.in_features, 2 + layer.numerics.weight_format.bits))
        p = np.concatenate([u[0] for u in useful])
        nnz = np.concatenate([u[1] for u in useful]).astype(np.float64)
        entry_bits = np.concatenate(bits_per_weight)
        macs = float(p @ nnz)
        compute_bound = math.inf if macs == 0 else board.dsp * board.clock_hz / macs
        # Every LUT counted as 64 bits of distributed RAM overstates the fabric's storage, which
        # keeps this an upper bound on any design.
        capacity = board.bram36 * BRAM36_BITS + board.uram * URAM_BITS + board.lut * LUTRAM_DEPTH
        order = np.argsort(-p, kind="stable")
        row_bits = (nnz * entry_bits)[order]
        kept_bits = np.minimum(row_bits, np.maximum(0.0, capacity - (np.cumsum(row_bits) - row_bits)))
        left_weights = (row_bits - kept_bits) / entry_bits[order]
        offchip = float(p[order] @ left_weights) * OFFCHIP_SLOT_BYTES
        bandwidth = board.channels * board.channel_gbps * 1e9
        if offchip <= 0:
            memory_bound = math.inf
        else:
            memory_bound = bandwidth / offchip
        return Roofline(macs, compute_bound, offchip, memory_bound)

    def estimate(self, stages: tuple[Stage, ...], batch: int, in_lanes: int | None = None) -> DesignEstimate:
        """The figures of a design of `stages` (and a reader of `in_lanes` lanes, by default the
        engine's choice) over a batch."""
        reader = self.reader(in_lanes)
        lanes_in = reader.lanes
        layer_estimates: list[LayerEstimate] = []
        stage_estimates: list[StageEstimate] = []
        for number, stage in enumerate(stages):
            cost = self.stage(stage)
            layer_estimates += self._layer_estimates(number, stage, cost)
            stage_estimates.append(
                StageEstimate(
                    index=number,
                    mode=stage.mode,
                    layers=stage.layers,
                    pes=stage.pes,
                    weight_memory=stage.weight_memory,
                    lanes_in=lanes_in,
                    interval=cost.interval,
                    latency=cost.latency,
                    resources=cost.resources,
                )
            )
            lanes_in = stage.pes
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
        )

    def _layer_estimates(self, number: int, stage: Stage, cost: StageCost) -> list[LayerEstimate]:
        estimates = []
        for index in stage.layers:
            compute, bound = self.compute(index, stage.pes, stage.mode)
            estimates.append(
                LayerEstimate(
                    index=index,
                    name=self.layers[index].name,
                    mode=stage.mode,
                    pes=stage.pes,
                    stage=number,
                    weight_memory=stage.weight_memory,
                    compute=compute,
                    drain=self.work(index, stage.pes).drain,
                    bound=bound,
                    # a dataflow layer is its stage; a sequential one shares its stage's tables and engine
                    resources=cost.resources if stage.mode == DATAFLOW else Resources(),
                )
            )
        return estimates
