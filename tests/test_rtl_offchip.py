"""The RTL back end's memories: a reset in the middle of a batch, the off-chip memory's latency and
what the channel carries, the load phase (its cycles against the cost model, every batch from its
own images), and corrupted weight files and images, which the testbench must report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from designs import compile_design, mlp_design, mlp_model
from plan_checks import check_design_follows_plan
from simulation import one_by_default, require, simulate

from fpgagen.engine.geometry import MEMORY_LATENCY
from fpgagen.engine.plan import plan_engine
from fpgagen.manifest import read_manifest
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.cost_model import CostModel
from fpgagen.vectors import default_inputs, read_vectors


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


@pytest.fixture(scope="module")
def middle(tmp_path_factory) -> Path:
    """sequential_middle, whose simulator builds the tests below share (`--keep-build`): a sequential
    stage between dataflow ones, the last one's weights in UltraRAM."""
    return mlp_design("sequential_middle", tmp_path_factory.mktemp("middle") / "design", count=8)


@pytest.mark.parametrize("simulator", one_by_default())
def test_a_reset_in_the_middle_of_a_batch_leaves_no_partial_sums(simulator, middle, run_cli):
    """`sim --reset-after 3`: the design is reset with the next vectors inside its dataflow and
    sequential stages (partial sums in the PEs' banks, reads in flight), then runs the whole batch
    again, which must be bit-exact."""
    result = run_cli("sim", middle, "--simulator", simulator, "--reset-after", 3, "--keep-build")
    assert result.exit_code == 0, result.stderr
    assert json.loads((middle / "sim_results.json").read_text())["passed"] is True


def test_the_offchip_memory_answers_late_and_every_pass_waits_for_it(tmp_path, run_cli):
    """The testbench's memory answers each burst `--memory-latency` cycles after its address: a
    pass's first read waits that long (its rows come from the pass before), the outputs stay
    bit-exact."""
    require("icarus")
    outdir = mlp_design("sequential_only", tmp_path / "design", count=4)  # its beats striped over 2 channels
    assert [port["memory_latency"] for port in read_manifest(outdir)["rtl"]["ports"]] == [MEMORY_LATENCY] * 2
    cycles = {}
    for latency in (0, 400):
        result = run_cli("sim", outdir, "--simulator", "icarus", "--memory-latency", latency)
        assert result.exit_code == 0, result.stderr
        results = json.loads((outdir / "sim_results.json").read_text())
        assert results["passed"] is True and results["memory_latency"] == [latency] * 2
        cycles[latency] = results["total_cycles"]
    passes = 4 * 2  # 4 vectors through the stage's 2 layers
    # about the latency once a pass (a few cycles of a pass's start overlap it), not once a read:
    # the reader keeps many bursts in flight
    assert 0.9 * passes * 400 <= cycles[400] - cycles[0] <= 1.2 * passes * 400
    # Each channel carried its share of the load phase's tables once and of the beats of every
    # nonzero input's row, nothing more (bench/bench_rtl.py's channel use rests on this).
    plan = check_design_follows_plan(outdir, mlp_model("sequential_only"))
    layouts = [layer.layout for stage in plan.stages for layer in stage.layers]
    inputs = read_vectors(outdir / "vectors").layer_inputs()
    rows = sum(int(((x != 0).astype(np.int64) @ layout.row_beats).sum()) for layout, x in zip(layouts, inputs))
    ports = read_manifest(outdir)["rtl"]["ports"]
    assert results["memory_beats"] == [port["load_beats"] + rows for port in ports]


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


@pytest.mark.parametrize("simulator", one_by_default())
def test_every_batch_loads_its_tables_from_its_own_images(simulator, middle, run_cli):
    """A second batch without a reset, its images moved and the old ones cleared: a stage that
    kept the first batch's tables, weights or weight address would read zeros (the sequential
    stage's image, and the load image of the last stage's weights in UltraRAM)."""
    results = simulate(run_cli, middle, simulator, "--move-images", "--keep-build")
    assert results["vectors"] == 8
    # the counters are the second batch's, as in a run of one batch (they once summed both)
    alone = simulate(run_cli, middle, simulator, "--keep-build")
    for moved, single in zip(results["layers"], alone["layers"], strict=True):
        assert moved["drain_cycles"] == single["drain_cycles"]
        assert moved["busy_cycles"] == pytest.approx(single["busy_cycles"], rel=0.05)


@pytest.mark.parametrize("part", ["weights", "bias"])
def test_corrupted_offchip_image_is_reported(part, tmp_path, run_cli):
    """The weights and the tables the load phase fills both come from the images (the stage's beats
    are striped over two channels: the second channel's image, PEs 8..15 and the tables' second half
    of every beat)."""
    require("icarus")
    outdir = mlp_design("sequential_only", tmp_path / "design", count=6)
    image = outdir / "weights1.bin"
    data = bytearray(image.read_bytes())
    stage = plan_engine(mlp_model("sequential_only"), load_board("u280")).stages[0]
    shape = stage.sequential_shape
    if part == "weights":
        # A high bit of the first weight: its lowest bit may round away before any output.
        slot = shape.slot
        slots = np.frombuffer(data, dtype=f"<u{slot.width // 8}", offset=stage.layers[0].offchip_base)
        first = np.flatnonzero(slots >> (slot.width - 1))[0]
        slots[first] ^= 1 << (slot.weight_bits - 2)
    else:
        # The low word of a bias value, moved by 2^24 in the sums' scale: the first bias row's first
        # word on channel 1 (the bias rows follow the row table, P values a row, whole 32-bit words
        # each; a beat's second half is on channel 1).
        words = np.frombuffer(data, dtype="<u4")
        words[shape.row_table_beats * stage.pes // 2] ^= 1 << 24
    image.write_bytes(data)
    result = run_cli("sim", outdir, "--simulator", "icarus")
    assert result.exit_code == 1
    assert "RTL differs from the golden model" in result.stderr
