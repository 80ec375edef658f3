"""The ONNX front end, proved through `fpgagen predict` against onnxruntime and by its refusals.

Random chains (tests/onnx_models.py) must give onnxruntime's outputs; every model outside the
supported subset must be refused with exit code 2, a message naming the node or file, and no
output left behind. The forms the random chains use are read back from the ONNX files
themselves, so the generator cannot quietly stop covering one.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
import scipy.sparse as sp
from onnx import TensorProto, helper, numpy_helper
from onnx_models import build_model, onnxruntime_outputs, random_chain, sparse_tensor

from fpgagen.frontend import read_onnx
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.golden import GoldenModel, flatten_inputs
from fpgagen.ir import Activation, Layer, Model, sparse_weights

SEEDS = range(52)  # four models per opset from 9 to 21
TOLERANCE = 1e-5  # relative to the largest output: float32 (onnxruntime) against float64 (ours)


def predict(run_cli, model: Path, inputs: np.ndarray, folder: Path):
    """Run `fpgagen predict --precision float` on `inputs`; return the CLI result and the --out path."""
    inputs_path, out = folder / "x.npy", folder / "out" / "y.npy"
    np.save(inputs_path, inputs)
    out.parent.mkdir(exist_ok=True)
    return run_cli("predict", model, "--inputs", inputs_path, "--out", out, "--precision", "float"), out


def assert_matches_onnxruntime(run_cli, model: Path, inputs: np.ndarray, folder: Path) -> None:
    result, out = predict(run_cli, model, inputs, folder)
    assert result.exit_code == 0, result.stderr
    expected = onnxruntime_outputs(model, inputs)
    ours = np.load(out)
    assert ours.shape == expected.shape
    assert np.max(np.abs(ours - expected)) <= TOLERANCE * np.max(np.abs(expected))


# -- random chains against onnxruntime ---------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_random_chain_matches_onnxruntime(seed, tmp_path, run_cli):
    chain = random_chain(seed)
    model = tmp_path / "model.onnx"
    onnx.save(chain.model, model)
    assert_matches_onnxruntime(run_cli, model, chain.inputs, tmp_path)


def forms_of(model: onnx.ModelProto) -> set[str]:
    """The supported op types and attribute forms one model uses, read from its ONNX graph."""
    graph = model.graph
    opset = model.opset_import[0].version
    storage = {tensor.name: "initializer" for tensor in graph.initializer}
    values = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    for tensor in graph.sparse_initializer:
        storage[tensor.values.name] = "sparse initializer"
        values[tensor.values.name] = _densify(tensor)
    for node in graph.node:
        if node.op_type == "Constant":
            attr = node.attribute[0]
            storage[node.output[0]] = f"Constant {attr.name}"
            value = numpy_helper.to_array(attr.t) if attr.name == "value" else helper.get_attribute_value(attr)
            values[node.output[0]] = np.asarray(value)

    def present(node: onnx.NodeProto, index: int) -> bool:
        return len(node.input) > index and node.input[index] != ""

    dims = graph.input[0].type.tensor_type.shape.dim
    forms = {f"opset {opset}", f"input rank {len(dims)}"}
    for node in graph.node:
        op, attrs = node.op_type, {a.name: helper.get_attribute_value(a) for a in node.attribute}
        forms.add(op)
        forms |= {f"stored as {storage[name]}" for name in node.input if name in storage}
        if op in ("Gemm", "MatMul"):
            weight = values[node.input[1]]
            forms.add(f"weights as {storage[node.input[1]]}")
            if any(n & (n - 1) for n in weight.shape):
                forms.add("width not a power of two")
            if np.any(weight == 0):
                forms.add("some weights zero")
        if op == "Gemm":
            forms |= {f"Gemm {name}" for name in ("alpha", "beta") if name in attrs}
            forms.add(f"Gemm transB={attrs['transB']}" if "transB" in attrs else "Gemm transB absent")
            if present(node, 2):
                shape = values[node.input[2]].shape
                forms.add("Gemm C " + {(): "()", (1,): "(1,)"}.get(shape, "(N,)" if len(shape) == 1 else "(1,N)"))
            else:
                forms.add("Gemm without C")
        elif op in ("Add", "Min", "Max"):
            forms.add(f"{op} constant {'first' if node.input[0] in storage else 'second'}")
        elif op == "Clip":
            kept = ("min" in attrs, "max" in attrs) if opset < 11 else (present(node, 1), present(node, 2))
            forms.add("Clip attributes" if opset < 11 else "Clip inputs")
            forms |= {f"Clip without {bound}" for bound, there in zip(("min", "max"), kept) if not there}
        elif op == "Flatten":
            forms.add("Flatten axis<0" if attrs.get("axis", 1) < 0 else "Flatten axis=1")
        elif op == "Reshape":
            batch, features = values[node.input[1]].tolist()
            forms.add(f"Reshape ({batch}, {'-1' if features == -1 else 'F'})")
            if "allowzero" in attrs:
                forms.add("Reshape allowzero=0")
        elif op == "Dropout":
            forms.add("Dropout before opset 12" if opset < 12 else "Dropout from opset 12")
            if "ratio" in attrs:
                forms.add("Dropout ratio attribute")
            for index, name in ((1, "ratio"), (2, "training_mode")):
                if present(node, index):
                    forms.add(f"Dropout {name} input")
            if len(node.output) > 1:
                forms.add("Dropout mask output")
    return forms


def _densify(tensor: onnx.SparseTensorProto) -> np.ndarray:
    dense = np.zeros(tuple(tensor.dims), dtype=np.float32)
    indices = numpy_helper.to_array(tensor.indices)
    positions = tuple(indices.T) if indices.ndim == 2 else np.unravel_index(indices, dense.shape)
    dense[positions] = numpy_helper.to_array(tensor.values)
    return dense


REQUIRED_FORMS = (
    {f"opset {opset}" for opset in range(9, 22)}
    | {"input rank 2", "input rank 4", "width not a power of two", "some weights zero"}
    | {"Gemm", "MatMul", "Add", "Relu", "Clip", "Min", "Max", "Flatten", "Reshape", "Identity", "Dropout"}
    | {"Gemm alpha", "Gemm beta", "Gemm transB=0", "Gemm transB=1", "Gemm transB absent", "Gemm without C"}
    | {"Gemm C ()", "Gemm C (1,)", "Gemm C (N,)", "Gemm C (1,N)"}
    | {"Add constant first", "Add constant second", "Min constant first", "Min constant second"}
    | {"Max constant first", "Max constant second"}
    | {"Clip attributes", "Clip inputs", "Clip without min", "Clip without max"}
    | {"Flatten axis=1", "Flatten axis<0", "Reshape (-1, F)", "Reshape (0, F)", "Reshape (0, -1)"}
    | {"Reshape allowzero=0", "Dropout before opset 12", "Dropout from opset 12", "Dropout ratio attribute"}
    | {"Dropout ratio input"}
    | {"Dropout training_mode input", "Dropout mask output"}
    | {"weights as initializer", "weights as Constant value", "weights as sparse initializer"}
    | {"stored as initializer", "stored as sparse initializer", "stored as Constant value"}
    | {"stored as Constant value_float", "stored as Constant value_floats"}
)


def test_random_chains_cover_every_supported_form():
    covered = set().union(*(forms_of(random_chain(seed).model) for seed in SEEDS))
    assert sorted(REQUIRED_FORMS - covered) == []


# -- refusals ------------------------------------------------------------------------------------

W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 10.0  # 4 input features, 3 outputs
BIAS = np.array([0.1, -0.2, 0.3], dtype=np.float32)
EYE = np.eye(4, dtype=np.float32)
NAN_W = np.where(np.arange(12).reshape(4, 3) == 7, np.nan, W).astype(np.float32)
SUPPORTED = "fpgagen supports Gemm, MatMul, Add, Relu, Clip, Min, Max, Flatten, Reshape, Identity, Dropout"


def node(op: str, inputs: list[str], output: str, name: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], name=name, **attrs)


def after_layer(*nodes: onnx.NodeProto, weight: np.ndarray = W, opset: int = 17, **constants) -> onnx.ModelProto:
    """x (batch, 4) -> MatMul 'mm' -> h, then `nodes` (the last one writing y)."""
    mm = node("MatMul", ["x", "W"], "h" if nodes else "y", "mm")
    return build_model([mm, *nodes], ["N", 4], initializers=(("W", weight), *constants.items()), opset=opset)


def before_layer(first: onnx.NodeProto, input_shape: list, weight: np.ndarray = W, **constants) -> onnx.ModelProto:
    """x -> `first` (writing r) -> MatMul 'mm' -> y."""
    mm = node("MatMul", ["r", "W"], "y", "mm")
    return build_model([first, mm], input_shape, initializers=(*constants.items(), ("W", weight)))


def alone(only: onnx.NodeProto, input_shape: list | None = None, **constants) -> onnx.ModelProto:
    return build_model([only], ["N", 4] if input_shape is None else input_shape, initializers=tuple(constants.items()))


def conv_first() -> onnx.ModelProto:
    conv = node("Conv", ["x", "K"], "c", "conv")
    flatten = node("Flatten", ["c"], "f", "flatten")
    mm = node("MatMul", ["f", "W"], "y", "mm")
    kernel = np.ones((1, 1, 3, 3), np.float32)
    return build_model([conv, flatten, mm], ["N", 1, 4, 4], initializers=(("K", kernel), ("W", W)))


def custom_domain_relu() -> onnx.ModelProto:
    model = after_layer(helper.make_node("Relu", ["h"], ["y"], name="fused_relu", domain="com.example"))
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def two_inputs(second: str) -> onnx.ModelProto:
    """x and `second` both graph inputs; `second` is MatMul's weight when named W, else added to h."""
    is_weight = second == "W"
    nodes = [node("MatMul", ["x", "W"], "y" if is_weight else "h", "mm")]
    nodes += [] if is_weight else [node("Add", ["h", second], "y", "join")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 4]) for name in ("x", second)]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    initializers = [] if is_weight else [numpy_helper.from_array(W, "W")]
    graph = helper.make_graph(nodes, "g", inputs, [output], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def two_outputs() -> onnx.ModelProto:
    model = after_layer(node("Relu", ["h"], "y", "relu"))
    model.graph.output.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, None))
    return model


def scalar(value: float) -> np.ndarray:
    return np.array(value, dtype=np.float32)


# Models the reader must refuse, with the fragments its message must hold ("{path}": the file).
REFUSED_MODELS = {
    "conv": (conv_first, ["node 'conv' (Conv)", SUPPORTED]),
    "sigmoid": (lambda: after_layer(node("Sigmoid", ["h"], "y", "squash")), ["'squash' (Sigmoid)", SUPPORTED]),
    "softmax": (lambda: after_layer(node("Softmax", ["h"], "y", "soft", axis=1)), ["'soft' (Softmax)", SUPPORTED]),
    "unnamed_node_named_by_its_output": (
        lambda: after_layer(helper.make_node("Sigmoid", ["h"], ["y"])),
        ["node 'y' (Sigmoid)"],
    ),
    "other_domain": (custom_domain_relu, ["'fused_relu' (Relu) from domain 'com.example'"]),
    "weight_is_graph_input": (lambda: two_inputs("W"), ["{path}", "2 inputs ('x', 'W')", "not graph inputs"]),
    "tensor_feeds_two_nodes": (
        lambda: after_layer(
            node("Relu", ["h"], "a", "relu_a"), node("Relu", ["h"], "b", "relu_b"), node("Add", ["a", "b"], "y", "join")
        ),
        ["node 'mm' (MatMul) feeds 2 consumers", "'relu_a' (Relu)", "'relu_b' (Relu)", "without branches"],
    ),
    "residual_add": (
        lambda: after_layer(node("Relu", ["h"], "r", "relu"), node("Add", ["h", "r"], "y", "residual"), weight=EYE),
        ["node 'mm' (MatMul) feeds 2 consumers", "'residual' (Add)", "without branches"],
    ),
    "add_of_one_tensor_twice": (
        lambda: after_layer(node("Add", ["h", "h"], "y", "double")),
        ["'double' (Add) combines two computed tensors"],
    ),
    "dynamic_feature_dimension": (
        lambda: alone(node("MatMul", ["x", "W"], "y", "mm"), ["N", "features"], W=W),
        ["{path}", "input 'x' has a dynamic size (features) on axis 1"],
    ),
    "missing_input_shape": (
        lambda: build_model([node("MatMul", ["x", "W"], "y", "mm")], None, initializers=(("W", W),)),
        ["{path}", "input 'x' has no declared shape"],
    ),
    "two_graph_inputs": (lambda: two_inputs("x2"), ["{path}", "2 inputs ('x', 'x2')"]),
    "two_graph_outputs": (two_outputs, ["{path}", "2 outputs ('y', 'h')"]),
    "opset_8": (lambda: after_layer(opset=8), ["{path}", "opset 8 is not supported", "opsets 9 to 21"]),
    "opset_22": (lambda: after_layer(opset=22), ["{path}", "opset 22 is not supported", "opsets 9 to 21"]),
    "weight_without_outputs": (
        lambda: alone(node("MatMul", ["x", "W"], "y", "mm"), W=np.zeros((4, 0), np.float32)),
        ["'mm' (MatMul): weight 'W' has shape (4, 0); a layer needs at least one input and output"],
    ),
    "complex_weights": (
        lambda: alone(node("MatMul", ["x", "W"], "y", "mm"), W=W.astype(np.complex64)),
        ["{path}: tensor 'W' holds complex64 values; fpgagen reads real numbers"],
    ),
    "text_weights": (
        lambda: alone(node("MatMul", ["x", "W"], "y", "mm"), W=np.array([["1"] * 3] * 4, dtype=object)),
        ["{path}: tensor 'W' holds string values; fpgagen reads real numbers"],
    ),
    "feature_axis_of_size_0": (
        lambda: alone(node("MatMul", ["x", "W"], "y", "mm"), ["N", 0], W=W),
        ["{path}", "input 'x' has size 0 on axis 1; expected at least 1"],
    ),
    "gemm_trans_a": (
        lambda: alone(node("Gemm", ["x", "W"], "y", "gemm", transA=1), W=W),
        ["'gemm' (Gemm): transA=1 is not supported"],
    ),
    "clip_min_above_max_inputs": (
        lambda: after_layer(node("Clip", ["h", "lo", "hi"], "y", "clip"), lo=scalar(1), hi=scalar(0)),
        ["'clip' (Clip): min 1 is above max 0"],
    ),
    "clip_min_above_max_attributes": (
        lambda: after_layer(node("Clip", ["h"], "y", "clip", min=2.0, max=-1.0), opset=10),
        ["'clip' (Clip): min 2 is above max -1"],
    ),
    "min_per_feature_vector": (
        lambda: after_layer(node("Min", ["h", "cap"], "y", "cap"), cap=np.array([0.1, 0.2, 0.3], np.float32)),
        ["'cap' (Min)", "differs between features"],
    ),
    "add_after_activation": (
        lambda: after_layer(node("Relu", ["h"], "r", "relu"), node("Add", ["r", "b"], "y", "late_bias"), b=BIAS),
        ["'late_bias' (Add)", "after an activation"],
    ),
    "activation_before_any_layer": (
        lambda: before_layer(node("Relu", ["x"], "r", "early"), ["N", 4]),
        ["'early' (Relu)", "before any MatMul or Gemm"],
    ),
    "reshape_rows_into_features": (
        lambda: before_layer(node("Reshape", ["x", "shape"], "r", "reshape"), ["N", 4], shape=np.array([-1, 2])),
        ["'reshape' (Reshape)", "mixes the batch and feature axes"],
    ),
    "reshape_fixed_batch": (
        lambda: before_layer(node("Reshape", ["x", "shape"], "r", "reshape"), ["N", 4], shape=np.array([2, -1])),
        ["'reshape' (Reshape)", "mixes the batch and feature axes"],
    ),
    "reshape_to_rank_3": (
        lambda: before_layer(node("Reshape", ["x", "shape"], "r", "reshape"), ["N", 4], shape=np.array([0, 2, 2])),
        ["'reshape' (Reshape)", "not a reshape to (batch, features)"],
    ),
    "flatten_axis_0": (
        lambda: before_layer(node("Flatten", ["x"], "r", "flatten", axis=0), ["N", 2, 2, 1]),
        ["'flatten' (Flatten): axis 0"],
    ),
    "flatten_axis_2": (
        lambda: before_layer(node("Flatten", ["x"], "r", "flatten", axis=2), ["N", 2, 2, 1]),
        ["'flatten' (Flatten): axis 2"],
    ),
    "dropout_training_mode": (
        lambda: after_layer(node("Dropout", ["h", "", "train"], "y", "drop"), opset=13, train=np.array(True)),
        ["'drop' (Dropout): training_mode is True; only inference Dropout"],
    ),
    "dropout_training_mode_empty": (
        lambda: after_layer(node("Dropout", ["h", "", "train"], "y", "drop"), opset=13, train=np.array([], bool)),
        ["'drop' (Dropout): training_mode is []"],
    ),
    "nan_weight": (lambda: after_layer(weight=NAN_W), ["'mm' (MatMul)", "NaN"]),
    "nan_sparse_weight": (
        lambda: build_model(
            [node("MatMul", ["x", "W"], "y", "mm")], ["N", 4], sparse_initializers=(sparse_tensor("W", NAN_W),)
        ),
        ["'mm' (MatMul)", "NaN"],
    ),
    "nan_bias": (
        lambda: after_layer(node("Add", ["h", "b"], "y", "bias"), b=np.array([0, np.nan, 0], np.float32)),
        ["'bias' (Add)", "NaN"],
    ),
    "nan_clip_bound_input": (
        lambda: after_layer(node("Clip", ["h", "lo"], "y", "clip"), lo=scalar(np.nan)),
        ["'clip' (Clip)", "NaN"],
    ),
    "nan_clip_bound_attribute": (
        lambda: after_layer(node("Clip", ["h"], "y", "clip", max=math.nan), opset=9),
        ["'clip' (Clip)", "NaN"],
    ),
    "weight_shape_mismatch": (
        lambda: after_layer(weight=np.ones((5, 3), np.float32)),
        ["'mm' (MatMul)", "weight of shape (5, 3) does not fit 4 input features"],
    ),
    "gemm_bias_shape_mismatch": (
        lambda: alone(node("Gemm", ["x", "W", "C"], "y", "gemm"), W=W, C=np.ones(4, np.float32)),
        ["'gemm' (Gemm)", "bias 'C' of shape (4,) does not broadcast to 3 features"],
    ),
    "addend_that_adds_an_axis": (
        lambda: after_layer(node("Add", ["h", "b"], "y", "bias"), b=np.ones((1, 1, 1), np.float32)),
        ["'bias' (Add)", "shape (1, 1, 1) does not broadcast"],
    ),
    "bound_with_rows": (
        lambda: after_layer(node("Max", ["h", "floor"], "y", "floor"), floor=np.zeros((2, 3), np.float32)),
        ["'floor' (Max)", "shape (2, 3) does not broadcast"],
    ),
    "dropout_mask_as_output": (
        lambda: after_layer(helper.make_node("Dropout", ["h"], ["d", "y"], name="drop"), opset=10),
        ["the graph output is 'y', which is not the first output of node 'drop' (Dropout)"],
    ),
    "matmul_without_weight": (
        lambda: alone(node("MatMul", ["x"], "y", "mm")),
        ["'mm' (MatMul): input 1 (the weight) is missing"],
    ),
    "reshape_without_shape": (
        lambda: before_layer(node("Reshape", ["x"], "r", "reshape"), ["N", 4]),
        ["'reshape' (Reshape): input 1 (the target shape) is missing"],
    ),
    # Invalid ONNX that onnxruntime refuses; each part read alone would give a model that runs.
    "clip_bounds_as_attributes_past_opset_11": (
        lambda: after_layer(node("Clip", ["h"], "y", "clip", min=0.0, max=0.5), opset=13),
        ["'clip' (Clip): not valid ONNX at opset 13", "Unrecognized attribute: max"],
    ),
    "clip_bounds_as_inputs_before_opset_11": (
        lambda: after_layer(node("Clip", ["h", "lo", "hi"], "y", "clip"), opset=10, lo=scalar(0), hi=scalar(0.5)),
        ["'clip' (Clip): not valid ONNX at opset 10", "input size 3"],
    ),
    "integer_weight": (
        lambda: after_layer(weight=np.ones((4, 3), np.int8)),
        ["'mm' (MatMul): its input 'W' is int8, the model's input float32"],
    ),
    "double_bias_on_float_input": (
        lambda: after_layer(node("Add", ["h", "b"], "y", "bias"), b=BIAS.astype(np.float64)),
        ["'bias' (Add): its input 'b' is float64, the model's input float32"],
    ),
    "integer_clip_bound": (
        lambda: after_layer(node("Clip", ["h", "lo"], "y", "clip"), lo=np.array(0, np.int64)),
        ["'clip' (Clip): its input 'lo' is int64"],
    ),
    "constant_node_redefines_an_initializer": (
        lambda: build_model(
            [
                helper.make_node("Constant", [], ["W"], name="shadow", value=numpy_helper.from_array(W * 2)),
                node("MatMul", ["x", "W"], "y", "mm"),
            ],
            ["N", 4],
            initializers=(("W", W),),
        ),
        ["tensor 'W' is defined more than once"],
    ),
}


def with_external_weights(folder: Path) -> Path:
    """A model in `folder` whose weight W and bias b live in folder/weights.bin."""
    folder.mkdir(exist_ok=True)
    path = folder / "model.onnx"
    model = after_layer(node("Add", ["h", "b"], "y", "bias"), b=BIAS)
    onnx.save_model(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    return path


def relocated_external_weights(folder: Path, location: str | Path) -> Path:
    """An external-data model in folder/model whose weights.bin now sits at folder/outside, named by `location`."""
    path = with_external_weights(folder / "model")
    (folder / "outside").mkdir()
    (folder / "model" / "weights.bin").rename(folder / "outside" / "weights.bin")
    proto = onnx.load(path, load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = str(location)
    path.write_bytes(proto.SerializeToString())
    return path


def without_external_weights(folder: Path) -> Path:
    path = with_external_weights(folder / "model")
    (path.parent / "weights.bin").unlink()
    return path


def truncated(folder: Path) -> Path:
    path = folder / "model.onnx"
    onnx.save(after_layer(weight=np.ones((4, 300), np.float32)), path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def random_bytes(folder: Path) -> Path:
    path = folder / "model.onnx"
    path.write_bytes(np.random.default_rng(7).bytes(4096))
    return path


def text_file(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("These are my notes about the model, not the model.\n" * 20)
    return path


# Files the reader must refuse: each writer puts one in a folder and returns its path.
REFUSED_FILES = {
    "random_bytes": (random_bytes, ["{path}", "not a readable ONNX model"]),
    "truncated_model": (truncated, ["{path}", "not a readable ONNX model"]),
    "text_file": (text_file, ["{path}", "not a readable ONNX model"]),
    "missing_file": (lambda folder: folder / "absent.onnx", ["{path}", "no such file"]),
    "external_data_absolute_path": (
        lambda folder: relocated_external_weights(folder, folder.resolve() / "outside" / "weights.bin"),
        ["{path}", "tensor 'W'", "outside the model's folder"],
    ),
    "external_data_parent_path": (
        lambda folder: relocated_external_weights(folder, "../outside/weights.bin"),
        ["{path}", "tensor 'W'", "'../outside/weights.bin', outside the model's folder"],
    ),
    "external_data_missing": (
        without_external_weights,
        ["{path}", "tensor 'W' refers to missing external data 'weights.bin'"],
    ),
}


def _write_model(build):
    def write(folder: Path) -> Path:
        path = folder / "model.onnx"
        onnx.save(build(), path)
        return path

    return write


REFUSALS = {name: (_write_model(build), fragments) for name, (build, fragments) in REFUSED_MODELS.items()}
REFUSALS |= REFUSED_FILES


@pytest.mark.parametrize("case", REFUSALS.values(), ids=REFUSALS.keys())
def test_refusal_names_the_culprit_and_writes_nothing(case, tmp_path, run_cli):
    write, fragments = case
    model = write(tmp_path)
    result, out = predict(run_cli, model, np.zeros((2, 4), np.float32), tmp_path)
    assert result.exit_code == 2, result.stderr
    message = " ".join(result.stderr.split())
    for fragment in fragments:
        assert fragment.replace("{path}", str(model)) in message
    assert not out.exists()
    assert list(out.parent.iterdir()) == []  # no temporary left behind either


# -- external data -------------------------------------------------------------------------------


def test_external_data_inside_the_model_folder_is_read(tmp_path, run_cli):
    model = with_external_weights(tmp_path / "model")
    assert (tmp_path / "model" / "weights.bin").stat().st_size == W.nbytes + BIAS.nbytes
    inputs = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    assert_matches_onnxruntime(run_cli, model, inputs, tmp_path)


def test_external_values_of_a_sparse_initializer_are_read_from_the_model_folder(tmp_path, run_cli):
    # onnx's own loader skips sparse initializers; they must not be looked up in the current directory.
    matrix = np.where(np.arange(12).reshape(4, 3) % 3 == 0, W, 0).astype(np.float32)
    weights = sparse_tensor("W", matrix)
    (tmp_path / "values.bin").write_bytes(numpy_helper.to_array(weights.values).tobytes())
    weights.values.ClearField("raw_data")
    weights.values.data_location = TensorProto.EXTERNAL
    entry = weights.values.external_data.add()
    entry.key, entry.value = "location", "values.bin"
    model = tmp_path / "model.onnx"
    onnx.save(build_model([node("MatMul", ["x", "W"], "y", "mm")], ["N", 4], sparse_initializers=(weights,)), model)
    inputs = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    assert_matches_onnxruntime(run_cli, model, inputs, tmp_path)


# -- IR -> write_onnx -> read_onnx -----------------------------------------------------------------


def random_ir(seed: int, input_name: str = "x", output_name: str = "y") -> Model:
    """A model with float32-exact weights, so writing it as ONNX loses nothing."""
    rng = np.random.default_rng(seed)
    input_shape = (3, 2, 5) if seed % 2 else (int(rng.integers(1, 30)),)
    activations = [Activation(), Activation(0.0, math.inf), Activation(-0.5, 0.75), Activation(-math.inf, 0.5)]
    layers, features = [], math.prod(input_shape)
    for index in range(int(rng.integers(1, 5))):
        width = int(rng.integers(1, 30))
        matrix = sp.random(features, width, density=float(rng.uniform(0.05, 1.0)), random_state=rng)
        matrix.data = (matrix.data - 0.5).astype(np.float32)
        bias = rng.uniform(-0.5, 0.5, width).astype(np.float32) * (index % 2)  # odd layers have no bias
        act = activations[int(rng.integers(len(activations)))]
        layers.append(Layer(f"fc{index}", f"fc{index}", sparse_weights(matrix), bias.astype(np.float64), act))
        features = width
    return Model("random", tuple(layers), input_name, output_name, input_shape)


# The writer makes up tensor names (flat, fc0_W, fc0_mm, fc1_b, ...): a model's own input and
# output names may be any of them.
ROUND_TRIPS = [
    pytest.param(seed, names, id=f"{seed}-{'-'.join(names)}")
    for seed in range(4)
    for names in (("x", "y"), ("flat", "fc0_mm"), ("fc0_W", "fc1_b"))
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize(("seed", "names"), ROUND_TRIPS)
def test_written_model_reads_back_identical_and_runs_in_onnxruntime(seed, names, sparse, tmp_path):
    model = random_ir(seed, *names)
    path = tmp_path / "model.onnx"
    write_onnx(model, path, sparse=sparse)
    back = read_onnx(path)
    assert back.input_name == model.input_name and back.output_name == model.output_name
    assert back.input_shape == model.input_shape
    assert [layer.name for layer in back.layers] == [layer.name for layer in model.layers]
    for ours, theirs in zip(model.layers, back.layers):
        assert (ours.weights != theirs.weights).nnz == 0
        assert np.array_equal(ours.bias, theirs.bias)
        assert ours.activation == theirs.activation
    inputs = np.random.default_rng(seed).standard_normal((6, *model.input_shape)).astype(np.float32)
    expected = GoldenModel(model).predict(flatten_inputs(model, inputs))
    assert np.array_equal(GoldenModel(back).predict(flatten_inputs(back, inputs)), expected)
    reference = onnxruntime_outputs(path, inputs)
    assert np.max(np.abs(expected - reference)) <= TOLERANCE * np.max(np.abs(reference))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_a_written_model_keeps_the_float_type_of_the_model_read(dtype, tmp_path):
    """A float16 or float64 model that fpgagen writes back (prune, share) still takes its inputs in
    that type: onnxruntime refuses float32 inputs where a model declares another float type."""
    elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [node("MatMul", ["x", "W"], "m", "mm"), node("Add", ["m", "b"], "y", "bias")],
        "typed",
        [helper.make_tensor_value_info("x", elem_type, ["N", 4])],
        [helper.make_tensor_value_info("y", elem_type, ["N", 3])],
        [numpy_helper.from_array(W.astype(dtype), "W"), numpy_helper.from_array(BIAS.astype(dtype), "b")],
    )
    source = tmp_path / "typed.onnx"
    opsets = [helper.make_opsetid("", 17)]
    onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)), source)
    model = read_onnx(source)
    assert model.element_type == np.dtype(dtype).name
    written = tmp_path / "written.onnx"
    write_onnx(model, written)
    inputs = np.random.default_rng(3).standard_normal((5, 4)).astype(dtype)
    assert np.array_equal(onnxruntime_outputs(written, inputs), onnxruntime_outputs(source, inputs))
