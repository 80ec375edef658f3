"""Test vectors exercise every layer: random inputs are chosen so that activations survive to the
last layer, calibration rows are picked so that at least half of them do, and a layer left without
work is named in a warning.

"Work" is checked here with plain numpy on dense matrices (a nonzero input activation times a
nonzero weight), not with fpgagen's own `layer_work`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.vectors import calibration_inputs, default_inputs, golden_vectors, idle_layers, read_vectors


def useful_macs(model: Model, x_q: np.ndarray, outputs: list[np.ndarray]) -> np.ndarray:
    """(vectors, layers) count of nonzero activations meeting nonzero weights, densely."""
    inputs = [x_q, *outputs[:-1]]
    return np.stack(
        [
            (x != 0).astype(np.int64) @ (layer.weights.toarray() != 0).sum(axis=1)
            for layer, x in zip(model.layers, inputs)
        ],
        axis=1,
    )


@pytest.fixture(scope="module")
def graphchallenge_1024x8() -> Model:
    return quantize(network(1024, 8), parse_precision("w8a16"), None)


def test_default_vectors_reach_every_layer_of_graphchallenge_1024x8(graphchallenge_1024x8):
    model = graphchallenge_1024x8
    vectors = golden_vectors(model, default_inputs(model, 8))
    work = useful_macs(model, vectors.x_q, vectors.layer_outputs)
    assert work.shape == (8, 8)
    assert (work > 0).all(), f"layers without work per vector:\n{work}"
    assert all(np.count_nonzero(y, axis=1).min() > 0 for y in vectors.layer_outputs)
    assert idle_layers(model, vectors) == []


def test_signed_random_inputs_die_out_in_graphchallenge_1024x8(graphchallenge_1024x8):
    """Why a search is needed: the old default (signed inputs, half of them zero) leaves the last
    layers of this network without work, so the test above can fail."""
    model = graphchallenge_1024x8
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (8, 1024)) * (rng.random((8, 1024)) < 0.5)
    vectors = golden_vectors(model, x)
    work = useful_macs(model, vectors.x_q, vectors.layer_outputs).sum(axis=0)
    assert work[-1] == 0
    assert idle_layers(model, vectors) == [layer.name for layer, macs in zip(model.layers, work) if macs == 0]


def test_compile_without_calibration_writes_vectors_that_reach_every_layer(tmp_path, run_cli):
    write_onnx(network(1024, 8), tmp_path / "gc.onnx")
    result = run_cli("compile", tmp_path / "gc.onnx", "-o", tmp_path / "design", "--vectors", 6)
    assert result.exit_code == 0, result.stderr
    assert "no test vector gives" not in result.stderr  # every layer gets work
    assert "6 test vectors: random inputs" in result.stdout
    vectors = read_vectors(tmp_path / "design" / "vectors")
    assert vectors.batch == 6 and vectors.source.startswith("random inputs")
    meta = json.loads((tmp_path / "design" / "vectors" / "vectors.json").read_text())
    assert meta["source"] == vectors.source and meta["calibration_rows"] is None
    model = network(1024, 8)
    assert (useful_macs(model, vectors.x_q, vectors.layer_outputs) > 0).all()


def test_calibration_rows_keep_their_order_and_at_least_half_reach_the_last_layer():
    model = quantize(network(64, 6), parse_precision("w8a16"), None)
    images = draw_images(64, 40, np.random.default_rng(3)).toarray()
    images[:6] = 0.0  # the first rows are blank: they reach nothing
    chosen = calibration_inputs(model, images, 8)
    assert chosen.calibration_rows[:4] == (0, 1, 2, 3)  # the first rows still come first...
    later = list(chosen.calibration_rows[4:])
    assert later == sorted(later) and len(later) == 4 and min(later) > 3
    assert chosen.source.startswith("calibration rows 0-3, ")
    np.testing.assert_array_equal(chosen.x, images[[0, 1, 2, 3, *later]])
    vectors = golden_vectors(model, chosen.x)
    work = useful_macs(model, vectors.x_q, vectors.layer_outputs)
    assert (work > 0).all(axis=1).sum() >= 4  # ...but half of the vectors reach every layer


def test_calibration_rows_are_taken_as_they_are_when_they_already_reach_every_layer():
    model = quantize(network(64, 2), parse_precision("w8a16"), None)
    images = np.ones((5, 64))
    chosen = calibration_inputs(model, images, 3)
    assert chosen.source == "calibration rows 0-2" and chosen.x.shape == (3, 64)
    assert chosen.calibration_rows == (0, 1, 2)


def test_compiled_vectors_record_which_calibration_rows_they_are(tmp_path, run_cli):
    """vectors.json names the rows as numbers, so a user (or a test) can match the vectors to
    the calibration file without parsing the text of `source`."""
    write_onnx(network(64, 6), tmp_path / "gc.onnx")
    images = draw_images(64, 40, np.random.default_rng(3)).toarray().astype(np.float32)
    images[:6] = 0.0  # blank rows reach nothing, so the chosen rows are not simply the first
    np.save(tmp_path / "calib.npy", images)
    result = run_cli("compile", tmp_path / "gc.onnx", "-o", tmp_path / "design", "--calib", tmp_path / "calib.npy")
    assert result.exit_code == 0, result.stderr
    vectors = read_vectors(tmp_path / "design" / "vectors")
    rows = json.loads((tmp_path / "design" / "vectors" / "vectors.json").read_text())["calibration_rows"]
    assert rows == list(vectors.calibration_rows) and len(rows) == vectors.batch and rows != list(range(len(rows)))
    np.testing.assert_array_equal(vectors.x_q != 0, images[rows] != 0)  # binary images: their ink


def dead_layer_model() -> Model:
    """A middle layer with no weights: no input can give it work."""
    rng = np.random.default_rng(0)
    relu = Activation(0.0, np.inf)
    layers = (
        Layer("fc0", "fc0", sparse_weights(rng.standard_normal((6, 5))), np.zeros(5), relu),
        Layer("fc1", "fc1", sparse_weights(np.zeros((5, 4))), np.full(4, 0.5), relu),
        Layer("fc2", "fc2", sparse_weights(rng.standard_normal((4, 3))), np.zeros(3), Activation()),
    )
    return Model("dead", layers, "x", "y", (6,))


def test_a_layer_that_cannot_get_work_is_named_in_a_warning(tmp_path, run_cli):
    model = quantize(dead_layer_model(), parse_precision("w8a16"), None)
    vectors = golden_vectors(model, default_inputs(model, 4))
    assert idle_layers(model, vectors) == ["fc1"]
    assert (useful_macs(model, vectors.x_q, vectors.layer_outputs)[:, 2] > 0).all()  # its bias feeds fc2

    write_onnx(dead_layer_model(), tmp_path / "dead.onnx")
    result = run_cli("compile", tmp_path / "dead.onnx", "-o", tmp_path / "design", "--vectors", 4)
    assert result.exit_code == 0, result.stderr
    assert "warning: no test vector gives fc1 any work" in result.stderr
    assert "none keeps every layer busy" in result.stdout
