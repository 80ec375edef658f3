"""The RTL back end: every generated design lints clean, simulates bit-exactly under Verilator and
Icarus through the cocotb testbench, reports corrupted weights, and synthesizes without latches."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from designs import MLPS, NONE, RELU, compile_design, lint, mlp_design, mlp_model, pruned_mlp
from plan_checks import check_design_follows_plan, check_rtl_memories_are_the_plan

from fpgagen.engine.geometry import MEMORY_LATENCY
from fpgagen.engine.plan import plan_engine
from fpgagen.examples.graphchallenge import draw_images
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.manifest import read_manifest
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.cost_model import CostModel
from fpgagen.vectors import default_inputs, read_vectors

SIMULATORS = ["icarus", "verilator"]
GC_SCHEDULES = ["auto", "dataflow", "sequential"]
slow = pytest.mark.slow
# The 1024-neuron designs take minutes each under Verilator (its C++ build) and Icarus (its speed):
# the default run keeps one design per simulator and leaves the other combinations to `-m slow`.
# test_performance simulates dataflow and sequential Graph Challenge layers by default as well.
# The scheduler's own design has 64 PEs: Verilator builds it in a minute, Icarus runs it for many.
GC_RUNS = [
    pytest.param("auto", "verilator"),
    pytest.param("sequential", "icarus"),
    pytest.param("sequential", "verilator", marks=slow),
    pytest.param("dataflow", "icarus", marks=slow),
    pytest.param("auto", "icarus", marks=slow),
    pytest.param("dataflow", "verilator", marks=slow),
]
ONE_GC_DESIGN = [pytest.param("sequential"), pytest.param("auto", marks=slow), pytest.param("dataflow", marks=slow)]


def require(simulator: str) -> None:
    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")


def simulate(run_cli, outdir: Path, simulator: str, *options) -> dict:
    result = run_cli("sim", outdir, "--simulator", simulator, *options)
    assert result.exit_code == 0, result.stderr + result.stdout
    results = json.loads((outdir / "sim_results.json").read_text())
    assert results["passed"] and results["simulator"] == simulator
    return results


@pytest.fixture(scope="module", params=sorted(MLPS))
def mlp(request, tmp_path_factory):
    outdir = mlp_design(request.param, tmp_path_factory.mktemp("rtl") / request.param, count=8)
    lint(outdir)
    check_rtl_memories_are_the_plan(outdir, check_design_follows_plan(outdir, mlp_model(request.param)))
    return outdir


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_pruned_mlp_rtl_is_bit_exact(mlp, simulator, run_cli):
    require(simulator)
    results = simulate(run_cli, mlp, simulator)
    assert results["vectors"] == 8 and results["control"] == "axi4-lite"
    manifest = read_manifest(mlp)
    assert [entry["layer"] for entry in results["layers"]] == [layer["name"] for layer in manifest["layers"]]
    assert all(entry["busy_cycles"] > 0 and entry["drain_cycles"] > 0 for entry in results["layers"])


@pytest.fixture(scope="module")
def gc_images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gc_inputs")
    images = draw_images(1024, 8, np.random.default_rng(4)).toarray().astype(np.float32)
    np.save(folder / "images.npy", images)
    return folder / "images.npy"


@pytest.fixture(scope="module")
def gc_model(tmp_path_factory):
    from click.testing import CliRunner

    from fpgagen.cli import app

    folder = tmp_path_factory.mktemp("gc") / "example"
    args = ["example", "graphchallenge", "--neurons", "1024", "--layers", "8", "--inputs", "16", "-o", str(folder)]
    assert CliRunner().invoke(app, args).exit_code == 0
    return folder / "model.onnx"


@pytest.fixture(scope="module")
def gc_design(request, gc_model, gc_images, tmp_path_factory):
    """The Graph Challenge model compiled with the scheduling policy `request.param`."""
    from click.testing import CliRunner

    from fpgagen.cli import app

    outdir = tmp_path_factory.mktemp("gc_rtl") / request.param
    args = ["compile", str(gc_model), "-o", str(outdir), "--schedule", request.param, "--calib", str(gc_images)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    lint(outdir)
    check_rtl_memories_are_the_plan(outdir, check_design_follows_plan(outdir))
    return outdir


@pytest.mark.parametrize(("gc_design", "simulator"), GC_RUNS, indirect=["gc_design"])
def test_graphchallenge_1024_rtl_is_bit_exact(gc_design, simulator, run_cli):
    """8 layers of the 1024-neuron network on 8 images, for each scheduling policy."""
    require(simulator)
    schedule = read_manifest(gc_design)["schedule"]
    if schedule["policy"] != "auto":
        assert {stage["mode"] for stage in schedule["stages"]} == {schedule["policy"]}
    results = simulate(run_cli, gc_design, simulator)
    assert results["vectors"] == 8 and len(results["layers"]) == 8


@pytest.mark.parametrize("gc_design", GC_SCHEDULES, indirect=True)
def test_graphchallenge_1024_csim_is_bit_exact_for_every_policy(gc_design, run_cli):
    """The HLS C++ of the same design under g++: both back ends agree with the golden model."""
    result = run_cli("csim", gc_design)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert json.loads((gc_design / "csim_results.json").read_text())["passed"]


@pytest.mark.parametrize("gc_design", ONE_GC_DESIGN, indirect=True)
def test_core_with_ap_ctrl_hs_pins_runs_the_same_testbench(gc_design, run_cli):
    require("icarus")
    results = simulate(run_cli, gc_design, "icarus", "--core")
    assert results["control"] == "ap_ctrl_hs"


@pytest.mark.parametrize("gc_design", ONE_GC_DESIGN, indirect=True)
def test_sim_on_new_inputs(gc_design, gc_images, tmp_path, run_cli):
    require("icarus")
    fresh = draw_images(1024, 3, np.random.default_rng(99)).toarray()
    np.save(tmp_path / "fresh.npy", fresh)
    results = simulate(run_cli, gc_design, "icarus", "--inputs", tmp_path / "fresh.npy")
    assert results["vectors"] == 3


# -- failures are found and reported -----------------------------------------------------------------


def _corrupt_pe0_weights(mem: Path, entry_bits: int) -> int:
    """Flip the lowest weight bit of every valid PE-0 slot of a $readmemh weight file (PE 0's
    slot {valid, local, weight} is the word's lowest `entry_bits`); return how many changed."""
    lines = mem.read_text().splitlines()
    changed = 0
    for number, line in enumerate(lines):
        word = int(line, 16)
        if word >> (entry_bits - 1) & 1:
            lines[number] = format(word ^ 1, f"0{len(line)}x")
            changed += 1
    mem.write_text("\n".join(lines) + "\n")
    return changed


def test_corrupted_weight_file_is_reported(tmp_path, run_cli):
    require("icarus")
    outdir = mlp_design("sequential_middle", tmp_path / "design", count=6)
    layer = read_manifest(outdir)["layers"][0]  # a weight ROM (dataflow_only's first are in UltraRAM)
    local_bits = max(1, (-(-layer["out_features"] // layer["pes"]) - 1).bit_length())
    weight_bits = int(layer["formats"]["weight"][1:].split(".")[0])
    assert _corrupt_pe0_weights(outdir / "rtl" / "mem" / "s0_weights.mem", 1 + local_bits + weight_bits) > 0
    result = run_cli("sim", outdir, "--simulator", "icarus")
    assert result.exit_code == 1
    results = json.loads((outdir / "sim_results.json").read_text())
    mismatch = results["first_mismatch"]
    assert results["passed"] is False and mismatch["expected"] != mismatch["got"]
    assert f"vector {mismatch['vector']}, index {mismatch['index']}" in result.stderr


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_a_reset_in_the_middle_of_a_batch_leaves_no_partial_sums(simulator, tmp_path, run_cli):
    """`sim --reset-after 3`: the design is reset with the next vectors inside its dataflow and
    sequential stages (partial sums in the PEs' banks, reads in flight), then runs the whole batch
    again, which must be bit-exact."""
    require(simulator)
    outdir = mlp_design("sequential_middle", tmp_path / "design", count=8)
    result = run_cli("sim", outdir, "--simulator", simulator, "--reset-after", 3)
    assert result.exit_code == 0, result.stderr
    assert json.loads((outdir / "sim_results.json").read_text())["passed"] is True


def test_the_offchip_memory_answers_late_and_every_pass_waits_for_it(tmp_path, run_cli):
    """The testbench's memory answers each burst `--memory-latency` cycles after its address: a
    pass's first read waits that long (its rows come from the pass before), the outputs stay
    bit-exact."""
    require("icarus")
    outdir = mlp_design("sequential_only", tmp_path / "design", count=4)
    assert [port["memory_latency"] for port in read_manifest(outdir)["rtl"]["ports"]] == [MEMORY_LATENCY]
    cycles = {}
    for latency in (0, 400):
        result = run_cli("sim", outdir, "--simulator", "icarus", "--memory-latency", latency)
        assert result.exit_code == 0, result.stderr
        results = json.loads((outdir / "sim_results.json").read_text())
        assert results["passed"] is True and results["memory_latency"] == [latency]
        cycles[latency] = results["total_cycles"]
    passes = 4 * 2  # 4 vectors through the stage's 2 layers
    # about the latency once a pass (a few cycles of a pass's start overlap it), not once a read:
    # the reader keeps many bursts in flight
    assert 0.9 * passes * 400 <= cycles[400] - cycles[0] <= 1.2 * passes * 400
    # The channel carried the load phase's tables once and the beats of every nonzero input's row,
    # nothing more (bench/bench_rtl.py's channel use rests on this).
    plan = check_design_follows_plan(outdir, mlp_model("sequential_only"))
    layouts = [layer.layout for stage in plan.stages for layer in stage.layers]
    inputs = read_vectors(outdir / "vectors").layer_inputs()
    rows = sum(int(((x != 0).astype(np.int64) @ layout.row_beats).sum()) for layout, x in zip(layouts, inputs))
    (port,) = read_manifest(outdir)["rtl"]["ports"]
    assert results["memory_beats"] == [port["load_beats"] + rows]


def test_corrupted_load_image_is_reported(tmp_path, run_cli):
    """A loaded stage's weights come from the load image, through the link of the load chain
    before it: flipping the lowest bit of each of PE 0's valid slots of the second link's rows (a
    codebook index) changes the outputs."""
    require("icarus")
    outdir = mlp_design("dataflow_only", tmp_path / "design", count=6)
    plan = plan_engine(mlp_model("dataflow_only"), load_board("u280"))
    port = plan.interface.load_port
    first, second = plan.loaded
    words = second.layers[0].rom_words
    slot = second.layers[0].shape.slot
    image = outdir / port.image
    data = bytearray(image.read_bytes())
    assert bytes(data) == plan.load_image
    beat_bytes = port.data_bits // 8
    flipped = 0
    for beat in np.flatnonzero(words[:, 0] >> (slot.width - 1)):  # PE 0's slot is a beat's lowest bits
        data[(first.layers[0].shape.rom_beats + beat) * beat_bytes] ^= 1
        flipped += 1
    assert flipped > 0
    image.write_bytes(data)
    result = run_cli("sim", outdir, "--simulator", "icarus")
    assert result.exit_code == 1
    assert "RTL differs from the golden model" in result.stderr


def test_the_load_phase_delays_the_first_result_as_the_cost_model_says(tmp_path, run_cli):
    """dataflow_only with its first two stages' weights in UltraRAM against the same design with
    ROMs: the first result comes later by the load the cost model adds to the latency (within 5%),
    and every later vector as soon as with ROMs."""
    require("icarus")
    loaded = mlp_model("dataflow_only")
    schedule = loaded.schedule
    rom_stages = tuple(replace(stage, weight_memory="bram") for stage in schedule.stages)
    rom = apply_schedule(loaded, replace(schedule, stages=rom_stages))
    inputs = default_inputs(loaded, count=8, seed=1)
    measured, modelled = {}, {}
    for name, model in (("loaded", loaded), ("rom", rom)):
        outdir = compile_design(model, tmp_path / name, inputs)
        results = simulate(run_cli, outdir, "icarus")
        cost = CostModel(model, load_board("u280"), Activity.uniform(model), relabel=False)
        measured[name] = results["first_output_cycles"], results["total_cycles"] - results["first_output_cycles"]
        modelled[name] = cost.estimate(model.schedule.stages, 8, model.schedule.in_lanes).latency
    load = measured["loaded"][0] - measured["rom"][0]
    assert load == pytest.approx(modelled["loaded"] - modelled["rom"], rel=0.05)
    assert load > 0 and measured["loaded"][1] == measured["rom"][1]


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_every_batch_loads_its_tables_from_its_own_images(simulator, tmp_path, run_cli):
    """A second batch without a reset, its images moved and the old ones cleared: a stage that
    kept the first batch's tables, weights or weight address would read zeros (the sequential
    stage's image, and the load image of the last stage's weights in UltraRAM)."""
    require(simulator)
    outdir = mlp_design("sequential_middle", tmp_path / "design", count=4)
    results = simulate(run_cli, outdir, simulator, "--move-images")
    assert results["vectors"] == 4


@pytest.mark.parametrize("part", ["weights", "bias"])
def test_corrupted_offchip_image_is_reported(part, tmp_path, run_cli):
    """The weights and the tables the load phase fills both come from the image."""
    require("icarus")
    outdir = mlp_design("sequential_only", tmp_path / "design", count=6)
    image = outdir / "weights0.bin"
    data = bytearray(image.read_bytes())
    stage = plan_engine(mlp_model("sequential_only"), load_board("u280")).stages[0]
    if part == "weights":
        # A high bit of the first weight: its lowest bit may round away before any output.
        slot = stage.sequential_shape.slot
        slots = np.frombuffer(data, dtype=f"<u{slot.width // 8}", offset=stage.layers[0].offchip_base)
        first = np.flatnonzero(slots >> (slot.width - 1))[0]
        slots[first] ^= 1 << (slot.weight_bits - 2)
    else:
        # The first output's bias (the low word of its value), moved by 2^24 in the sums' scale.
        words = np.frombuffer(data, dtype="<u4")
        words[stage.sequential_shape.row_table_beats * stage.pes] ^= 1 << 24
    image.write_bytes(data)
    result = run_cli("sim", outdir, "--simulator", "icarus")
    assert result.exit_code == 1
    assert "RTL differs from the golden model" in result.stderr


# -- synthesis ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["sequential_middle", "sequential_end"])
def test_yosys_synthesizes_without_latches(case, tmp_path, run_cli):
    outdir = mlp_design(case, tmp_path / case, count=2)
    result = run_cli("synth", outdir, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads((outdir / "synth_results.json").read_text())
    assert json.loads(result.stdout) == report
    assert report["latches"] == 0
    stages = read_manifest(outdir)["schedule"]["stages"]
    assert report["dsp"] == sum(stage["pes"] for stage in stages)  # one DSP48E2 per lane
    assert report["lut"] > 0 and report["ff"] > 0
    assert set(report["estimate"]) >= {"dsp", "bram", "lut", "ff"}


def test_a_board_profile_of_ones_own_compiles_and_verifies(tmp_path, run_cli):
    """A .yaml board whose name no built-in has, through compile, csim and RTL simulation."""
    board = tmp_path / "my.yaml"
    board.write_text(
        "name: lab-card-7\npart: xcvu9p-flga2104-2-i\ndsp: 6840\nbram36: 2160\nuram: 960\nlut: 1182240\n"
        "ff: 2364480\nmemory: DDR4\nchannels: 2\nchannel_gbps: 19.2\nclock_mhz: 250\nsource: our lab's card\n"
    )
    model = tmp_path / "mlp.onnx"
    write_onnx(pruned_mlp("lab", [30, 24, 8], [RELU, NONE], seed=5), model)
    outdir = tmp_path / "design"
    compiled = run_cli("compile", model, "-o", outdir, "--board", board, "--schedule", "sequential", "--vectors", 4)
    assert compiled.exit_code == 0, compiled.stderr
    manifest = read_manifest(outdir)
    assert manifest["board"]["name"] == "lab-card-7" and manifest["board"]["clock_mhz"] == 250
    assert "set_part xcvu9p-flga2104-2-i" in (outdir / "hls" / "run_hls.tcl").read_text()
    assert "create_clock -period 4.000" in (outdir / "hls" / "run_hls.tcl").read_text()
    check_design_follows_plan(outdir)
    assert run_cli("csim", outdir).exit_code == 0
    simulate(run_cli, outdir, "verilator")
