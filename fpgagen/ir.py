"""fpgagen's intermediate representation: a model is a chain of sparse fully connected layers.

Every stage after the front end reads and returns these objects; a pass returns a new model
(`dataclasses.replace`) and never mutates the one it was given. Weights are oriented so that a
batch of inputs as rows computes `Y = X @ W + b` (the Graph Challenge convention), which makes a
row of W the fan-out of one input activation: the unit of work a zero activation lets us skip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from .numerics import FixedFormat, Precision


@dataclass(frozen=True)
class Activation:
    """The clamp applied after the bias: min(max(z, lo), hi). ReLU is (0, inf), none is (-inf, inf)."""

    lo: float = -math.inf
    hi: float = math.inf

    def then(self, outer: Activation) -> Activation:
        """The single clamp equal to applying `self` and then `outer`."""

        def clamp(v: float) -> float:
            return min(max(v, outer.lo), outer.hi)

        return Activation(clamp(self.lo), clamp(self.hi))

    def apply(self, z: np.ndarray) -> np.ndarray:
        return np.clip(z, self.lo, self.hi)

    @property
    def kind(self) -> str:
        if self.lo == -math.inf and self.hi == math.inf:
            return "none"
        if self.lo == 0.0 and self.hi == math.inf:
            return "relu"
        return "clip"

    def __str__(self) -> str:
        return self.kind if self.kind != "clip" else f"clip({self.lo:g}, {self.hi:g})"


@dataclass(frozen=True, eq=False)
class LayerNumerics:
    """How one layer computes in fixed point (set by the quantize pass, see docs/numerics.md)."""

    input_format: FixedFormat
    weight_format: FixedFormat
    output_format: FixedFormat
    weights_q: sp.csr_array  # same sparsity structure as Layer.weights, integer values
    bias_q: np.ndarray  # in the accumulator's scale: input_format.frac + weight_format.frac
    acc_bits: int  # no sum of this layer can overflow a register this wide
    lo_q: int
    hi_q: int

    @property
    def acc_frac(self) -> int:
        return self.input_format.frac + self.weight_format.frac

    @property
    def shift(self) -> int:
        return self.acc_frac - self.output_format.frac


DATAFLOW, SEQUENTIAL = "dataflow", "sequential"
BRAM, URAM, OFFCHIP = "bram", "uram", "offchip"


@dataclass(frozen=True)
class Stage:
    """One engine of a design (docs/engine.md): a dataflow layer, or a run of sequential layers."""

    mode: str  # DATAFLOW (one layer, weights on chip) or SEQUENTIAL (consecutive layers, off chip)
    layers: tuple[int, ...]  # indices into Model.layers, consecutive
    pes: int
    # where a stage's weights live: BRAM for a dataflow stage's ROM, initialized from the bitstream
    # (block RAM, or LUTRAM when small); URAM for a dataflow stage's UltraRAM, which the bitstream
    # cannot initialize, so the load phase fills it at a batch's start (docs/engine.md, "Load
    # phase"); OFFCHIP for a sequential stage, which streams them
    weight_memory: str
    units: int = 1  # issue units: activations the stage takes per cycle (1 for a sequential stage)
    # off-chip memory channels a sequential stage's beats are striped over, a share of each beat
    # each (docs/engine.md, "Striped channels"); 1 for a dataflow stage
    channels: int = 1
    # a dataflow stage whose K issue units each have P PEs of their own, without entry FIFOs, every
    # one holding all of its lane's outputs; the drain adds the K partial sums (docs/engine.md,
    # "Private PEs")
    private: bool = False
    # lanes a dataflow stage's drain requantizes a cycle, P / 2^k, a multiple of the units: the
    # drain reads a local address of P / drain_lanes groups of PEs in turn (docs/engine.md, "Drain
    # lanes"); None: all P at once
    drain_lanes: int | None = None


@dataclass(frozen=True)
class LayerSchedule:
    """What the scheduler decided for one layer."""

    mode: str
    pes: int
    stage: int  # index into Schedule.stages
    weight_memory: str
    units: int = 1
    private: bool = False
    drain_lanes: int | None = None


@dataclass(frozen=True)
class Limit:
    """What keeps a design from a shorter interval (the scheduler's finding, throughput objective):
    `kind` is "reader" (the input stream), "engine" (a layer no faster stage exists for),
    "memory" (a layer whose fastest stage waits for its weights from off-chip memory), a resource
    of the board ("dsp", "bram", "uram", "lut", "ff"), "resources" (several, or each fits alone,
    not all at once) or "channels" (too few off-chip memory channels); `reason` says it in words."""

    kind: str
    reason: str


@dataclass(frozen=True, eq=False)
class Schedule:
    """The scheduler's decisions for a whole design; `estimate` holds the cost model's figures."""

    stages: tuple[Stage, ...]
    in_lanes: int  # values per input beat, and lanes of the reader's channel
    board: str
    clock_mhz: float
    policy: str  # "auto", "dataflow" or "sequential"
    objective: str  # "throughput" or "latency"
    estimate: object | None = None  # fpgagen.schedule.estimates.DesignEstimate
    # every channel between two stages (and the reader's) holds a whole vector's items per
    # sub-channel (fpgagen.engine.geometry.Channel.deep_depth) in this kind of memory, BRAM or URAM,
    # not a few items in LUTRAM (docs/engine.md, "Deep channels"); None: shallow channels
    deep_channels: str | None = None
    # what the scheduler could not prove least in its time ("interval", "latency"): its solver
    # stopped with the best design it had found (fpgagen.schedule.scheduler.PROGRAM_SECONDS)
    unproven: tuple[str, ...] = ()
    # why no design of a shorter interval exists (None under the latency objective)
    limit: Limit | None = None


@dataclass(frozen=True, eq=False)
class Layer:
    """One fully connected layer: y = activation(x @ weights + bias)."""

    name: str  # a C++/Verilog-safe identifier, unique in the model
    origin: str  # the model's own node names, for messages and reports only
    weights: sp.csr_array  # (in_features, out_features), float64, explicit zeros removed
    bias: np.ndarray  # (out_features,), float64
    activation: Activation = field(default_factory=Activation)
    numerics: LayerNumerics | None = None
    schedule: LayerSchedule | None = None
    # after the relabelling pass: the new index of each of the model's outputs of this layer
    output_order: np.ndarray | None = None

    @property
    def in_features(self) -> int:
        return self.weights.shape[0]

    @property
    def out_features(self) -> int:
        return self.weights.shape[1]

    @property
    def nnz(self) -> int:
        return self.weights.nnz

    @property
    def density(self) -> float:
        return self.nnz / (self.in_features * self.out_features)


@dataclass(frozen=True, eq=False)
class Model:
    """A chain of layers, with what the outside world sees of its input and output."""

    name: str  # a C++/Verilog-safe identifier
    layers: tuple[Layer, ...]
    input_name: str
    output_name: str
    input_shape: tuple[int, ...]  # one sample's shape as the model receives it (flattened row-major)
    precision: Precision | None = None  # None until quantized
    input_format: FixedFormat | None = None
    schedule: Schedule | None = None  # None until scheduled
    # the float type of the model file's input, output and constants, which a model fpgagen
    # writes (prune, share) keeps: float16, float32 or float64
    element_type: str = "float32"

    @property
    def in_features(self) -> int:
        return self.layers[0].in_features

    @property
    def out_features(self) -> int:
        return self.layers[-1].out_features

    @property
    def nnz(self) -> int:
        return sum(layer.nnz for layer in self.layers)

    @property
    def quantized(self) -> bool:
        return self.precision is not None

    @property
    def relabelled(self) -> bool:
        """The relabelling pass (fpgagen.passes.relabel) has given each layer's outputs to its PEs."""
        return any(layer.output_order is not None for layer in self.layers)

    def with_layers(self, layers: list[Layer] | tuple[Layer, ...]) -> Model:
        return replace(self, layers=tuple(layers))


def sparse_weights(matrix: np.ndarray | sp.sparray | sp.spmatrix) -> sp.csr_array:
    """The canonical weight container: CSR, float64, sorted indices, no stored zeros."""
    csr = sp.csr_array(matrix, dtype=np.float64)
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr
