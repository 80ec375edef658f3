"""Write the IR back as a plain ONNX chain (Flatten, MatMul, Add, Relu/Clip) that any runtime runs.

Large sparse models (a Graph Challenge network is mostly zeros) are written with ONNX sparse
initializers, which onnxruntime densifies on load and fpgagen reads without densifying; small
ones with ordinary dense initializers, which every tool understands.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..atomic import atomic_file
from ..ir import Layer, Model

OPSET = 17
SPARSE_WHEN_DENSE_BYTES_EXCEED = 64 << 20


def model_proto(model: Model, sparse: bool | None = None) -> onnx.ModelProto:
    """The ONNX form of `model`; `sparse=None` picks sparse initializers for large sparse weights."""
    dtype = np.dtype(model.element_type)
    elem_type = helper.np_dtype_to_tensor_dtype(dtype)
    if sparse is None:
        dense_bytes = sum(layer.in_features * layer.out_features * dtype.itemsize for layer in model.layers)
        sparse = dense_bytes > SPARSE_WHEN_DENSE_BYTES_EXCEED
    nodes, dense, sparse_inits = [], [], []
    names = _TensorNames(model.input_name, model.output_name)
    current = model.input_name
    if len(model.input_shape) > 1:
        flat = names("flat")
        nodes.append(helper.make_node("Flatten", [current], [flat], name="flatten", axis=1))
        current = flat
    for layer in model.layers:
        current = _layer_nodes(layer, current, nodes, dense, sparse_inits, sparse, names, dtype)
    nodes[-1].output[0] = model.output_name
    batch = "batch"
    graph = helper.make_graph(
        nodes,
        model.name,
        [helper.make_tensor_value_info(model.input_name, elem_type, [batch, *model.input_shape])],
        [helper.make_tensor_value_info(model.output_name, elem_type, [batch, model.out_features])],
        initializer=dense,
        sparse_initializer=sparse_inits,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    return helper.make_model(
        graph,
        opset_imports=opsets,
        ir_version=helper.find_min_ir_version_for(opsets),
        producer_name="fpgagen",
    )


def write_onnx(model: Model, path: Path, sparse: bool | None = None) -> None:
    """Write `model` to `path` (atomically) and check it with onnx.checker."""
    proto = model_proto(model, sparse)
    onnx.checker.check_model(proto)
    with atomic_file(Path(path)) as work:
        onnx.save(proto, str(work))


class _TensorNames:
    """Names for the tensors the writer makes up, none equal to the model's own input or output."""

    def __init__(self, *reserved: str):
        self.taken = set(reserved)

    def __call__(self, wanted: str) -> str:
        name, suffix = wanted, 1
        while name in self.taken:
            name, suffix = f"{wanted}_{suffix}", suffix + 1
        self.taken.add(name)
        return name


def _layer_nodes(
    layer: Layer,
    current: str,
    nodes: list,
    dense: list,
    sparse_inits: list,
    sparse: bool,
    names: _TensorNames,
    dtype: np.dtype,
) -> str:
    prefix = layer.name
    weight_name = names(f"{prefix}_W")
    if sparse:
        coo = layer.weights.tocoo()
        values = numpy_helper.from_array(coo.data.astype(dtype), weight_name)
        positions = coo.row.astype(np.int64) * layer.out_features + coo.col.astype(np.int64)
        indices = numpy_helper.from_array(positions, names(f"{weight_name}_indices"))
        sparse_inits.append(helper.make_sparse_tensor(values, indices, list(layer.weights.shape)))
    else:
        dense.append(numpy_helper.from_array(layer.weights.toarray().astype(dtype), weight_name))
    current = _append(nodes, names, "MatMul", [current, weight_name], f"{prefix}_mm", prefix)
    if np.any(layer.bias != 0.0):
        bias_name = names(f"{prefix}_b")
        dense.append(numpy_helper.from_array(layer.bias.astype(dtype), bias_name))
        current = _append(nodes, names, "Add", [current, bias_name], f"{prefix}_z", f"{prefix}_bias")
    act = layer.activation
    if act.kind == "relu":
        current = _append(nodes, names, "Relu", [current], f"{prefix}_y", f"{prefix}_relu")
    elif act.kind == "clip":
        bounds = []
        for bound, wanted in ((act.lo, f"{prefix}_lo"), (act.hi, f"{prefix}_hi")):
            if math.isinf(bound):
                bounds.append("")
            else:
                name = names(wanted)
                dense.append(numpy_helper.from_array(np.array(bound, dtype=dtype), name))
                bounds.append(name)
        current = _append(nodes, names, "Clip", [current, *bounds], f"{prefix}_y", f"{prefix}_clip")
    return current


def _append(nodes: list, names: _TensorNames, op: str, inputs: list[str], output: str, node_name: str) -> str:
    """Add one node; return the (unique) name of its output."""
    output = names(output)
    nodes.append(helper.make_node(op, inputs, [output], name=node_name))
    return output
