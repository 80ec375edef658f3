"""The analysis pass and command: numbers checked against small hand computations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fpgagen.errors import FpgagenError
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.golden import GoldenModel
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.numerics import Precision
from fpgagen.passes.analyze import analyze
from fpgagen.passes.quantize import quantize

RELU = Activation(0.0, math.inf)

# Four inputs by four outputs; with 2 PEs, PE 0 owns outputs 0 and 2, PE 1 owns 1 and 3.
#   row 0: outputs 0, 2      -> PE counts (2, 0) -> 2 beats
#   row 1: output 1          -> (0, 1)           -> 1 beat
#   row 2: nothing           -> (0, 0)           -> 0 beats stored, 1 cycle when its input is nonzero
#   row 3: outputs 0,1,2,3   -> (2, 2)           -> 2 beats
HAND = np.array(
    [
        [0.5, 0.0, -0.25, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.75, -0.5, 0.25, 0.125],
    ]
)


def hand_model() -> Model:
    layer = Layer("hand", "hand", sparse_weights(HAND), np.zeros(4), RELU)
    return Model("hand", (layer,), "x", "y", (4,))


def mlp(seed: int = 0) -> Model:
    rng = np.random.default_rng(seed)
    shapes = [(12, 16), (16, 10), (10, 5)]
    layers = []
    for index, (n_in, n_out) in enumerate(shapes):
        weights = rng.normal(size=(n_in, n_out)) * (rng.random((n_in, n_out)) < 0.5)
        activation = RELU if index < len(shapes) - 1 else Activation()
        bias = rng.normal(scale=0.2, size=n_out)
        layers.append(Layer(f"fc{index}", f"fc{index}", sparse_weights(weights), bias, activation))
    return Model("mlp", tuple(layers), "x", "y", (12,))


def test_hand_computed_structure_on_two_pes():
    layer = analyze(hand_model(), pes=2).layers[0]
    assert (layer.in_features, layer.out_features, layer.nnz) == (4, 4, 7)
    assert layer.density == 7 / 16
    assert (layer.fan_in.min, layer.fan_in.mean, layer.fan_in.max) == (1, 7 / 4, 2)
    assert (layer.fan_out.min, layer.fan_out.mean, layer.fan_out.max) == (0, 7 / 4, 4)
    assert layer.pe_imbalance == 4 / 3.5  # PE 0 holds 4 weights, PE 1 holds 3
    assert layer.beats == 5
    assert layer.cycles == 6  # every input taken as nonzero: 2 + 1 + 1 + 2
    assert layer.useful_macs == 7
    assert layer.lane_efficiency == 7 / 12
    assert layer.activation_density is None


def test_hand_computed_bytes():
    layer = analyze(hand_model(), pes=2, precision="w8a16").layers[0]
    assert layer.dense_bytes == 16
    # slices of 2 outputs need a 1-bit index: 8 + 1 bits round up to 2 bytes; 5 beats of 2 lanes
    assert layer.engine_bytes == 5 * 2 * 2 + 4 * 4
    assert layer.csr_bytes == 7 * (1 + 4) + 5 * 4
    wide = analyze(hand_model(), pes=2, precision="w16a16").layers[0]
    assert (wide.dense_bytes, wide.engine_bytes, wide.csr_bytes) == (32, 5 * 2 * 3 + 16, 7 * 6 + 20)
    # 7-bit weights: the 1-bit slice index fills a byte exactly, a 2-bit whole-row index would not
    assert analyze(hand_model(), pes=2, precision="w7a16").layers[0].engine_bytes == 5 * 2 * 1 + 16
    one_pe = analyze(hand_model(), pes=1, precision="w8a16").layers[0]
    # one PE: beats are row lengths (2+1+0+4), indices span 4 outputs (2 bits, still 2 bytes)
    assert (one_pe.beats, one_pe.engine_bytes) == (7, 7 * 2 + 16)
    assert (one_pe.pe_imbalance, one_pe.lane_efficiency) == (1.0, 7 / 8)


def test_hand_computed_activation_weighting():
    calib = np.array([[1.0, 0.0, 0.0, 2.0], [3.0, -1.0, 0.5, 0.0]])  # input frequencies 1, .5, .5, .5
    layer = analyze(hand_model(), pes=2, calib=calib).layers[0]
    assert layer.activation_density == 5 / 8
    assert layer.cycles == 1 * 2 + 0.5 * 1 + 0.5 * 1 + 0.5 * 2
    assert layer.useful_macs == 1 * 2 + 0.5 * 1 + 0.5 * 0 + 0.5 * 4
    assert layer.lane_efficiency == 4.5 / (2 * 4.0)


def test_activation_density_matches_numpy():
    model = mlp()
    x = np.maximum(np.random.default_rng(1).normal(size=(40, 12)), 0.0)
    result = analyze(model, pes=4, calib=x)
    h = x
    for layer, report in zip(model.layers, result.layers):
        assert report.activation_density == np.count_nonzero(h) / h.size
        frequency = np.count_nonzero(h, axis=0) / h.shape[0]
        per_pe = [np.count_nonzero(layer.weights.toarray()[:, p::4], axis=1) for p in range(4)]
        beats = np.maximum(np.max(per_pe, axis=0), 1)
        assert report.cycles == pytest.approx(frequency @ beats, rel=1e-12)
        h = layer.activation.apply(h @ layer.weights.toarray() + layer.bias)


def test_totals_add_up_over_layers():
    result = analyze(mlp(), pes=4)
    total = result.totals
    for field in ("nnz", "beats", "dense_bytes", "engine_bytes", "csr_bytes"):
        assert getattr(total, field) == sum(getattr(layer, field) for layer in result.layers)
    assert total.weights == 12 * 16 + 16 * 10 + 10 * 5
    assert total.density == total.nnz / total.weights
    assert total.lane_efficiency == pytest.approx(total.nnz / (4 * total.cycles))


def test_fixed_point_error_matches_a_direct_comparison():
    model = mlp()
    x = np.random.default_rng(2).normal(size=(64, 12))
    result = analyze(model, pes=4, calib=x, precision="w8a16")
    reference = GoldenModel(model).predict(x)
    fixed = GoldenModel(quantize(model, Precision(8, 16), x)).predict(x)
    fp = result.fixed_point
    assert fp.inputs == 64
    assert fp.max_abs_error == np.abs(fixed - reference).max()
    assert fp.argmax_agreement == np.mean(fixed.argmax(1) == reference.argmax(1))
    coarse = analyze(model, pes=4, calib=x, precision="w3a6").fixed_point
    fine = analyze(model, pes=4, calib=x, precision="w16a16").fixed_point
    assert 0 < fine.max_abs_error < fp.max_abs_error < coarse.max_abs_error
    assert fine.argmax_agreement == 1.0


def test_float_precision_has_no_fixed_point_error_and_32_bit_weights():
    result = analyze(mlp(), pes=4, calib=np.ones((3, 12)), precision="float")
    assert result.fixed_point is None
    assert (result.precision, result.weight_bits) == ("float", 32)
    assert result.layers[0].dense_bytes == 12 * 16 * 4


def test_a_quantized_model_uses_its_own_width():
    x = np.random.default_rng(3).normal(size=(16, 12))
    quantized = quantize(mlp(), Precision(4, 12), x)
    result = analyze(quantized, pes=4, calib=x)
    assert (result.precision, result.weight_bits) == ("w4a12", 4)
    assert result.fixed_point.max_abs_error > 0
    with pytest.raises(FpgagenError, match="already quantized to w4a12"):
        analyze(quantized, precision="w8a16")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pes": 0}, "at least 1"),
        ({"calib": np.ones((2, 5))}, "calibration inputs"),
        ({"calib": np.ones((0, 12))}, "no samples"),
        ({"precision": "w99a16"}, "outside 2..16"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(FpgagenError, match=message):
        analyze(mlp(), **kwargs)


def test_json_output_parses_and_agrees_with_the_pass(tmp_path, run_cli):
    model = mlp()
    path, calib = tmp_path / "mlp.onnx", tmp_path / "calib.npy"
    write_onnx(model, path)
    x = np.random.default_rng(4).normal(size=(20, 12)).astype(np.float32)
    np.save(calib, x)
    result = run_cli("analyze", path, "--calib", calib, "--pes", "4", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["model"], data["pes"], data["precision"], data["calib_inputs"]) == ("mlp", 4, "w8a16", 20)
    layer_fields = {
        "name", "in_features", "out_features", "nnz", "density", "fan_in", "fan_out",
        "pe_imbalance", "beats", "cycles", "useful_macs", "lane_efficiency", "activation_density",
        "dense_bytes", "engine_bytes", "csr_bytes",
    }  # fmt: skip
    assert all(layer_fields <= set(layer) for layer in data["layers"])
    assert [layer["nnz"] for layer in data["layers"]] == [layer.nnz for layer in model.layers]
    assert set(data["fixed_point"]) == {"inputs", "max_abs_error", "argmax_agreement"}
    assert 0.0 <= data["fixed_point"]["argmax_agreement"] <= 1.0
    assert data["totals"]["nnz"] == model.nnz
    direct = analyze(model, pes=4, calib=x).to_dict()
    assert data["layers"][1]["activation_density"] == direct["layers"][1]["activation_density"]


def test_table_output_names_every_layer_and_the_totals(tmp_path, run_cli):
    path = tmp_path / "mlp.onnx"
    write_onnx(mlp(), path)
    result = run_cli("analyze", path, "--pes", "4")
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    names = [row.split("│")[1].strip() for row in rows]
    assert names == ["fc0", "fc1", "fc2", "total"] * 2
    assert str(mlp().nnz) in rows[3]


@pytest.mark.parametrize("args", [["--pes", "0"], ["--calib", "missing.npy"], ["--precision", "w8"], ["--pes", "many"]])
def test_analyze_command_rejects_bad_arguments(tmp_path, run_cli, args):
    path = tmp_path / "mlp.onnx"
    write_onnx(mlp(), path)
    result = run_cli("analyze", path, *[str(tmp_path / a) if a.endswith(".npy") else a for a in args])
    assert result.exit_code == 2
    assert result.stdout == ""
