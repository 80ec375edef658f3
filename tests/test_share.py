"""Weight sharing (fpgagen/passes/share.py, `fpgagen share`) and the codebook encoding it leads to."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fpgagen.engine.encoding import encoding_of
from fpgagen.errors import FpgagenError
from fpgagen.frontend import read_onnx
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.passes.share import share_weights


def random_model(seed: int = 0) -> Model:
    rng = np.random.default_rng(seed)
    layers = []
    for index, (n_in, n_out) in enumerate(((40, 60), (60, 8))):
        weights = rng.standard_normal((n_in, n_out)) * (rng.random((n_in, n_out)) < 0.4)
        layers.append(
            Layer(f"fc{index}", f"fc{index}", sparse_weights(weights), rng.uniform(-0.1, 0.1, n_out), Activation(0.0))
        )
    return Model("mlp", tuple(layers), "x", "y", (40,))


@pytest.mark.parametrize("values", [2, 5, 16, 64])
def test_every_layer_keeps_at_most_the_values_asked_with_its_signs_and_sparsity(values):
    model = random_model()
    shared = share_weights(model, values)
    for before, after in zip(model.layers, shared.layers):
        assert np.unique(after.weights.data).size <= values
        # the same nonzeros, none of them zero or of another sign
        assert (after.weights.indptr == before.weights.indptr).all() and (
            after.weights.indices == before.weights.indices
        ).all()
        assert (np.sign(after.weights.data) == np.sign(before.weights.data)).all()
        # each kept value is the mean of the weights it replaced (k-means' centroid)
        for value in np.unique(after.weights.data):
            assert before.weights.data[after.weights.data == value].mean() == pytest.approx(value, rel=1e-6)
    assert (model.layers[0].weights.data != shared.layers[0].weights.data).any()  # the input is left alone


def test_a_layer_of_few_values_is_left_as_it_is_and_bad_counts_are_refused():
    ternary = Layer("t", "t", sparse_weights(np.array([[0.5, -0.5, 0.0], [0.0, 0.5, -0.5]])), np.zeros(3))
    model = Model("t", (ternary,), "x", "y", (2,))
    assert share_weights(model, 2).layers[0] is ternary
    for values in (1, 65):
        with pytest.raises(FpgagenError, match=f"--values {values}"):
            share_weights(model, values)


def test_shared_weights_quantize_into_a_codebook():
    shared = share_weights(random_model(), 16)
    quantized = quantize(shared, parse_precision("w8a16"))
    encodings = [encoding_of(layer.numerics) for layer in quantized.layers]
    assert all(encoding.indexed and encoding.weight_bits <= 4 for encoding in encodings)


def test_share_command_writes_the_model_and_never_a_users_file(tmp_path, run_cli):
    source, target, mine = tmp_path / "model.onnx", tmp_path / "shared.onnx", tmp_path / "mine.onnx"
    write_onnx(random_model(), source)
    result = run_cli("share", source, "-o", target, "--values", "8", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [row["values_after"] for row in report["layers"]] == [8, 8]
    assert all(row["values_before"] > 8 for row in report["layers"])
    assert [np.unique(layer.weights.data).size for layer in read_onnx(target).layers] == [8, 8]
    mine.write_bytes(b"mine")
    for output, values in ((mine, "8"), (source, "8"), (tmp_path / "new.onnx", "65")):
        result = run_cli("share", source, "-o", output, "--values", values)
        assert result.exit_code == 2, result.stdout
    assert mine.read_bytes() == b"mine" and not (tmp_path / "new.onnx").exists()
