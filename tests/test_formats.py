"""Numerics with a stated error bound: `--max-error`, the error and saturation every compile reports,
and `fpgagen predict OUTDIR`.

Errors are measured here against onnxruntime's float32 outputs, never against fpgagen's own float
reference, as the largest output error relative to the output range (the definition in
docs/numerics.md); on held-out inputs, drawn from the calibration inputs' distribution, relative
to the output range on the calibration inputs (the range the design was made for).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_models import build_model, onnxruntime_outputs, random_chain, random_inputs

from fpgagen.accuracy import measure_accuracy
from fpgagen.frontend import read_onnx
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.manifest import read_manifest
from fpgagen.numerics import parse_precision
from fpgagen.passes.formats import choose_formats, format_cost
from fpgagen.passes.quantize import quantize

CALIBRATION_ROWS = HELD_OUT_ROWS = 256
FLOAT32_SLACK = 1e-4  # of the output range: onnxruntime's float32 against fpgagen's float64 reference


def output_range(reference: np.ndarray) -> float:
    """The outputs' range (for a constant output, its size): computed here, not by fpgagen."""
    spread = float(reference.max() - reference.min())
    return spread if spread > 0 else (float(np.abs(reference).max()) or 1.0)


def range_error(reference: np.ndarray, got: np.ndarray, scale: float | None = None) -> float:
    """Largest |got - reference| relative to `scale`, by default the reference's own range."""
    return float(np.max(np.abs(got - reference)) / (scale or output_range(reference)))


def random_mlp(seed: int, folder: Path) -> tuple[Path, Path, Path]:
    """A random sparse MLP (tests/onnx_models.py) with calibration and held-out inputs."""
    chain = random_chain(seed)
    rng = np.random.default_rng(seed + 500)
    model, calib, held_out = folder / "model.onnx", folder / "calib.npy", folder / "held_out.npy"
    onnx.save(chain.model, model)
    np.save(calib, random_inputs(rng, CALIBRATION_ROWS, chain.inputs.shape[1:]))
    np.save(held_out, random_inputs(rng, HELD_OUT_ROWS, chain.inputs.shape[1:]))
    return model, calib, held_out


def predict(run_cli, source: Path, inputs: Path, out: Path) -> np.ndarray:
    result = run_cli("predict", source, "--inputs", inputs, "--out", out)
    assert result.exit_code == 0, result.stderr
    return np.load(out)


# -- done when 2: within 1% on the calibration inputs, 2% on others, csim bit-exact ------------------


def check_max_error_design(seed: int, folder: Path, run_cli) -> tuple[float, float]:
    model, calib, held_out = random_mlp(seed, folder)
    design = folder / "design"
    result = run_cli("compile", model, "--calib", calib, "--max-error", "0.01", "-o", design)
    assert result.exit_code == 0, result.stderr
    on_calib = range_error(
        onnxruntime_outputs(model, np.load(calib)), predict(run_cli, design, calib, folder / "c.npy")
    )
    on_held_out = range_error(
        onnxruntime_outputs(model, np.load(held_out)), predict(run_cli, design, held_out, folder / "h.npy")
    )
    assert on_calib <= 0.01 + FLOAT32_SLACK
    assert on_held_out <= 0.02
    for inputs in ([], ["--inputs", held_out]):
        csim = run_cli("csim", design, *inputs)
        assert csim.exit_code == 0, csim.stderr + csim.stdout
    return on_calib, on_held_out


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_max_error_holds_on_calibration_and_held_out_inputs(seed, tmp_path, run_cli):
    check_max_error_design(seed, tmp_path, run_cli)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 50))
def test_max_error_holds_on_many_random_mlps(seed, tmp_path, run_cli):
    check_max_error_design(seed, tmp_path, run_cli)


# -- done when 3: an unreachable bound is refused with the layer and the best error ---------------------


def wide_range_model(path: Path) -> Path:
    """Layer `wide` has one weight of 1000 (into a neuron the output ignores) beside weights near
    0.5: its 16-bit weight grid is 1/32, too coarse for the small weights, whatever the widths."""
    w0 = np.array([[0.5, -0.3, 1000.0], [0.2, 0.7, 0.0], [-0.6, 0.1, 0.0], [0.4, -0.5, 0.0]], np.float32)
    w1 = np.array([[0.9, -0.4], [0.3, 0.8], [0.0, 0.0]], np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W0"], ["h"], name="wide"),
        helper.make_node("Relu", ["h"], ["r"], name="act"),
        helper.make_node("MatMul", ["r", "W1"], ["y"], name="out"),
    ]
    onnx.save(build_model(nodes, ["batch", 4], initializers=(("W0", w0), ("W1", w1))), path)
    return path


def test_an_unreachable_bound_names_the_layer_and_the_best_error(tmp_path, run_cli):
    model = wide_range_model(tmp_path / "wide.onnx")
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(0).uniform(-1, 1, (64, 4)).astype(np.float32))
    result = run_cli("compile", model, "--calib", calib, "--max-error", "0.01", "-o", tmp_path / "design")
    assert result.exit_code == 2
    assert "--max-error 0.01 cannot be met: with the widest formats (w16a16) the output is off by" in result.stderr
    assert "layer wide ('wide, act') costs the most" in result.stderr and "Q16.5 weights" in result.stderr
    best = float(result.stderr.split("the output is off by ")[1].split()[0])
    assert best > 0.01
    assert not (tmp_path / "design").exists()
    # The best error is real: the widest uniform formats, with either scale, do no better.
    widest = run_cli("compile", model, "--calib", calib, "--precision", "w16a16", "-o", tmp_path / "w16")
    assert widest.exit_code == 0
    assert read_manifest(tmp_path / "w16")["numerics"]["measured"]["max_error"] >= best


@pytest.mark.parametrize("bound, margin", [(0.035, 2.0), (0.025, 1.0)], ids=["reserve", "reserve and guard bit"])
def test_a_bound_the_widest_formats_barely_meet_gives_up_its_reserve(bound, margin, tmp_path, run_cli):
    """The wide-range model's best errors: 2.9% with the guard bit, 2.0% without (see above)."""
    model = wide_range_model(tmp_path / "wide.onnx")
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(0).uniform(-1, 1, (64, 4)).astype(np.float32))
    result = run_cli("compile", model, "--calib", calib, "--max-error", bound, "-o", tmp_path / "design")
    assert result.exit_code == 0, result.stderr
    assert "nothing of it is kept for inputs other than the calibration ones" in result.stderr
    assert ("guard bit" in result.stderr) == (margin == 1.0)
    numerics = read_manifest(tmp_path / "design")["numerics"]
    assert numerics["search_goal"] == bound and numerics["calibration_margin"] == margin
    assert numerics["measured"]["max_error"] <= bound


def test_the_search_keeps_a_reserve_for_other_inputs(tmp_path):
    model_path, calib_path, _ = random_mlp(10, tmp_path)
    model = read_onnx(model_path)
    choice = choose_formats(model, np.load(calib_path).reshape(CALIBRATION_ROWS, -1).astype(np.float64), 0.01)
    assert choice.goal == pytest.approx(0.007) and choice.error <= 0.007 and choice.margin == 2.0


def test_a_bound_below_16_bit_resolution_is_refused(tmp_path, run_cli):
    model, calib, _ = random_mlp(3, tmp_path)
    result = run_cli("compile", model, "--calib", calib, "--max-error", "1e-7", "-o", tmp_path / "design")
    assert result.exit_code == 2 and "cannot be met" in result.stderr
    names = {layer.name for layer in read_onnx(model).layers}
    assert result.stderr.split("; layer ")[1].split()[0] in names
    assert not (tmp_path / "design").exists()


@pytest.mark.parametrize(
    "options, message",
    [
        (["--max-error", "0.01"], "--max-error needs --calib"),
        (["--calib", "calib.npy", "--max-error", "0"], "--max-error 0: must be a fraction"),
        (["--calib", "calib.npy", "--max-error", "-0.5"], "--max-error -0.5: must be a fraction"),
        (["--calib", "calib.npy", "--max-error", "nan"], "--max-error nan: must be a fraction"),
        (["--calib", "calib.npy", "--max-error", "inf"], "--max-error inf: must be a fraction"),
        (["--calib", "calib.npy", "--max-error", "5"], "--max-error 5: must be a fraction of the output range"),
        (["--calib", "calib.npy", "--max-error", "0.01", "--precision", "w17a16"], "outside 2..16 bits"),
    ],
)
def test_bad_max_error_options_are_refused(options, message, tmp_path, run_cli, monkeypatch):
    random_mlp(3, tmp_path)
    monkeypatch.chdir(tmp_path)
    result = run_cli("compile", "model.onnx", "-o", "design", *options)
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "design").exists()


# -- the formats chosen -----------------------------------------------------------------------------------


def test_chosen_formats_are_cheaper_than_uniform_ones_that_meet_the_bound(tmp_path):
    model_path, calib_path, _ = random_mlp(11, tmp_path)
    model = read_onnx(model_path)
    calib = np.load(calib_path).reshape(CALIBRATION_ROWS, -1).astype(np.float64)
    choice = choose_formats(model, calib, 0.01)
    assert measure_accuracy(choice.model, calib, "calibration").max_error == choice.error <= 0.01
    # Every uniform precision that meets the bound costs more.
    for bits in range(2, 17):
        uniform = quantize(model, parse_precision(f"w{bits}a16"), calib)
        if measure_accuracy(uniform, calib, "calibration").max_error <= 0.01:
            assert format_cost(choice.model) < format_cost(uniform)


def test_the_cost_model_charges_the_chosen_formats(tmp_path, run_cli):
    """Same schedule (dataflow, 4 PEs), two precisions: the chosen formats cost the scheduler less."""
    model, calib, _ = random_mlp(11, tmp_path)
    common = ["--calib", calib, "--schedule", "dataflow", "--pes", "4"]
    assert run_cli("compile", model, *common, "--max-error", "0.01", "-o", tmp_path / "chosen").exit_code == 0
    assert run_cli("compile", model, *common, "--precision", "w16a16", "-o", tmp_path / "w16").exit_code == 0
    chosen, w16 = (read_manifest(tmp_path / name)["estimate"]["totals"]["resources"] for name in ("chosen", "w16"))
    assert chosen["lut"] < w16["lut"] and chosen["ff"] < w16["ff"] and chosen["bram"] <= w16["bram"]


def test_precision_caps_the_chosen_widths(tmp_path, run_cli):
    model, calib, _ = random_mlp(12, tmp_path)
    design = tmp_path / "design"
    result = run_cli("compile", model, "--calib", calib, "--max-error", "0.05", "--precision", "w8a12", "-o", design)
    assert result.exit_code == 0, result.stderr
    manifest = read_manifest(design)
    for layer in manifest["layers"]:
        assert int(layer["formats"]["weight"][1:].split(".")[0]) <= 8
        assert int(layer["formats"]["output"][1:].split(".")[0]) <= 12
    assert manifest["numerics"]["max_error"] == 0.05 and manifest["numerics"]["measured"]["max_error"] <= 0.05


# -- what every compile reports -----------------------------------------------------------------------------


def test_a_compile_reports_its_error_and_saturation(tmp_path, run_cli):
    model, calib, _ = random_mlp(4, tmp_path)
    design = tmp_path / "design"
    result = run_cli("compile", model, "--calib", calib, "-o", design)
    assert result.exit_code == 0, result.stderr
    manifest = read_manifest(design)
    measured = manifest["numerics"]["measured"]
    independent = range_error(
        onnxruntime_outputs(model, np.load(calib)), predict(run_cli, design, calib, tmp_path / "y.npy")
    )
    assert abs(measured["max_error"] - independent) <= FLOAT32_SLACK
    assert (
        f"error against float on the {CALIBRATION_ROWS} calibration inputs: max {measured['max_error']:.3%}"
        in result.stdout
    )
    assert "saturated values: " in result.stdout
    assert manifest["numerics"]["ranges"] == "calibration" and manifest["numerics"]["calibration_margin"] == 2.0
    assert all(isinstance(layer["saturated"], int) for layer in manifest["layers"])
    assert "warning" not in result.stderr


def test_a_compile_without_calibration_warns_that_ranges_were_assumed(tmp_path, run_cli):
    model, _, _ = random_mlp(4, tmp_path)
    result = run_cli("compile", model, "-o", tmp_path / "design")
    assert result.exit_code == 0
    assert "warning: no --calib: activation ranges were assumed" in result.stderr
    assert "error against float on the 8 test vectors (random inputs within the input format's range)" in result.stdout
    numerics = read_manifest(tmp_path / "design")["numerics"]
    assert numerics["ranges"] == "assumed" and numerics["measured"]["inputs"] == "test vectors"


def saturating_model(activation: Activation) -> Model:
    """y0 = x0 + x1, y1 = x0 - x1."""
    weights = sparse_weights(np.array([[1.0, 1.0], [1.0, -1.0]]))
    return Model("sat", (Layer("sum", "sum", weights, np.zeros(2), activation),), "x", "y", (2,))


@pytest.mark.parametrize("activation", [Activation(), Activation(0.0, np.inf)], ids=["none", "relu"])
def test_saturation_counts_are_exact(activation):
    # Calibrated on |x| <= 0.9 and |y| <= 0.9: with the guard bit, inputs and outputs hold up to 2.
    calib = 0.9 * np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    model = quantize(saturating_model(activation), parse_precision("w8a16"), calib)
    x = np.array([[1.5, 1.5], [-1.5, -1.5], [3.0, 0.0], [0.5, -0.5], [-1.9, 1.9]])
    accuracy = measure_accuracy(model, x, "test")
    fmt = model.layers[0].numerics.output_format
    in_fmt = model.input_format
    largest, smallest = fmt.to_float(fmt.qmax), fmt.to_float(fmt.qmin)
    assert (in_fmt.to_float(in_fmt.qmax), largest) == (2.0 - 2.0**-in_fmt.frac, 2.0 - 2.0**-fmt.frac)
    clamped = np.clip(x, in_fmt.to_float(in_fmt.qmin), in_fmt.to_float(in_fmt.qmax))
    y = clamped @ np.array([[1.0, 1.0], [1.0, -1.0]])
    # Only values the format clips and the activation would not: a ReLU's zero is its own.
    beyond = (y > largest) | ((y < smallest) & (activation.lo == -np.inf))
    assert accuracy.input_saturated == int(np.count_nonzero(np.abs(x) > 2.0)) == 1
    assert accuracy.layers[0].saturated == int(np.count_nonzero(beyond))
    assert accuracy.layers[0].saturated == (3 if activation.lo == -np.inf else 1)


# -- predict OUTDIR ----------------------------------------------------------------------------------------------


def test_predict_on_a_design_needs_neither_precision_nor_calibration_file(tmp_path, run_cli):
    model, calib, held_out = random_mlp(12, tmp_path)
    design = tmp_path / "design"
    assert run_cli("compile", model, "--calib", calib, "--max-error", "0.02", "-o", design).exit_code == 0
    before = predict(run_cli, design, held_out, tmp_path / "before.npy")
    calib.unlink()  # the formats are in the manifest: the calibration file is no longer needed
    np.testing.assert_array_equal(predict(run_cli, design, held_out, tmp_path / "after.npy"), before)
    refused = run_cli("predict", design, "--inputs", held_out, "--out", tmp_path / "y.npy", "--precision", "w8a16")
    assert refused.exit_code == 2 and "computes in its own formats" in refused.stderr


def test_predict_refuses_a_design_whose_model_file_changed(tmp_path, run_cli):
    model = wide_range_model(tmp_path / "wide.onnx")
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.random.default_rng(0).uniform(-1, 1, (16, 4)).astype(np.float32))
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    assert run_cli("predict", design, "--inputs", inputs, "--out", tmp_path / "y.npy").exit_code == 0
    proto = onnx.load(model)
    w1 = next(tensor for tensor in proto.graph.initializer if tensor.name == "W1")
    w1.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w1) * np.float32(1.5), "W1"))
    onnx.save(proto, model)
    result = run_cli("predict", design, "--inputs", inputs, "--out", tmp_path / "y.npy")
    assert result.exit_code == 2 and f"{model}: has changed since {design} was compiled" in result.stderr


def test_predict_states_its_error_against_float(tmp_path, run_cli):
    model, calib, _ = random_mlp(4, tmp_path)
    design = tmp_path / "design"
    assert run_cli("compile", model, "--calib", calib, "-o", design).exit_code == 0
    measured = read_manifest(design)["numerics"]["measured"]["max_error"]
    on_design = run_cli("predict", design, "--inputs", calib, "--out", tmp_path / "y.npy")
    assert f"error against float on these {CALIBRATION_ROWS} inputs: max {measured:.3%}" in on_design.stderr
    assert "saturated values: " in on_design.stderr
    floats = run_cli("predict", model, "--inputs", calib, "--out", tmp_path / "y.npy", "--precision", "float")
    assert floats.exit_code == 0 and "error against float" not in floats.stderr
