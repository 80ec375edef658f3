"""The RTL back end on the pruned MLPs: every generated design lints clean and simulates
bit-exactly under Verilator and Icarus through the cocotb testbench; a board profile of one's own
compiles and verifies. Graph Challenge, the off-chip memory and synthesis have modules of their own."""

from __future__ import annotations

import pytest
from designs import MLPS, NONE, RELU, lint, mlp_design, mlp_model, pruned_mlp
from plan_checks import check_design_follows_plan, check_rtl_memories_are_the_plan
from simulation import one_by_default, require, simulate

from fpgagen import verilator_runtime
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.manifest import read_manifest

# Every design runs bit-exact under one simulator by default and under both with `-m slow`.
# Verilator spends 30-50 s building each, where Icarus runs most of them in 8-25 s, so Verilator takes
# the design Icarus is slowest on (dataflow_only's 64 PEs) and those whose features nothing else runs
# under it by default (drain_lanes's groups, narrow_w4a8's narrow accumulators and 8-bit slots,
# sequential_end's one-lane sequential stage, private_pes's units with PEs of their own, private_128's
# 256 of them), Icarus the others. Verilator runs the others' kinds of stage elsewhere
# by default (sequential_middle in test_rtl_offchip, sequential and stacked Graph Challenge
# designs in test_performance), so a machine without Icarus still covers them.
VERILATOR_BY_DEFAULT = {"dataflow_only", "drain_lanes", "narrow_w4a8", "private_pes", "private_128", "sequential_end"}
RUNS = [
    pytest.param(case, *simulator.values, marks=simulator.marks)
    for case in sorted(MLPS)
    for simulator in one_by_default("verilator" if case in VERILATOR_BY_DEFAULT else "icarus")
]


@pytest.fixture(scope="module")
def mlp(request, tmp_path_factory):
    outdir = mlp_design(request.param, tmp_path_factory.mktemp("rtl") / request.param, count=8)
    lint(outdir)
    check_rtl_memories_are_the_plan(outdir, check_design_follows_plan(outdir, mlp_model(request.param)))
    return outdir


@pytest.mark.parametrize(("mlp", "simulator"), RUNS, indirect=["mlp"])
def test_pruned_mlp_rtl_is_bit_exact(mlp, simulator, run_cli):
    results = simulate(run_cli, mlp, simulator)
    assert results["vectors"] == 8 and results["control"] == "axi4-lite"
    manifest = read_manifest(mlp)
    assert [entry["layer"] for entry in results["layers"]] == [layer["name"] for layer in manifest["layers"]]
    assert all(entry["busy_cycles"] > 0 and entry["drain_cycles"] > 0 for entry in results["layers"])


def test_verilators_runtime_is_compiled_once_per_machine(tmp_path, run_cli, monkeypatch):
    """The first Verilator build leaves the runtime objects in the cache; the next build, of
    another design, takes them from there instead of compiling verilated.cpp, and is bit-exact."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compiled = []
    for case in ("small_dataflow", "small_mixed"):
        outdir = mlp_design(case, tmp_path / case, count=2)
        simulate(run_cli, outdir, "verilator", "--keep-build")
        compiled.append("verilated.cpp" in (outdir / "sim_build" / "verilator" / "build.log").read_text())
    assert compiled == [True, False]
    (cached,) = (tmp_path / "cache" / "fpgagen" / "verilator-runtime").iterdir()
    assert sorted(path.name for path in cached.iterdir()) == sorted(verilator_runtime.OBJECTS)


def test_core_with_ap_ctrl_hs_pins_runs_the_same_testbench(tmp_path, run_cli):
    """The Vitis-style core (ap_ctrl_hs, m_axi for the sequential stage) under the same testbench."""
    require("icarus")
    outdir = mlp_design("sequential_middle", tmp_path / "design", count=4)
    results = simulate(run_cli, outdir, "icarus", "--core")
    assert results["vectors"] == 4 and results["control"] == "ap_ctrl_hs"


def test_a_board_profile_of_ones_own_compiles_and_verifies(tmp_path, run_cli):
    """A .yaml board whose name no built-in has, through compile and csim. (The RTL of a design for
    a board of one's own runs in test_performance's striped-channel test.)"""
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
