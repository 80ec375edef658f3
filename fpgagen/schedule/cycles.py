"""A layer's cycles per vector on a stage, and the RTL's pipeline depths they are counted with
(docs/cost-model.md, "Cycles")."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..engine.geometry import MEMORY_LATENCY

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
# A quiet vector's drain (docs/engine.md, "Quiet vectors"): the end words' two registers, no row read.
L_QUIET = 2
# An empty vector's turn at the drain (docs/engine.md, "Empty vectors"): the decision, its end
# words' two registers.
L_EMPTY = 3
# The groups' multiplexer before the requantizers when the drain takes fewer lanes than P (a
# register: one cycle more).
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

# What limits a layer's compute: its issue units and PEs, its memory port, or (a sequential layer)
# the serializer that hands it the outputs of the pass before.
COMPUTE_BOUND, MEMORY_BOUND, INPUT_BOUND = "compute", "memory", "input"


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
