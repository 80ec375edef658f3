"""The cost model's formulas against small cases computed by hand (docs/cost-model.md)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fpgagen.engine.geometry import (
    ACTIVATION_DEPTH,
    DESCRIPTOR_FIELD_BITS,
    DESCRIPTOR_FIELDS,
    MASK_DEPTH,
    OUTPUT_DEPTH,
    REQUEST_DEPTH,
    in_lanes,
)
from fpgagen.engine.memory import Memory
from fpgagen.ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, Activation, Layer, Model, Stage, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.cost_model import (
    L_COMPUTE,
    L_DRAIN,
    L_FLUSH,
    L_MEMORY,
    LANE_FF_PER_ACC_BIT,
    LANE_LUT_PER_ACC_BIT,
    SEQUENTIAL_FF,
    SEQUENTIAL_LUT,
    STAGE_FF,
    STAGE_LUT,
    Activity,
    CostModel,
    Resources,
    lutram_luts,
    price,
    total,
)

# Row 0 feeds outputs 0, 2, 3; row 1 nothing; row 2 outputs 1 and 4. With P = 2 (even outputs on
# lane 0, odd on lane 1) row 0 has two entries in lane 0 (2 beats), row 2 one per lane (1 beat).
W0 = np.array(
    [
        [0.5, 0.0, -0.25, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.75, 0.0, 0.0, -0.5],
    ]
)
W1 = np.ones((5, 2)) * 0.5
P_IN = np.array([0.5, 1.0, 0.25])  # how often each input of layer 0 is nonzero

BOARD = replace(load_board("u280"), name="test", clock_mhz=200.0, channel_gbps=12.8, dsp=10)  # 64 B/cycle


def two_layers() -> Model:
    layers = (
        Layer("a", "a", sparse_weights(W0), np.zeros(5), Activation(0.0)),
        Layer("b", "b", sparse_weights(W1), np.zeros(2), Activation(0.0)),
    )
    return quantize(Model("hand", layers, "x", "y", (3,)), parse_precision("w8a16"))


def activity(model: Model) -> Activity:
    return Activity((P_IN, np.full(5, 0.4)), "hand-made")


def test_beats_follow_the_lane_layout_and_the_activity():
    model = two_layers()
    work = CostModel(model, BOARD, activity(model)).work(0, 2)
    assert (work.shape.beats, work.shape.max_row_beats, work.shape.addresses) == (3, 2, 3)
    assert work.issued == pytest.approx(0.5 * 2 + 1.0 * 1 + 0.25 * 1)  # a zero row still costs one cycle
    assert work.streamed == pytest.approx(0.5 * 2 + 1.0 * 0 + 0.25 * 1)  # but reads nothing
    assert work.drain == 3 + L_DRAIN + L_FLUSH  # ceil(5 / 2) local addresses, then the held items and mask


def test_a_dataflow_stage_overlaps_compute_and_drain():
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    stage = cost.dataflow(0, 2)
    compute, drain = 2.25 + L_COMPUTE, 3 + L_DRAIN + L_FLUSH
    assert stage.interval == pytest.approx(max(compute, drain))
    assert stage.latency == pytest.approx(compute + drain)
    # one lane: row 0 takes 3 beats, row 2 takes 2, and the drain walks all 5 outputs
    narrow = cost.dataflow(0, 1)
    compute, drain = 0.5 * 3 + 1.0 * 1 + 0.25 * 2 + L_COMPUTE, 5 + L_DRAIN + L_FLUSH
    assert narrow.interval == pytest.approx(max(compute, drain))
    assert narrow.latency == pytest.approx(compute + drain)
    assert narrow.stage.weight_memory == BRAM


def test_a_sequential_layer_waits_for_whichever_of_compute_and_memory_is_slower():
    model = two_layers()
    fast = CostModel(model, BOARD, activity(model))  # 1.25 beats x 8 bytes / 64 B per cycle: compute wins
    compute, bound = fast.compute(0, 2, SEQUENTIAL)
    assert bound == "compute"
    assert compute == pytest.approx(2.25 + L_COMPUTE + L_MEMORY)
    slow_board = replace(BOARD, channel_gbps=0.8)  # 4 bytes per cycle: 1.25 x 8 / 4 = 2.5 > 2.25
    slow = CostModel(model, slow_board, activity(model))
    compute, bound = slow.compute(0, 2, SEQUENTIAL)
    assert bound == "memory"
    assert compute == pytest.approx(2.5 + L_COMPUTE + L_MEMORY)


def test_a_sequential_stage_takes_the_sum_of_its_layers():
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    stages = (Stage(SEQUENTIAL, (0, 1), 2, OFFCHIP),)
    estimate = cost.estimate(stages, batch=10)
    first, second = estimate.layers
    assert first.compute == pytest.approx(2.25 + L_COMPUTE + L_MEMORY)
    assert second.compute == pytest.approx(cost.work(1, 2).issued + L_COMPUTE + L_MEMORY)
    assert second.drain == 1 + L_DRAIN  # the model's last layer drains dense: nothing to flush
    stage = estimate.stages[0]
    assert stage.interval == pytest.approx(first.compute + first.drain + second.compute + second.drain)
    assert stage.latency == stage.interval
    assert estimate.interval == max(stage.interval, estimate.reader.interval)
    assert estimate.latency == pytest.approx(estimate.reader.latency + stage.latency)
    clock = BOARD.clock_mhz * 1e6
    assert estimate.vectors_per_s() == pytest.approx(10 * clock / (estimate.latency + 9 * estimate.interval))
    assert estimate.to_dict()["totals"]["throughput"]["edges_per_s"] == pytest.approx(
        estimate.vectors_per_s() * model.nnz
    )


def test_a_stage_costs_the_same_whatever_lanes_feed_it():
    """Lane switches are free (docs/engine.md): no stage's cycles depend on the stage before it."""
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    second = Stage(SEQUENTIAL, (1,), 2, OFFCHIP)
    after_one = cost.estimate((Stage(DATAFLOW, (0,), 1, BRAM), second), batch=1).stages[1]
    after_wide = cost.estimate((Stage(DATAFLOW, (0,), 64, BRAM), second), batch=1).stages[1]
    assert (after_one.lanes_in, after_wide.lanes_in) == (1, 64)
    assert after_one.interval == after_wide.interval == cost.sequential(1, 1, 2).interval
    assert after_one.latency == after_wide.latency


def test_a_dataflow_design_interval_is_its_slowest_stage():
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    stages = (Stage(DATAFLOW, (0,), 2, BRAM), Stage(DATAFLOW, (1,), 1, BRAM))
    estimate = cost.estimate(stages, batch=1)
    a, b = estimate.layers
    assert a.compute == pytest.approx(2.25 + L_COMPUTE)
    assert b.compute == pytest.approx(cost.work(1, 1).issued + L_COMPUTE)
    assert [s.interval for s in estimate.stages] == pytest.approx([max(a.compute, a.drain), max(b.compute, b.drain)])
    assert estimate.interval == pytest.approx(max(s.interval for s in estimate.stages))
    assert estimate.latency == pytest.approx(estimate.reader.latency + a.compute + a.drain + b.compute + b.drain)


def test_the_input_reader():
    assert [in_lanes(n) for n in (1, 3, 16, 17, 784)] == [1, 4, 16, 16, 16]
    model = two_layers()
    reader = CostModel(model, BOARD, activity(model)).reader()
    assert (reader.lanes, reader.interval) == (4, math.ceil(3 / 4) + 1)
    # four lane FIFOs of 2 items of {last, index (2 bits), value (16 bits)}: 19 bits wide, one
    # RAM32M16 pair (16 LUTs) each,
    # and a mask FIFO of four 4-bit masks in flip-flops
    assert reader.resources == Resources(lut=4 * 16 + STAGE_LUT, ff=STAGE_FF + MASK_DEPTH * 4)


@pytest.mark.parametrize(
    "depth, width, expected",
    [
        (32, 32, Resources(lut=24)),  # up to 32 deep: RAM32M16, 8 LUTs per 14 bits of width
        (64, 17, Resources(lut=24)),  # up to 64 deep: RAM64M8, 8 LUTs per 7 bits of width
        (64, 448, Resources(lut=512)),  # a shallow memory stays in LUTRAM however wide
        (65, 27, Resources(lut=64)),  # 1755 bits: LUTRAM, two rows of 64 words
        (128, 28, Resources(bram=1)),  # 3584 bits, deeper than 64: a block RAM
        (512, 72, Resources(bram=1)),
        (513, 72, Resources(bram=2)),  # 1024 x 36 twice
        (4096, 20, Resources(bram=3)),  # 4096 x 9 three times beats 2048 x 18 four times
        (1025, 36, Resources(bram=2)),
        (20000, 1, Resources(bram=1)),  # 32768 x 1
        (8192, 100, Resources(bram=24)),  # never URAM, which cannot hold a ROM's initial contents
        (0, 10, Resources()),
    ],
)
def test_memories_map_to_lutram_or_bram(depth, width, expected):
    assert price(Memory.sized("memory", depth, width)) == expected


def test_memories_that_fit_a_ramb18_pair_up_in_a_bram36():
    assert price(Memory.sized("banks", 128, 28, count=16)) == Resources(bram=8)
    assert price(Memory.sized("banks", 128, 28, count=3)) == Resources(bram=2)
    assert price(Memory.sized("wide", 600, 40, count=3)) == Resources(bram=5)  # 3 RAMB18 (1024 x 18) each


def test_dataflow_stage_resources_add_up_its_memories_and_lanes():
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    acc = model.layers[0].numerics.acc_bits
    memories = {m.role: m for m in cost.dataflow_memories(0, 2)}
    assert (memories["weights"].depth, memories["weights"].width) == (3, 2 * (1 + 2 + 8))  # local 0..2: 2 bits
    assert (memories["row table"].depth, memories["row table"].width) == (3, 2 + 2)  # bits(3) + bits(2)
    assert (memories["bias"].depth, memories["bias"].width) == (3, 2 * acc)
    assert (memories["accumulators"].count, memories["accumulators"].depth) == (4, 3)
    assert (memories["output lanes"].count, memories["output lanes"].depth, memories["output lanes"].width) == (
        2, 4, 1 + 3 + 16
    )  # fmt: skip
    assert price(memories["output mask"]) == Resources(ff=MASK_DEPTH * 2)
    lanes = 2 * LANE_LUT_PER_ACC_BIT * acc + STAGE_LUT
    lutram = lutram_luts(3, 22) + lutram_luts(3, 4) + lutram_luts(3, 2 * acc) + 4 * lutram_luts(3, acc) + 2 * 16
    ff = 2 * LANE_FF_PER_ACC_BIT * acc + STAGE_FF + MASK_DEPTH * 2
    assert cost.dataflow(0, 2).resources == Resources(dsp=2, lut=lanes + lutram, ff=ff)
    # the model's last layer drains dense beats into the FIFO in front of the AXI stream
    last = {m.role: m for m in cost.dataflow_memories(1, 2)}
    assert {"output lanes", "output mask"}.isdisjoint(last)
    assert (last["output beats"].depth, last["output beats"].width) == (OUTPUT_DEPTH, 2 * 16 + 1)


def test_a_sequential_stage_stacks_its_tables_and_shares_one_engine_for_its_widest_layer():
    model = two_layers()
    cost = CostModel(model, BOARD, activity(model))
    memories = cost.sequential_memories(0, 1, 2)
    roles = [m.role for m in memories]
    assert roles == [
        "descriptors", "row table", "bias", "accumulators", "row requests", "waiting activations",
        "loop-back lanes", "loop-back mask", "output beats",
    ]  # fmt: skip
    found = dict(zip(roles, memories))
    assert (found["descriptors"].depth, found["descriptors"].width) == (2, DESCRIPTOR_FIELDS * DESCRIPTOR_FIELD_BITS)
    # rows of both layers stacked (3 + 5), their fields as wide as the widest layer's: beats up to
    # 3 (layer a) and 5 (layer b: every row 1 beat on 2 lanes), rows of at most 2 beats (layer a)
    a, b = cost.work(0, 2).shape, cost.work(1, 2).shape
    assert found["row table"].depth == 3 + 5
    assert found["row table"].width == max(a.start_bits, b.start_bits) + max(a.count_bits, b.count_bits)
    acc = max(a.acc_bits, b.acc_bits)
    assert (found["bias"].depth, found["bias"].width) == (a.addresses + b.addresses, 2 * acc)
    accumulators = found["accumulators"]
    assert (accumulators.count, accumulators.depth, accumulators.width) == (4, 3, acc)  # layer a's 5 outputs
    assert found["row requests"].depth == REQUEST_DEPTH
    assert found["waiting activations"].depth == ACTIVATION_DEPTH
    assert (found["loop-back lanes"].depth, found["loop-back lanes"].width) == (4, 1 + 3 + 16)  # a's outputs
    assert all(m.role != "weights" for m in memories)  # the weights stream from off chip
    assert cost.sequential(0, 1, 2).resources == total(memories) + Resources(
        dsp=2,
        lut=2 * LANE_LUT_PER_ACC_BIT * acc + STAGE_LUT + SEQUENTIAL_LUT,
        ff=2 * LANE_FF_PER_ACC_BIT * acc + STAGE_FF + SEQUENTIAL_FF,
    )


def test_activity_is_measured_per_input_on_the_fixed_point_model():
    layers = (
        Layer("a", "a", sparse_weights(np.eye(3)), np.zeros(3), Activation(0.0)),
        Layer("b", "b", sparse_weights(np.ones((3, 1))), np.zeros(1), Activation(0.0)),
    )
    model = quantize(
        Model("eye", layers, "x", "y", (3,)), parse_precision("w8a16"), calib=np.array([[1.0, 0, -1], [0, 2, 3]])
    )
    measured = Activity.from_calibration(model, np.array([[1.0, 0, -1], [0, 2, 3]]))
    assert measured.probabilities[0] == pytest.approx([0.5, 0.5, 1.0])
    assert measured.probabilities[1] == pytest.approx([0.5, 0.5, 0.5])  # the ReLU zeroed the -1
    assert measured.source == "activation density measured on 2 calibration inputs"
    assert "worst case" in Activity.uniform(model).source


def test_roofline_compute_and_memory_bounds():
    layer = Layer("a", "a", sparse_weights(np.array([[0.5] * 8, [0.0] * 8, [0.25] * 6 + [0, 0]])), np.zeros(8))
    model = quantize(Model("roof", (layer,), "x", "y", (3,)), parse_precision("w8a16"))
    p = Activity((P_IN,), "hand-made")
    useful = 0.5 * 8 + 1.0 * 0 + 0.25 * 6
    roomy = CostModel(model, BOARD, p).roofline()
    assert roomy.useful_macs == pytest.approx(useful)
    assert roomy.compute_bound == pytest.approx(10 * 200e6 / useful)
    assert roomy.memory_bound == math.inf and roomy.bound == roomy.compute_bound
    # no on-chip memory at all: every used weight crosses as a 4-byte word
    bare = replace(BOARD, bram36=0, uram=0, lut=0, channels=2)
    assert CostModel(model, bare, p).roofline().memory_bound == pytest.approx(2 * 12.8e9 / (4 * useful))
    # one LUT (64 bits) keeps 6.4 of row 0's 10-bit entries, the busiest row with weights
    one_lut = replace(bare, lut=1)
    offchip = CostModel(model, one_lut, p).roofline().offchip_bytes
    assert offchip == pytest.approx(4 * (0.5 * 1.6 + 0.25 * 6))
