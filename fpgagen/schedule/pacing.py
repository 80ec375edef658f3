"""How a design's stages pace each other, vector by vector: the tandem line of the steady state and
the hand-offs of designs in lockstep (docs/cost-model.md, "Designs")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..engine.geometry import DRAIN_SLACK, drained_words
from ..ir import SEQUENTIAL, Stage
from .cycles import L_PASS

# A sequential stage's drain starts this long after its serializer wrote the end item of the
# vector before (fg_seq_stage.v's `passing`): chained_interval.
L_PASSING = 2
# passes of the activity's sample through the tandem line (design_interval)
TANDEM_PASSES = 4
# Vectors a stage finishes ahead of the next through a deep channel (design_interval):
# measured in Verilator as the tandem line that reproduces the RTL's interval, whatever the channel's
# depth. Graph Challenge 1024 x 8, its 32 images four times: at P = 32, K = 2 (the channels' vectors
# up to 513 items a sub-channel) 676.0 cycles a vector with 512, 1024 and 2048 items alike, modelled
# 682.2 (2 ahead), 639.0 (4 ahead), 721.7 (1 ahead); at P = 64, K = 4 (257 items), 512 items: 357.5,
# modelled 348.9 (2 ahead). What holds a stage is its drain's word FIFO, not the channel (docs/engine.md,
# "Deep channels"): with 128-word FIFOs instead of 32 the RTL ran as the line does 3 or more ahead.
# Since a drain writes no word without a nonzero value, only the vectors with a nonzero output at
# a stage count (CostModel.placed): GC 1024 x 8 at P = 64, K = 4 runs at 328.0 (modelled 328.5),
# and GC 1024 x 24 with its deep layers at P = 40, K = 2, half of its images dead there, at 597.7
# (594.4; 652.8 counting every vector), first result to last over four passes.
DEEP_CHANNEL_AHEAD = 2
# Vectors a stage finishes ahead of the next through a shallow channel: its two banks, one being
# drained into the channel as the next stage takes the items, so a stage finishes vector v only
# once the next has finished vector v - 2 (taken its items, all but the few the channel holds).
# Measured in Verilator, first result to last over four passes of 32 vectors, the same designs
# with shallow channels: Graph Challenge 1024 x 8 at P = 64, K = 4 328.0 (modelled 327.2), at
# P = 40, K = 2 612.7 (597.0), the 1024-wide 90%-sparse MLP of bench_rtl 865.7 (882.3); the rule
# before, every vector waiting for its slowest stage (right while a drain wrote a word for every
# address), said 397.2, 735.6 and 891.8.
SHALLOW_CHANNEL_AHEAD = 1
# Vectors a dataflow stage's issue units, PEs and drain finish ahead of its serializers, a unit of
# their own in the tandem line (CostModel.tandem_line): the drain of vector v - 1 waits for room in
# the word FIFOs, and vector v + 1 for the bank it holds. Measured in Verilator (bench_rtl, first
# result to last; docs/cost-model.md, "Designs"): Graph Challenge 1024 x 8, the scheduler's design,
# 163.4 cycles a vector, modelled 165.8 (175.2 with 0 ahead; 172.8 with the serializers inside the
# stage's unit, holding each vector for the longer of its compute and its outputs, where one
# vector's outputs leave while the next one computes); the other dataflow designs as before.
WORD_FIFO_AHEAD = 1


def word_fifo_ahead(addresses: int, pes: int, drain_lanes: int | None) -> float:
    """How far a dataflow stage's drain runs ahead of its serializers (its capacity in the tandem
    line): WORD_FIFO_AHEAD where the word FIFOs have room for a whole vector's words beyond the
    DRAIN_SLACK words in flight, else the part of a vector they have room for. A drain holds its
    bank until its last word is in, so the bank of v - 1 comes free only once the serializers are
    within that part of their end of v - 1 (docs/cost-model.md, "Word FIFOs with room for part of
    a vector"). Verilator, a first stage of P = 12, private, on Graph Challenge 1024 x 4 (86 words
    a vector at each serializer, room for 19; the other stages the scheduler's): K = 4 178.0
    cycles a vector, modelled 177.0 (166.0 a whole vector ahead); K = 2 335.0, modelled 340.9
    (320.8). bench_rtl's designs and GC 1024 x 120's interval are as before."""
    lanes = drain_lanes or pes
    words = addresses * (pes // lanes)  # a vector's words at each serializer: a PE's addresses, P / D steps each
    room = (drained_words(pes, lanes) - DRAIN_SLACK) / words
    return WORD_FIFO_AHEAD if room >= 1 else room


# Items a sub-channel holds beyond its FIFO's depth: the FIFO's output register and the consumer's
# merger's head and spare registers (fg_fifo.v, fg_merger.v).
CHANNEL_EXTRA_ITEMS = 3


# A sequential stage that hands its outputs to another stage holds the design in step with it
# (`in_lockstep`): it starts a pass only once the pass before has drained, its drain waits for its
# serializer to have emitted the vector before, and the serializer for the next stage to take the
# items, which it does only while open for that vector. chained_interval follows each
# vector through these hand-offs (docs/cost-model.md, "Designs"). Measured in Verilator (bench_rtl's
# gc-seq-chain, Graph Challenge 1024 x 8 on a U280 cut down to 40 BRAM36: sequential, dataflow, three
# sequential, three dataflow stages; 32 images, steady state): 770.3 cycles a vector through shallow
# channels, 754.0 through deep ones, modelled 765.1 and 750.5, where "each vector waits for its
# slowest unit" said 666.4 for both; tests/test_performance.py's design on 20 BRAM36 (sequential,
# two dataflow, sequential; its 32 images four times) 612.3, modelled 594.4 (the rule before 634.7);
# GC 1024 x 3, a sequential stage of two layers at P = 32 feeding a dataflow stage at P = 16, K = 1,
# 1,494.4 through a shallow channel and 1,184.7 through a deep one, modelled 1,497.8 and 1,176.5.
def in_lockstep(stages: Sequence[Stage]) -> bool:
    """Whether a design's stages hand vectors on in step (chained_interval): a
    sequential stage hands its outputs to another stage (docs/cost-model.md, "Designs"). The last
    stage's outputs leave the design."""
    return any(stage.mode == SEQUENTIAL for stage in stages[:-1])


@dataclass(frozen=True)
class ChainedStage:
    """A stage as chained_interval and CostModel.first_result follow a vector through
    it, per vector."""

    sequential: bool
    # a sequential stage's first pass, its inputs all there; a dataflow stage's hold of the vector,
    # its compute or the drain of the vector before (LayerCycles.computing), up to its own drain
    compute: np.ndarray
    tail: np.ndarray  # from its last input's arrival to the end of that compute
    drain: np.ndarray  # a sequential stage's first pass's drain and every later pass (a dataflow stage: 0)
    last_drain: float  # a sequential stage's last pass's drain, its serializer's start (a dataflow stage: 0)
    outputs: np.ndarray  # from its last drain's start to its serializers' last item, unhindered
    items: np.ndarray  # the items its busiest serializer emits
    takes: np.ndarray  # from its opening for a vector to taking that vector's last item, unhindered
    buffer: int  # items the channel into it holds

    def repeated(self, vectors: int, passes: int) -> ChainedStage:
        """This stage with each per-vector figure for `vectors` vectors (one expected vector
        repeated), the sample run `passes` times in a row."""
        arrays = ("compute", "tail", "drain", "outputs", "items", "takes")
        return replace(self, **{name: _repeated(getattr(self, name), vectors, passes) for name in arrays})


def _repeated(values: np.ndarray, vectors: int, passes: int) -> np.ndarray:
    return np.tile(np.broadcast_to(np.asarray(values, dtype=np.float64), (vectors,)), passes)


def chained_interval(reader: np.ndarray, stages: list[ChainedStage]) -> float:
    """Cycles between vectors of a design in lockstep (`in_lockstep`), each vector followed through
    its stages' hand-offs (docs/cost-model.md, "Designs"). A stage opens for vector v (takes its
    items) once a sequential stage has drained v - 1, or a dataflow stage is done holding v - 1
    (LayerCycles.computing); it computes v until its last item came and the pass's tail after it;
    a sequential stage's drain waits for its serializer to have emitted v - 1; a stage's
    serializers emit v after its drain starts, no faster than the next stage takes the items once
    open, the channel holding `buffer` of them. The sample runs TANDEM_PASSES times in a row and
    the interval is the spacing of the last stage's outputs over the last pass."""
    vectors = max(reader.size, *(stage.compute.size for stage in stages))
    emitting = _repeated(reader, vectors, TANDEM_PASSES)
    runs = [stage.repeated(vectors, TANDEM_PASSES) for stage in stages]
    total = vectors * TANDEM_PASSES
    # a sequential stage's last drain done, a dataflow stage's drain started: it opens for the next
    finished = np.zeros((len(stages), total))
    emitted = np.zeros((len(stages) + 1, total))  # the reader's and each stage's last item of the vector
    for v in range(total):
        opened = finished[:, v - 1] if v else np.zeros(len(stages))
        before = emitted[0, v - 1] if v else 0.0
        emitted[0, v] = max(before + emitting[v], opened[0] + emitting[v] - stages[0].buffer)
        for s, run in enumerate(runs):
            arrived = emitted[s, v]
            previous = emitted[s + 1, v - 1] if v else 0.0
            if run.sequential:
                computed = max(opened[s] + L_PASS + run.compute[v], arrived + run.tail[v])
                done = max(computed, previous + L_PASSING) + run.drain[v]
                out = done - run.last_drain + run.outputs[v]
            else:
                done = max(opened[s] + run.compute[v], arrived + run.tail[v])
                out = max(done + run.outputs[v], previous + run.items[v])
            if s + 1 < len(runs):
                out = float(handed_on(out, run.items[v], runs[s + 1].takes[v], runs[s + 1].buffer, opened[s + 1]))
            finished[s, v], emitted[s + 1, v] = done, out
    last = emitted[-1]
    return float(last[-1] - last[-vectors - 1]) / vectors


def handed_on(
    out: np.ndarray | float,
    items: np.ndarray | float,
    takes: np.ndarray | float,
    buffer: int,
    opened: np.ndarray | float,
) -> np.ndarray:
    """When a stage's last item has left, `out` unhindered: the next stage takes its `items` at
    its own pace (`takes`) from its opening or the first item, whichever is later, and the channel
    between holds the last `buffer` of them."""
    items = np.asarray(items, dtype=np.float64)
    paced = np.maximum(opened, out - items) + np.maximum(items, takes) * (1.0 - buffer / np.maximum(items, 1.0))
    return np.where(items > buffer, np.maximum(out, paced), out)


def by_vector(held: list[np.ndarray]) -> np.ndarray:
    """(units, vectors): how long each unit holds each vector, a unit's one expected vector
    repeated for every vector of the sample."""
    vectors = max(h.size for h in held)
    return np.array([np.broadcast_to(h, (vectors,)) for h in held])


def design_interval(held: list[np.ndarray], capacities: list[float], placed: list[np.ndarray] | None = None) -> float:
    """Cycles between vectors in steady state, from how long the reader and each stage hold
    each vector (docs/cost-model.md, "Designs").

    A tandem line: each unit takes the vectors in order, each as soon as it has finished the
    one before and the unit before has finished it, and holds it until there is room behind:
    channel s lets unit s finish a vector `capacities[s]` vectors before unit s + 1 has
    finished it (SHALLOW_CHANNEL_AHEAD, DEEP_CHANNEL_AHEAD); a capacity below one vector (a
    drain's word FIFOs: word_fifo_ahead) lets it finish v once unit s + 1 is within that part
    of its hold of the vector before. Only the vectors that take a
    place behind unit s count (`placed[s]`, per vector; all of them by default): a stage's
    drain writes no word for a vector whose outputs are all zero, which leaves its end words
    alone in the word FIFO and the channel. The sample runs TANDEM_PASSES times in a row and
    the interval is the last pass's mean: the first one fills the line, and a sample whose
    first vectors are light (Graph Challenge images that die early) would read as a backlog
    there. It is at least the slowest unit's mean."""
    units = by_vector(held)
    vectors = units.shape[1]
    bottleneck = float(units.mean(axis=1).max())
    if vectors == 1:
        return bottleneck
    units = np.tile(units, TANDEM_PASSES)
    # behind[s][v]: the vector unit s + 1 must have finished before unit s finishes v, or -1
    behind = np.full((len(capacities), units.shape[1]), -1)
    whole = [int(capacity) for capacity in capacities]  # vectors ahead
    part = [capacity - ahead for capacity, ahead in zip(capacities, whole)]  # and a part of one more
    for s, ahead in enumerate(whole):
        taking = np.ones(vectors, bool) if placed is None else np.broadcast_to(placed[s], (vectors,))
        order = np.flatnonzero(np.tile(taking, TANDEM_PASSES))  # the vectors that take a place, in turn
        behind[s, order[ahead + 1 :]] = order[: max(0, order.size - ahead - 1)]
    finished = np.zeros_like(units)
    for v in range(units.shape[1]):
        ready = 0.0  # when the unit before has finished vector v
        for s in range(len(units)):
            done = max(finished[s, v - 1] if v else 0.0, ready) + units[s, v]
            if s < len(capacities) and behind[s, v] >= 0:  # room behind: the unit after is far enough
                w = behind[s, v]
                done = max(done, finished[s + 1, w] - part[s] * units[s + 1, w])
            finished[s, v] = ready = done
    return max(bottleneck, float(finished[-1, -1] - finished[-1, -vectors - 1]) / vectors)
