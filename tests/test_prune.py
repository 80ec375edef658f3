"""The prune pass keeps the pattern each method promises, and the command writes a runnable model."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from fpgagen.errors import FpgagenError
from fpgagen.frontend import read_onnx
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.golden import GoldenModel
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.numerics import Precision
from fpgagen.passes.analyze import analyze
from fpgagen.passes.prune import parse_method, prune
from fpgagen.passes.quantize import quantize

RELU = Activation(0.0, math.inf)


def make_layer(name: str, weights: np.ndarray, rng: np.random.Generator, activation=RELU) -> Layer:
    return Layer(name, name, sparse_weights(weights), rng.normal(scale=0.1, size=weights.shape[1]), activation)


def make_model(shapes, seed: int = 0, density: float = 1.0) -> Model:
    """A ReLU chain with normal weights (all magnitudes distinct), optionally pre-pruned at random."""
    rng = np.random.default_rng(seed)
    layers = []
    for index, (n_in, n_out) in enumerate(shapes):
        weights = rng.normal(size=(n_in, n_out)) * (rng.random((n_in, n_out)) < density)
        last = index == len(shapes) - 1
        layers.append(make_layer(f"fc{index}", weights, rng, Activation() if last else RELU))
    return Model("net", tuple(layers), "x", "y", (shapes[0][0],))


def dense(layer: Layer) -> np.ndarray:
    return layer.weights.toarray()


def assert_kept_are_original(before: Layer, after: Layer) -> None:
    kept = dense(after) != 0
    np.testing.assert_array_equal(dense(after)[kept], dense(before)[kept])


# magnitude


def test_magnitude_hits_the_exact_zero_fraction_and_keeps_the_largest():
    model = make_model([(16, 12), (12, 10), (10, 4)])
    pruned = prune(model, 0.75, "magnitude")
    for before, after in zip(model.layers, pruned.layers):
        size = before.in_features * before.out_features
        assert after.nnz == size - round(0.75 * size)
        assert_kept_are_original(before, after)
        kept = np.abs(dense(after)[dense(after) != 0])
        dropped = np.abs(dense(before)[(dense(after) == 0) & (dense(before) != 0)])
        assert kept.min() > dropped.max()


def test_magnitude_counts_existing_zeros_and_leaves_sparser_layers_alone():
    rng = np.random.default_rng(3)
    half = rng.normal(size=(8, 8)) * (np.arange(64).reshape(8, 8) % 2)  # 32 of 64 already zero
    sparse = np.zeros((8, 4))
    sparse[[0, 3, 5], [1, 2, 0]] = [0.5, -2.0, 1.0]  # far sparser than asked
    model = Model("net", (make_layer("a", half, rng), make_layer("b", sparse, rng)), "x", "y", (8,))
    pruned = prune(model, 0.75, "magnitude")
    assert pruned.layers[0].nnz == 16  # 48 zeros of 64: 16 of the 32 nonzeros removed, not 24
    np.testing.assert_array_equal(dense(pruned.layers[1]), sparse)


def test_magnitude_breaks_ties_by_row_major_position():
    weights = np.full((4, 4), 0.0625)  # Graph Challenge style: every weight the same
    model = Model("gc", (make_layer("a", weights, np.random.default_rng(0)),), "x", "y", (4,))
    expected = np.zeros((4, 4))
    expected[:2] = 0.0625
    np.testing.assert_array_equal(dense(prune(model, 0.5, "magnitude").layers[0]), expected)


def test_prune_returns_a_new_float_model_and_leaves_the_input_alone():
    model = make_model([(8, 6), (6, 3)])
    original = [layer.weights.copy() for layer in model.layers]
    quantized = quantize(model, Precision(8, 16))
    pruned = prune(quantized, 0.5, "magnitude")
    assert not pruned.quantized and all(layer.numerics is None for layer in pruned.layers)
    for layer, weights in zip(model.layers, original):
        assert (layer.weights != weights).nnz == 0
    assert pruned.nnz < model.nnz


# nm:N:M


@pytest.mark.parametrize(("n", "m", "n_in"), [(2, 4, 10), (1, 3, 7), (3, 3, 5)])
def test_nm_keeps_the_n_largest_of_every_group_down_each_column(n, m, n_in):
    model = make_model([(n_in, 6)], seed=n * 10 + m)
    before = dense(model.layers[0])
    after = dense(prune(model, None, f"nm:{n}:{m}").layers[0])
    for column in range(before.shape[1]):
        for start in range(0, n_in, m):
            group = slice(start, start + m)
            kept = np.flatnonzero(after[group, column])
            largest = np.sort(np.argsort(-np.abs(before[group, column]))[:n])  # a short last group keeps all
            np.testing.assert_array_equal(kept, largest)
            np.testing.assert_array_equal(after[group, column][kept], before[group, column][kept])


def test_nm_on_a_sparse_layer_never_exceeds_n_per_group():
    model = make_model([(32, 16)], seed=5, density=0.4)
    after = dense(prune(model, 0.5, "nm:2:4").layers[0])
    per_group = np.count_nonzero(after.reshape(8, 4, 16), axis=1)
    assert per_group.max() <= 2
    assert_kept_are_original(model.layers[0], prune(model, 0.5, "nm:2:4").layers[0])


def test_nm_refuses_a_contradicting_sparsity_and_accepts_the_suggested_one():
    model = make_model([(9, 4)])
    with pytest.raises(FpgagenError, match="contradicts nm:2:4"):
        prune(model, 0.6, "nm:2:4")
    with pytest.raises(FpgagenError, match="give 0.333333") as refused:
        prune(model, 0.3, "nm:2:3")
    suggested = float(str(refused.value).rsplit(" ", 1)[-1])
    assert prune(model, suggested, "nm:2:3").nnz == prune(model, None, "nm:2:3").nnz == 24


# balanced:P


def slice_counts(weights: np.ndarray, pes: int) -> np.ndarray:
    """(rows, PEs) count of nonzeros, by a direct loop over PEs."""
    return np.stack([np.count_nonzero(weights[:, p::pes], axis=1) for p in range(pes)], axis=1)


@pytest.mark.parametrize(
    ("n_out", "pes", "sparsity", "per_slice"),
    [(16, 4, 0.5, 2), (10, 4, 0.5, 1), (10, 4, 0.0, 2), (12, 3, 0.8, 1), (9, 9, 0.3, 1)],
)
def test_balanced_gives_every_row_and_pe_the_same_count(n_out, pes, sparsity, per_slice):
    model = make_model([(11, n_out)], seed=n_out + pes)
    pruned = prune(model, sparsity, f"balanced:{pes}")
    before, after = dense(model.layers[0]), dense(pruned.layers[0])
    counts = slice_counts(after, pes)
    assert np.all(counts == per_slice)
    pe_totals = counts.sum(axis=0)
    assert np.all(pe_totals == pe_totals[0])
    for p in range(pes):  # within each slice the kept weights are the largest
        kept = np.abs(after[:, p::pes])
        dropped = np.where((kept == 0) & (before[:, p::pes] != 0), np.abs(before[:, p::pes]), 0.0)
        smallest_kept = np.where(kept > 0, kept, np.inf).min(axis=1)
        assert np.all(smallest_kept > dropped.max(axis=1))
    assert_kept_are_original(model.layers[0], pruned.layers[0])
    report = analyze(pruned, pes=pes).layers[0]
    assert report.lane_efficiency == 1.0
    assert report.pe_imbalance == 1.0


def test_balanced_beats_magnitude_on_lane_efficiency():
    model = make_model([(64, 64)], seed=9)
    balanced = analyze(prune(model, 0.875, "balanced:8"), pes=8).layers[0]
    unstructured = analyze(prune(model, 0.875, "magnitude"), pes=8).layers[0]
    assert balanced.nnz == unstructured.nnz == 512
    assert balanced.lane_efficiency == 1.0
    assert unstructured.lane_efficiency < 0.8


@pytest.mark.parametrize(
    ("shape", "sparsity", "method", "message"),
    [
        ((8, 3), 0.5, "balanced:4", "fewer than the 4 PEs"),
        ((8, 8), 0.9, "balanced:4", "keeps round"),
    ],
)
def test_balanced_refuses_unsatisfiable_requests(shape, sparsity, method, message):
    with pytest.raises(FpgagenError, match=message):
        prune(make_model([shape]), sparsity, method)


def test_balanced_names_the_slice_that_lacks_weights():
    weights = np.ones((4, 8))
    weights[2, [1, 5]] = 0.0  # row 2 has nothing left on PE 1 of 4
    model = Model("net", (make_layer("a", weights, np.random.default_rng(0)),), "x", "y", (4,))
    with pytest.raises(FpgagenError, match=r"row 2 has only 0 nonzero weight\(s\) on PE 1"):
        prune(model, 0.5, "balanced:4")


# argument checking


@pytest.mark.parametrize(
    ("method", "sparsity", "message"),
    [
        ("nm:3:2", None, "1 <= N <= M"),
        ("nm:0:4", None, "1 <= N <= M"),
        ("nm:a:b", None, "malformed"),
        ("nm:2", None, "malformed"),
        ("balanced:0", 0.5, "at least one PE"),
        ("balanced:x", 0.5, "malformed"),
        ("random", 0.5, "unknown"),
        ("magnitude", None, "needs a sparsity"),
        ("balanced:4", None, "needs a sparsity"),
        ("magnitude", 1.0, "outside"),
        ("magnitude", -0.1, "outside"),
        ("magnitude", float("nan"), "outside"),
    ],
)
def test_bad_arguments_are_refused(method, sparsity, message):
    with pytest.raises(FpgagenError, match=message):
        prune(make_model([(8, 4)]), sparsity, method)


def test_parse_method_reads_each_form():
    assert parse_method("nm:2:4").describe() == "nm:2:4"
    assert parse_method(" balanced:16 ").describe() == "balanced:16"
    assert parse_method("magnitude").describe() == "magnitude"


# ONNX output and the command


@pytest.mark.parametrize("sparse_initializers", [False, True])
@pytest.mark.parametrize(("sparsity", "method"), [(0.7, "magnitude"), (None, "nm:2:4"), (0.5, "balanced:4")])
def test_pruned_onnx_checks_and_runs_like_the_golden_model(tmp_path, sparsity, method, sparse_initializers):
    model = make_model([(24, 16), (16, 12), (12, 8)], seed=1)
    pruned = prune(model, sparsity, method)
    path = tmp_path / "pruned.onnx"
    write_onnx(pruned, path, sparse=sparse_initializers)
    onnx.checker.check_model(onnx.load(str(path)))
    x = np.random.default_rng(2).normal(size=(32, 24))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (y_ort,) = session.run(None, {"x": x.astype(np.float32)})
    assert [layer.nnz for layer in read_onnx(path).layers] == [layer.nnz for layer in pruned.layers]
    y_golden = GoldenModel(pruned).predict(x.astype(np.float32))
    np.testing.assert_allclose(y_ort, y_golden, rtol=1e-5, atol=1e-5 * np.abs(y_golden).max())


def test_prune_command_writes_the_model_and_prints_both_counts(tmp_path, run_cli):
    source, target = tmp_path / "model.onnx", tmp_path / "pruned.onnx"
    model = make_model([(16, 12), (12, 8)])
    write_onnx(model, source)
    result = run_cli("prune", source, "-o", target, "--sparsity", "0.75", "--method", "magnitude")
    assert result.exit_code == 0, result.stderr
    written = read_onnx(target)
    assert [layer.nnz for layer in written.layers] == [48, 24]
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│ fc")}
    for name, before, after in (("fc0", 192, 48), ("fc1", 96, 24)):
        numbers = [cell.strip() for cell in lines[name].split("│")[1:-1]]
        assert numbers[2:4] == [str(before), str(after)]


@pytest.mark.parametrize(
    "args",
    [
        ["--sparsity", "0.5", "--method", "nm:3:2"],
        ["--sparsity", "0.5", "--method", "balanced:0"],
        ["--sparsity", "1.5"],
        ["--sparsity", "0.4", "--method", "nm:2:4"],
        ["--sparsity", "0.5", "--method", "balanced:32"],
        ["--sparsity", "half"],
        ["--method", "magnitude"],
    ],
)
def test_prune_command_rejects_bad_arguments_and_writes_nothing(tmp_path, run_cli, args):
    source = tmp_path / "model.onnx"
    write_onnx(make_model([(16, 12)]), source)
    result = run_cli("prune", source, "-o", tmp_path / "out" / "pruned.onnx", *args)
    assert result.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def test_prune_command_names_a_missing_model(tmp_path, run_cli):
    result = run_cli("prune", tmp_path / "nope.onnx", "-o", tmp_path / "p.onnx", "--sparsity", "0.5")
    assert result.exit_code == 2
    assert "nope.onnx" in result.stderr
    assert not (tmp_path / "p.onnx").exists()


def test_prune_command_never_overwrites_a_file_fpgagen_did_not_write(tmp_path, run_cli):
    source, mine = tmp_path / "model.onnx", tmp_path / "notes.onnx"
    write_onnx(make_model([(16, 12)]), source)
    mine.write_text("a user's own file")
    for target, message in ((mine, "fpgagen did not write it"), (source, "the model this command reads")):
        result = run_cli("prune", source, "-o", target, "--sparsity", "0.5")
        assert result.exit_code == 2 and message in result.stderr
    assert mine.read_text() == "a user's own file" and read_onnx(source).nnz == 192
    # an earlier output of fpgagen is replaced
    target = tmp_path / "pruned.onnx"
    for sparsity, nnz in (("0.5", 96), ("0.75", 48)):
        assert run_cli("prune", source, "-o", target, "--sparsity", sparsity).exit_code == 0
        assert read_onnx(target).nnz == nnz
