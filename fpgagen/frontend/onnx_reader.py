"""ONNX front end: a chain of Gemm/MatMul layers with their biases and clamps, into the IR.

The graph is read into networkx to prove it is one path from the single input to the single
output (no branch, no loose node, no cycle); the path is then folded node by node into layers.
Anything outside the supported subset is refused with the node's name and op type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
import scipy.sparse as sp
from onnx import numpy_helper

from ..errors import FpgagenError
from ..ir import Activation, Layer, Model, sparse_weights
from ..naming import identifier, unique_identifiers

MIN_OPSET, MAX_OPSET = 9, 21
SUPPORTED_OPS = (
    "Gemm", "MatMul", "Add", "Relu", "Clip", "Min", "Max", "Flatten", "Reshape", "Identity", "Dropout",
)  # fmt: skip
_SUPPORTED = ", ".join(SUPPORTED_OPS)
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16}


def read_onnx(path: Path) -> Model:
    """Read `path` into the IR, or raise FpgagenError naming what cannot be built."""
    path = Path(path)
    proto = _load(path)
    opset = _default_opset(proto, path)
    graph = proto.graph
    constants = _Constants.collect(graph, path)
    input_info, output_name = _single_input_output(graph, constants, path)
    input_shape = _input_shape(input_info, path)
    _single_assignment(graph, path)
    chain = _chain_nodes(graph, input_info.name, output_name, constants, path)
    dtype = input_info.type.tensor_type.elem_type
    folder = _Folder(path, proto, opset, constants, input_shape, dtype)
    for node in chain:
        folder.fold(node)
    layers = folder.finish()
    model_name = identifier(graph.name or path.stem, "model")
    return Model(
        name=model_name,
        layers=tuple(layers),
        input_name=input_info.name,
        output_name=output_name,
        input_shape=input_shape,
        element_type=_type_name(dtype),
    )


def _load(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise FpgagenError(f"{path}: no such file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001  (protobuf raises several types for garbage input)
        raise FpgagenError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})") from None
    if not proto.graph.node and not proto.graph.input:
        raise FpgagenError(f"{path}: not a readable ONNX model (it holds no graph)")
    _load_external_data(proto, path)
    return proto


def _all_tensors(graph: onnx.GraphProto):
    """Every tensor a graph stores, subgraphs included: where external data can hide."""
    yield from graph.initializer
    for sparse_tensor in graph.sparse_initializer:
        yield from (sparse_tensor.values, sparse_tensor.indices)
    for node in graph.node:
        for attr in node.attribute:
            yield from ([attr.t] if attr.HasField("t") else [])
            yield from attr.tensors
            for sparse_tensor in [attr.sparse_tensor] * attr.HasField("sparse_tensor") + list(attr.sparse_tensors):
                yield from (sparse_tensor.values, sparse_tensor.indices)
            for subgraph in [attr.g] * attr.HasField("g") + list(attr.graphs):
                yield from _all_tensors(subgraph)


def _external_tensors(proto: onnx.ModelProto):
    for tensor in _all_tensors(proto.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            yield tensor


def _load_external_data(proto: onnx.ModelProto, path: Path) -> None:
    folder = path.parent.resolve()
    tensors = list(_external_tensors(proto))
    for tensor in tensors:
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location", "")
        target = (folder / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
            raise FpgagenError(
                f"{path}: tensor {tensor.name!r} keeps its data at {location!r}, outside the model's "
                f"folder {folder}; fpgagen reads external data only from that folder"
            )
        if not target.is_file():
            raise FpgagenError(f"{path}: tensor {tensor.name!r} refers to missing external data {location!r}")
    # Tensor by tensor rather than load_external_data_for_model, which skips sparse initializers:
    # those would later be read relative to the current directory, not the folder checked above.
    try:
        for tensor in tensors:
            onnx.external_data_helper.load_external_data_for_tensor(tensor, str(folder))
    except Exception as exc:  # noqa: BLE001  (missing, short or unreadable data files)
        raise FpgagenError(f"{path}: cannot read its external data ({exc})") from None


def _default_opset(proto: onnx.ModelProto, path: Path) -> int:
    versions = [op.version for op in proto.opset_import if op.domain in ("", "ai.onnx")]
    if not versions:
        raise FpgagenError(f"{path}: imports no version of the standard ONNX operator set")
    opset = versions[0]
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise FpgagenError(f"{path}: opset {opset} is not supported; fpgagen reads opsets {MIN_OPSET} to {MAX_OPSET}")
    return opset


@dataclass
class _Constants:
    """Every tensor whose value is known before inference: initializers and Constant outputs."""

    dense: dict[str, np.ndarray] = field(default_factory=dict)
    sparse: dict[str, sp.coo_array] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)  # ONNX element types (TensorProto.FLOAT, ...)

    @classmethod
    def collect(cls, graph: onnx.GraphProto, path: Path) -> _Constants:
        found = cls()
        for tensor in graph.initializer:
            found.dense[tensor.name] = _tensor_array(tensor, path)
            found.types[tensor.name] = tensor.data_type
        for tensor in graph.sparse_initializer:
            found.sparse[tensor.values.name] = _sparse_array(tensor, path)
            found.types[tensor.values.name] = tensor.values.data_type
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                found._add_constant_node(node, path)
        return found

    def _add_constant_node(self, node: onnx.NodeProto, path: Path) -> None:
        attr = node.attribute[0] if len(node.attribute) == 1 else None
        name = node.output[0]
        if attr is None:
            raise FpgagenError(f"{path}: Constant node {node.name!r} must have exactly one value attribute")
        if attr.name == "value":
            self.dense[name] = _tensor_array(attr.t, path)
            self.types[name] = attr.t.data_type
        elif attr.name == "sparse_value":
            self.sparse[name] = _sparse_array(attr.sparse_tensor, path)
            self.types[name] = attr.sparse_tensor.values.data_type
        elif attr.name in ("value_float", "value_int"):
            self.dense[name] = np.array(attr.f if attr.name == "value_float" else attr.i, dtype=np.float64)
            self.types[name] = onnx.TensorProto.FLOAT if attr.name == "value_float" else onnx.TensorProto.INT64
        elif attr.name in ("value_floats", "value_ints"):
            values = attr.floats if attr.name == "value_floats" else attr.ints
            self.dense[name] = np.array(list(values), dtype=np.float64)
            self.types[name] = onnx.TensorProto.FLOAT if attr.name == "value_floats" else onnx.TensorProto.INT64
        else:
            raise FpgagenError(f"{path}: Constant node {node.name!r} holds a {attr.name}, not a number")

    def __contains__(self, name: str) -> bool:
        return name in self.dense or name in self.sparse

    def array(self, name: str) -> np.ndarray:
        if name in self.sparse:
            return self.sparse[name].toarray()
        return self.dense[name]

    def matrix(self, name: str) -> sp.csr_array:
        """A 2-D constant as a sparse matrix, without ever densifying a sparse initializer."""
        if name in self.sparse:
            return sp.csr_array(self.sparse[name], dtype=np.float64)
        return sp.csr_array(np.atleast_2d(self.dense[name]).astype(np.float64))

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.sparse[name].shape) if name in self.sparse else self.dense[name].shape


def _tensor_array(tensor: onnx.TensorProto, path: Path) -> np.ndarray:
    try:
        array = numpy_helper.to_array(tensor)
    except Exception as exc:  # noqa: BLE001  (malformed tensors fail in many ways)
        raise FpgagenError(f"{path}: tensor {tensor.name!r} cannot be decoded ({exc})") from None
    if array.dtype.kind not in "fiub":  # strings, complex numbers: no weight or bound of a layer
        held = "string" if array.dtype.kind in "OSU" else str(array.dtype)
        raise FpgagenError(f"{path}: tensor {tensor.name!r} holds {held} values; fpgagen reads real numbers")
    return array


def _sparse_array(tensor: onnx.SparseTensorProto, path: Path) -> sp.coo_array:
    shape = tuple(tensor.dims)
    values = _tensor_array(tensor.values, path).astype(np.float64)
    indices = _tensor_array(tensor.indices, path).astype(np.int64)
    name = tensor.values.name
    if len(shape) != 2:
        raise FpgagenError(f"{path}: sparse tensor {name!r} has shape {shape}; only 2-D sparse weights are read")
    if indices.ndim == 1:  # linearized row-major positions
        rows, cols = np.divmod(indices, shape[1])
    elif indices.ndim == 2 and indices.shape[1] == 2:
        rows, cols = indices[:, 0], indices[:, 1]
    else:
        raise FpgagenError(f"{path}: sparse tensor {name!r} has indices of shape {indices.shape}")
    if indices.size and (rows.min() < 0 or rows.max() >= shape[0] or cols.min() < 0 or cols.max() >= shape[1]):
        raise FpgagenError(f"{path}: sparse tensor {name!r} has indices outside its shape {shape}")
    return sp.coo_array((values, (rows, cols)), shape=shape)


def _single_input_output(graph: onnx.GraphProto, constants: _Constants, path: Path):
    inputs = [value for value in graph.input if value.name not in constants]
    if len(inputs) != 1:
        names = ", ".join(repr(value.name) for value in inputs) or "none"
        raise FpgagenError(
            f"{path}: the graph has {len(inputs)} inputs ({names}); fpgagen compiles models with one "
            "(weights must be initializers or Constant nodes, not graph inputs)"
        )
    if len(graph.output) != 1:
        names = ", ".join(repr(value.name) for value in graph.output) or "none"
        raise FpgagenError(
            f"{path}: the graph has {len(graph.output)} outputs ({names}); fpgagen compiles models with one"
        )
    return inputs[0], graph.output[0].name


def _input_shape(info: onnx.ValueInfoProto, path: Path) -> tuple[int, ...]:
    tensor_type = info.type.tensor_type
    if not info.type.HasField("tensor_type") or tensor_type.elem_type not in _FLOAT_TYPES:
        raise FpgagenError(f"{path}: input {info.name!r} must be a float tensor")
    if not tensor_type.HasField("shape"):
        raise FpgagenError(f"{path}: input {info.name!r} has no declared shape; fpgagen needs its feature sizes")
    dims = tensor_type.shape.dim
    if len(dims) < 2:
        raise FpgagenError(f"{path}: input {info.name!r} has rank {len(dims)}; expected (batch, features...)")
    shape = []
    for axis, dim in enumerate(dims[1:], start=1):
        if dim.HasField("dim_value") and dim.dim_value <= 0:
            raise FpgagenError(
                f"{path}: input {info.name!r} has size {dim.dim_value} on axis {axis}; expected at least 1"
            )
        if not dim.HasField("dim_value"):
            label = dim.dim_param or "unknown"
            raise FpgagenError(
                f"{path}: input {info.name!r} has a dynamic size ({label}) on axis {axis}; "
                "only the batch axis may be dynamic"
            )
        shape.append(dim.dim_value)
    return tuple(shape)


def _type_name(elem_type: int) -> str:
    return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name if elem_type else "of no type"


def _single_assignment(graph: onnx.GraphProto, path: Path) -> None:
    """Every tensor is defined once (ONNX's single static assignment): by a graph input, an
    initializer (which may also be listed as a graph input) or one node output. A Constant node
    that redefines an initializer is read one way by fpgagen and the other by onnxruntime."""
    initializers = [t.name for t in graph.initializer] + [t.values.name for t in graph.sparse_initializer]
    initialized = set(initializers)
    inputs = [value.name for value in graph.input if value.name not in initialized]
    outputs = [name for node in graph.node for name in node.output if name]
    seen: set[str] = set()
    for name in [*inputs, *initializers, *outputs]:
        if name in seen:
            raise FpgagenError(
                f"{path}: tensor {name!r} is defined more than once (graph input, initializer or node "
                "output); an ONNX graph defines each tensor once"
            )
        seen.add(name)


def _describe(node: onnx.NodeProto) -> str:
    return f"node {node.name or node.output[0]!r} ({node.op_type})"


def _chain_nodes(graph, input_name: str, output_name: str, constants: _Constants, path: Path) -> list:
    """The non-constant nodes in order, after proving they form one path from input to output."""
    nodes = [node for node in graph.node if not (node.op_type == "Constant" and node.output[0] in constants)]
    producer = {node.output[0]: index for index, node in enumerate(nodes) if node.output and node.output[0]}
    # Dropout's mask is a second output; the layers fold only the data that flows through outputs[0].
    side_output = {out: index for index, node in enumerate(nodes) for out in node.output[1:] if out}
    flow = nx.DiGraph()
    flow.add_node("input")
    flow.add_node("output")
    flow.add_nodes_from(range(len(nodes)))
    for index, node in enumerate(nodes):
        for tensor in node.input:
            if not tensor or tensor in constants:
                continue
            if tensor == input_name:
                flow.add_edge("input", index, tensor=tensor)
            elif tensor in producer:
                flow.add_edge(producer[tensor], index, tensor=tensor)
            elif tensor in side_output:
                raise _side_output_error(path, tensor, nodes[side_output[tensor]], f"{_describe(node)} reads")
            else:
                raise FpgagenError(
                    f"{path}: {_describe(node)} reads {tensor!r}, which no node produces "
                    "and which is not a constant (a weight given as a graph input is not supported)"
                )
    if output_name == input_name:
        raise FpgagenError(f"{path}: the graph output is its input; there is nothing to compile")
    if output_name in side_output:
        raise _side_output_error(path, output_name, nodes[side_output[output_name]], "the graph output is")
    if output_name not in producer:
        raise FpgagenError(f"{path}: the graph output {output_name!r} is not computed by any node")
    flow.add_edge(producer[output_name], "output", tensor=output_name)

    if not nx.is_directed_acyclic_graph(flow):
        raise FpgagenError(f"{path}: the graph has a cycle")
    for index in range(len(nodes)):
        if flow.in_degree(index) == 0:
            raise FpgagenError(f"{path}: {_describe(nodes[index])} does not depend on the model input")
        if flow.out_degree(index) == 0:
            raise FpgagenError(f"{path}: {_describe(nodes[index])} does not lead to the model output")
    for vertex in flow.nodes:
        successors = list(flow.successors(vertex))
        if len(successors) > 1:
            names = ", ".join(_describe(nodes[s]) if s != "output" else "the graph output" for s in successors)
            source = "the model input" if vertex == "input" else _describe(nodes[vertex])
            raise FpgagenError(
                f"{path}: {source} feeds {len(successors)} consumers ({names}); "
                "fpgagen compiles chains without branches"
            )
    for index, node in enumerate(nodes):
        live = [tensor for tensor in node.input if tensor and tensor not in constants]
        if len(live) > 1:
            raise FpgagenError(
                f"{path}: {_describe(node)} combines two computed tensors ({', '.join(map(repr, live))}); "
                "fpgagen compiles chains without branches"
            )
    order = nx.shortest_path(flow, "input", "output")[1:-1]
    return [nodes[index] for index in order]


def _side_output_error(path: Path, tensor: str, source: onnx.NodeProto, reader: str) -> FpgagenError:
    return FpgagenError(
        f"{path}: {reader} {tensor!r}, which is not the first output of {_describe(source)}; "
        "fpgagen follows only a node's first output"
    )


@dataclass
class _PendingLayer:
    origin: list[str]
    weights: sp.csr_array
    bias: np.ndarray
    activation: Activation = field(default_factory=Activation)
    has_activation: bool = False


class _Folder:
    """Walks the chain and folds each node into the layer being built."""

    def __init__(
        self,
        path: Path,
        proto: onnx.ModelProto,
        opset: int,
        constants: _Constants,
        input_shape: tuple[int, ...],
        dtype: int,
    ):
        self.path = path
        self.opset = opset
        self.checker = onnx.checker.C.CheckerContext()
        self.checker.ir_version = proto.ir_version
        self.checker.opset_imports = {op.domain: op.version for op in proto.opset_import}
        self.dtype = dtype  # the model input's element type, which ONNX's type constraint T shares
        self.constants = constants
        self.shape = input_shape  # one sample's shape at the current point of the chain
        self.layers: list[_PendingLayer] = []
        self.names: list[str] = []

    def fail(self, node: onnx.NodeProto, reason: str) -> FpgagenError:
        return FpgagenError(f"{self.path}: {_describe(node)}: {reason}")

    def fold(self, node: onnx.NodeProto) -> None:
        if node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS:
            domain = f" from domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
            raise FpgagenError(
                f"{self.path}: {_describe(node)}{domain} is not supported; fpgagen supports {_SUPPORTED}"
            )
        getattr(self, f"_fold_{node.op_type.lower()}")(node)
        self._check_schema(node)  # after the fold, whose own refusals say more

    def _check_schema(self, node: onnx.NodeProto) -> None:
        """The node against its operator's schema at the model's opset: its attributes and its
        count of inputs (onnx.checker, node by node: the whole-model checker also demands shapes
        on the graph's outputs, which onnxruntime does not), and the element type of every
        constant it takes where the schema shares the data input's type T."""
        try:
            onnx.checker.check_node(node, self.checker)
        except onnx.checker.ValidationError as exc:
            text = " ".join("".join(c if c.isprintable() else " " for c in str(exc)).split())
            raise self.fail(node, f"not valid ONNX at opset {self.opset}: {text[:400]}") from None
        formals = onnx.defs.get_schema(node.op_type, self.opset).inputs
        for index, name in enumerate(node.input):
            formal = formals[min(index, len(formals) - 1)]
            if name in self.constants and formal.type_str == formals[0].type_str:
                held = self.constants.types[name]
                if held != self.dtype:
                    raise self.fail(
                        node,
                        f"its input {name!r} is {_type_name(held)}, the model's input {_type_name(self.dtype)}; "
                        "ONNX requires one type for both",
                    )

    def finish(self) -> list[Layer]:
        if not self.layers:
            raise FpgagenError(f"{self.path}: the model has no MatMul or Gemm layer; there is nothing to compile")
        names = unique_identifiers(self.names, "layer")
        return [
            Layer(
                name=name,
                origin=", ".join(pending.origin),
                weights=sparse_weights(pending.weights),
                bias=pending.bias,
                activation=pending.activation,
            )
            for name, pending in zip(names, self.layers)
        ]

    # -- helpers -----------------------------------------------------------------------------

    def _attrs(self, node: onnx.NodeProto) -> dict:
        return {attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute}

    def _const_input(self, node: onnx.NodeProto, index: int) -> str | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        name = node.input[index]
        if name not in self.constants:
            raise self.fail(node, f"input {index} ({name!r}) must be a constant")
        return name

    def _required_const(self, node: onnx.NodeProto, index: int, what: str) -> str:
        name = self._const_input(node, index)
        if name is None:
            raise self.fail(node, f"input {index} ({what}) is missing")
        return name

    def _live_index(self, node: onnx.NodeProto) -> int:
        for index, name in enumerate(node.input):
            if name and name not in self.constants:
                return index
        raise self.fail(node, "reads no computed tensor")

    @property
    def features(self) -> int:
        return math.prod(self.shape)

    def _require_flat(self, node: onnx.NodeProto) -> None:
        if len(self.shape) != 1:
            raise self.fail(
                node,
                f"receives a tensor of shape (batch, {', '.join(map(str, self.shape))}); "
                "flatten it to (batch, features) with Flatten or Reshape first",
            )

    def _current(self, node: onnx.NodeProto, what: str) -> _PendingLayer:
        if not self.layers:
            raise self.fail(node, f"{what} before any MatMul or Gemm; fpgagen needs a linear layer first")
        return self.layers[-1]

    def _start_layer(self, node: onnx.NodeProto, weights: sp.csr_array, bias: np.ndarray) -> None:
        self._require_flat(node)
        if weights.shape[0] != self.features:
            raise self.fail(node, f"weight of shape {weights.shape} does not fit {self.features} input features")
        if not np.all(np.isfinite(weights.data)) or not np.all(np.isfinite(bias)):
            raise self.fail(node, "its weights or bias contain NaN or infinite values")
        self.layers.append(_PendingLayer([node.name or node.output[0]], weights, bias))
        self.names.append(node.name or node.output[0])
        self.shape = (weights.shape[1],)

    def _vector(self, node: onnx.NodeProto, name: str, size: int, what: str) -> np.ndarray:
        """A constant that broadcasts along the features: (), (1,), (1, 1), (size,), (1, size) shapes."""
        value = np.asarray(self.constants.array(name), dtype=np.float64)
        if value.size == 1 and value.ndim <= 2:
            return np.full(size, float(value.reshape(-1)[0]))
        if value.shape in ((size,), (1, size)):
            return value.reshape(size).copy()
        raise self.fail(node, f"{what} {name!r} of shape {value.shape} does not broadcast to {size} features")

    def _scalar(self, node: onnx.NodeProto, name: str, what: str) -> float:
        value = self._vector(node, name, self.features, what)
        if np.any(np.isnan(value)):
            raise self.fail(node, f"{what} {name!r} is NaN")
        if np.any(value != value[0]):
            raise self.fail(node, f"{what} {name!r} differs between features; only one bound for all is supported")
        return float(value[0])

    # -- linear ops ----------------------------------------------------------------------------

    def _check_weight_shape(self, node: onnx.NodeProto, weight: str) -> None:
        shape = self.constants.shape(weight)
        if len(shape) != 2:
            raise self.fail(node, f"weight {weight!r} has shape {shape}; expected 2-D")
        if 0 in shape:
            raise self.fail(node, f"weight {weight!r} has shape {shape}; a layer needs at least one input and output")

    def _fold_matmul(self, node: onnx.NodeProto) -> None:
        if self._live_index(node) != 0:
            raise self.fail(node, "the computed tensor must be the first input (x @ W)")
        weight = self._required_const(node, 1, "the weight")
        self._check_weight_shape(node, weight)
        matrix = self.constants.matrix(weight)
        self._start_layer(node, matrix, np.zeros(matrix.shape[1]))

    def _fold_gemm(self, node: onnx.NodeProto) -> None:
        attrs = self._attrs(node)
        if self._live_index(node) != 0:
            raise self.fail(node, "the computed tensor must be input A")
        if attrs.get("transA", 0) != 0:
            raise self.fail(node, "transA=1 is not supported")
        trans_b = attrs.get("transB", 0)
        alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
        weight = self._required_const(node, 1, "the weight")
        self._check_weight_shape(node, weight)
        matrix = self.constants.matrix(weight)
        matrix = sp.csr_array(matrix.T if trans_b else matrix) * alpha
        bias_name = self._const_input(node, 2)
        bias = np.zeros(matrix.shape[1])
        if bias_name is not None:
            bias = beta * self._vector(node, bias_name, matrix.shape[1], "bias")
        elif self.opset < 11:
            raise self.fail(node, f"input C is required in opset {self.opset}")
        self._start_layer(node, matrix, bias)

    def _fold_add(self, node: onnx.NodeProto) -> None:
        layer = self._current(node, "adds a constant")
        if layer.has_activation:
            raise self.fail(
                node,
                "adds a constant after an activation; fpgagen folds Add only as the bias of "
                "the MatMul or Gemm right before it",
            )
        constant = self._required_const(node, 1 - self._live_index(node), "the addend")
        addend = self._vector(node, constant, self.features, "addend")
        if not np.all(np.isfinite(addend)):
            raise self.fail(node, f"addend {constant!r} contains NaN or infinite values")
        layer.bias = layer.bias + addend
        layer.origin.append(node.name or node.output[0])

    # -- activations -----------------------------------------------------------------------------

    def _clamp(self, node: onnx.NodeProto, activation: Activation) -> None:
        layer = self._current(node, "applies an activation")
        layer.activation = layer.activation.then(activation)
        layer.has_activation = True
        layer.origin.append(node.name or node.output[0])

    def _fold_relu(self, node: onnx.NodeProto) -> None:
        self._clamp(node, Activation(0.0, math.inf))

    def _fold_clip(self, node: onnx.NodeProto) -> None:
        if self.opset < 11:
            attrs = self._attrs(node)
            lo, hi = float(attrs.get("min", -math.inf)), float(attrs.get("max", math.inf))
        else:
            lo_name, hi_name = self._const_input(node, 1), self._const_input(node, 2)
            lo = -math.inf if lo_name is None else self._scalar(node, lo_name, "bound")
            hi = math.inf if hi_name is None else self._scalar(node, hi_name, "bound")
        # float32's lowest and highest values are ONNX's defaults for "no bound".
        lo = -math.inf if lo <= -3.4e38 else lo
        hi = math.inf if hi >= 3.4e38 else hi
        if math.isnan(lo) or math.isnan(hi):
            raise self.fail(node, f"a bound is NaN (min {lo:g}, max {hi:g})")
        if lo > hi:
            raise self.fail(node, f"min {lo:g} is above max {hi:g}")
        self._clamp(node, Activation(lo, hi))

    def _min_max_bound(self, node: onnx.NodeProto) -> list[float]:
        live = self._live_index(node)
        names = [name for index, name in enumerate(node.input) if index != live and name]
        for name in names:
            if name not in self.constants:
                raise self.fail(node, f"input {name!r} must be a constant")
        return [self._scalar(node, name, "bound") for name in names]

    def _fold_min(self, node: onnx.NodeProto) -> None:
        self._clamp(node, Activation(-math.inf, min(self._min_max_bound(node), default=math.inf)))

    def _fold_max(self, node: onnx.NodeProto) -> None:
        self._clamp(node, Activation(max(self._min_max_bound(node), default=-math.inf), math.inf))

    # -- shape and pass-through ops ------------------------------------------------------------------

    def _fold_flatten(self, node: onnx.NodeProto) -> None:
        axis = self._attrs(node).get("axis", 1)
        rank = len(self.shape) + 1
        if axis < 0:
            axis += rank
        if axis != 1:
            raise self.fail(node, f"axis {axis} would merge the batch axis; only axis=1 is supported")
        self.shape = (self.features,)

    def _fold_reshape(self, node: onnx.NodeProto) -> None:
        if self._live_index(node) != 0:
            raise self.fail(node, "the computed tensor must be the data input")
        shape = self._required_const(node, 1, "the target shape")
        target = [int(v) for v in np.asarray(self.constants.array(shape)).reshape(-1)]
        allow_zero = self._attrs(node).get("allowzero", 0)
        if len(target) != 2 or allow_zero:
            raise self.fail(node, f"reshape to {target} is not a reshape to (batch, features)")
        batch, features = target
        first_dim = self.shape[0]
        ok_batch = batch in (0, -1)
        ok_features = (
            features == self.features
            or (features == -1 and batch == 0)
            or (features == 0 and first_dim == self.features)
        )
        if not (ok_batch and ok_features):
            raise self.fail(
                node, f"reshape to {target} mixes the batch and feature axes; use (-1, {self.features}) or (0, -1)"
            )
        self.shape = (self.features,)

    def _fold_identity(self, node: onnx.NodeProto) -> None:
        pass

    def _fold_dropout(self, node: onnx.NodeProto) -> None:
        mode = self._const_input(node, 2) if self.opset >= 12 else None
        if mode is None:
            return
        value = np.asarray(self.constants.array(mode))
        if value.size != 1 or value.item():
            raise self.fail(node, f"training_mode is {value.tolist()}; only inference Dropout (false) is supported")
