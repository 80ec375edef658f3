"""The RTL and HLS back ends on 4 layers of the 1024-neuron Graph Challenge network, for each
scheduling policy: bit-exact in both simulators, with the ap_ctrl_hs core, and on new inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from designs import lint
from plan_checks import check_design_follows_plan, check_rtl_memories_are_the_plan
from simulation import require, simulate

from fpgagen.examples.graphchallenge import draw_images
from fpgagen.manifest import read_manifest

GC_SCHEDULES = ["auto", "dataflow", "sequential"]
# Four layers: the scheduler's design is the one it picks for eight (P = 64, K = 4, deep channels
# in block RAM), and Verilator builds it in half the time.
LAYERS = 4
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
    layers = str(LAYERS)
    args = ["example", "graphchallenge", "--neurons", "1024", "--layers", layers, "--inputs", "16", "-o", str(folder)]
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
    """4 layers of the 1024-neuron network on 8 images, for each scheduling policy."""
    require(simulator)
    schedule = read_manifest(gc_design)["schedule"]
    if schedule["policy"] != "auto":
        assert {stage["mode"] for stage in schedule["stages"]} == {schedule["policy"]}
    results = simulate(run_cli, gc_design, simulator)
    assert results["vectors"] == 8 and len(results["layers"]) == LAYERS


@pytest.mark.parametrize("gc_design", GC_SCHEDULES, indirect=True)
def test_graphchallenge_1024_csim_is_bit_exact_for_every_policy(gc_design, run_cli):
    """The HLS C++ of the same design under g++: both back ends agree with the golden model."""
    result = run_cli("csim", gc_design)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert json.loads((gc_design / "csim_results.json").read_text())["passed"]


# test_rtl runs the ap_ctrl_hs core of a small design by default; the Graph Challenge ones are slow.
@pytest.mark.parametrize("gc_design", [pytest.param(policy, marks=slow) for policy in GC_SCHEDULES], indirect=True)
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
