"""Random ONNX chains in the subset fpgagen reads, and a small builder for hand-made test models.

`random_chain(seed)` draws one valid model (checked by onnx.checker) with its inputs: an opset
from 9 to 21, each node written in that opset's own signature (Clip bounds as attributes before
opset 11 and as inputs after; Dropout's ratio attribute before 12 and its ratio/training_mode
inputs after; Gemm's C required before 11; negative Flatten axes from 11; Constant's
value_float(s) from 12), layers of random non-power-of-two sizes with some weights zero, and every
constant stored in one of the ways ONNX allows (initializer, Constant node, sparse initializer).
The opset cycles with the seed, so any 13 consecutive seeds cover every opset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MIN_OPSET, MAX_OPSET = 9, 21
_NEEDS_SPARSE_IR = 6  # sparse initializers arrived with IR version 6


@dataclass
class RandomChain:
    model: onnx.ModelProto
    inputs: np.ndarray  # float32, (batch, *the model's sample shape)


def build_model(
    nodes: list[onnx.NodeProto],
    input_shape: list[int | str | None] | None,
    output: str = "y",
    initializers: tuple[tuple[str, np.ndarray], ...] = (),
    opset: int = 17,
    sparse_initializers: tuple[onnx.SparseTensorProto, ...] = (),
    input_name: str = "x",
) -> onnx.ModelProto:
    """A float32 model with one input `input_name` of `input_shape` (batch first) and one output."""
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.asarray(value), name) for name, value in initializers],
        sparse_initializer=list(sparse_initializers),
    )
    opsets = [helper.make_opsetid("", opset)]
    ir_version = helper.find_min_ir_version_for(opsets)
    if sparse_initializers:
        ir_version = max(ir_version, _NEEDS_SPARSE_IR)
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


def sparse_tensor(name: str, matrix: np.ndarray) -> onnx.SparseTensorProto:
    """`matrix`'s nonzeros as an ONNX sparse tensor with (nnz, 2) coordinate indices."""
    rows, cols = np.nonzero(matrix)
    values = numpy_helper.from_array(matrix[rows, cols].astype(np.float32), name)
    indices = numpy_helper.from_array(np.stack([rows, cols], axis=1).astype(np.int64), f"{name}_indices")
    return helper.make_sparse_tensor(values, indices, list(matrix.shape))


def onnxruntime_outputs(path: Path, inputs: np.ndarray) -> np.ndarray:
    """The model's outputs in float32 by onnxruntime: the reference fpgagen is checked against."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: inputs})[0]


def random_inputs(rng: np.random.Generator, count: int, sample_shape: tuple[int, ...]) -> np.ndarray:
    """Inputs as `random_chain` draws them: standard normal, about 30% zeros, float32."""
    inputs = rng.standard_normal((count, *sample_shape)).astype(np.float32)
    inputs[rng.random(inputs.shape) < 0.3] = 0.0  # zero activations are the case fpgagen skips
    return inputs


def random_chain(seed: int) -> RandomChain:
    """One random model from the supported subset, with a random batch of inputs for it."""
    rng = np.random.default_rng(seed)
    opset = MIN_OPSET + seed % (MAX_OPSET - MIN_OPSET + 1)
    builder = _ChainBuilder(rng, opset)
    sample_shape = builder.start()
    layers = int(rng.integers(1, 5))
    for index in range(layers):
        builder.maybe_pass_through()
        # A narrow last layer after a ReLU is often all zeros, which would prove little.
        builder.layer(outputs=int(rng.integers(1 if index < layers - 1 else 4, 40)))
        builder.activations()
    builder.maybe_pass_through()
    model = builder.finish(sample_shape)
    return RandomChain(model, random_inputs(rng, int(rng.integers(2, 9)), sample_shape))


@dataclass
class _ChainBuilder:
    rng: np.random.Generator
    opset: int
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    sparse_initializers: list[onnx.SparseTensorProto] = field(default_factory=list)
    current: str = "x"
    features: int = 0
    count: int = 0

    # -- naming and storage ------------------------------------------------------------------

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, options: list):
        return options[int(self.rng.integers(len(options)))]

    def constant(self, value: np.ndarray, stem: str) -> str:
        """Store `value` in one of the forms this opset allows for its shape; return its name."""
        name = self.fresh(stem)
        forms = ["initializer", "constant"]
        if value.dtype == np.float32 and self.opset >= 12:
            forms += {0: ["value_float"], 1: ["value_floats"]}.get(value.ndim, [])
        if value.ndim == 2:
            forms.append("sparse_initializer")
        form = self.pick(forms)
        if form == "initializer":
            self.initializers.append(numpy_helper.from_array(value, name))
        elif form == "sparse_initializer":
            self.sparse_initializers.append(sparse_tensor(name, value))
        elif form == "constant":
            self.constant_node(name, value=numpy_helper.from_array(value, f"{name}_value"))
        elif form == "value_float":
            self.constant_node(name, value_float=float(value))
        else:
            self.constant_node(name, value_floats=[float(v) for v in value])
        return name

    def constant_node(self, name: str, **value) -> None:
        self.nodes.append(helper.make_node("Constant", [], [name], name=f"const_{name}", **value))

    def emit(self, op: str, inputs: list[str], outputs: int = 1, **attrs) -> None:
        """Append a node reading `inputs` whose first output becomes the chain's current tensor."""
        out = self.fresh("t")
        extra = [self.fresh("unused") for _ in range(outputs - 1)]
        name = "" if self.chance(0.15) else self.fresh(op.lower())  # nameless nodes are common
        self.nodes.append(helper.make_node(op, inputs, [out, *extra], name=name, **attrs))
        self.current = out

    # -- the chain, stage by stage ---------------------------------------------------------------

    def start(self) -> tuple[int, ...]:
        """Choose the input's sample shape; a rank-4 input gets a Flatten or Reshape first."""
        if self.chance(0.5):
            shape = tuple(int(v) for v in self.rng.integers(1, 6, size=3))
            self.features = int(np.prod(shape))
            self.maybe_pass_through()
            self.flatten_or_reshape(len(shape) + 1)
        else:
            shape = (int(self.rng.integers(1, 40)),)
            self.features = shape[0]
            if self.chance(0.3):
                self.flatten_or_reshape(2)
        return shape

    def flatten_or_reshape(self, rank: int) -> None:
        if self.chance(0.5):
            axis = 1 if self.opset < 11 or self.chance(0.5) else 1 - rank
            self.emit("Flatten", [self.current], axis=axis)
            return
        target = self.pick([[-1, self.features], [0, self.features], [0, -1]])
        shape = self.constant(np.array(target, dtype=np.int64), "shape")
        attrs = {"allowzero": 0} if self.opset >= 14 and self.chance(0.5) else {}
        self.emit("Reshape", [self.current, shape], **attrs)

    def maybe_pass_through(self) -> None:
        while self.chance(0.3):
            if self.chance(0.5):
                self.emit("Identity", [self.current])
            else:
                self.dropout()

    def dropout(self) -> None:
        mask = 2 if self.chance(0.3) else 1
        if self.opset < 12:
            attrs = {"ratio": float(self.rng.uniform(0.1, 0.9))} if self.chance(0.5) else {}
            self.emit("Dropout", [self.current], outputs=mask, **attrs)
            return
        inputs = [self.current]
        if self.chance(0.6):
            inputs.append(self.constant(np.array(self.rng.uniform(0.1, 0.9), dtype=np.float32), "ratio"))
        if self.chance(0.5):
            inputs += [""] * (2 - len(inputs)) + [self.constant(np.array(False), "training")]
        self.emit("Dropout", inputs, outputs=mask)

    def weights(self, rows: int, cols: int) -> np.ndarray:
        matrix = self.rng.standard_normal((rows, cols)) / np.sqrt(rows)
        matrix[self.rng.random((rows, cols)) > self.pick([1.0, 0.6, 0.25, 0.08])] = 0.0
        if rows > 1 and self.chance(0.3):
            matrix[int(self.rng.integers(rows))] = 0.0  # an input no output depends on
        empty = np.flatnonzero(~matrix.any(axis=0))  # keep every output connected to something
        matrix[self.rng.integers(rows, size=empty.size), empty] = self.rng.choice([-1.0, 1.0], size=empty.size)
        return matrix.astype(np.float32)

    def layer(self, outputs: int) -> None:
        matrix = self.weights(self.features, outputs)
        bias = self.rng.uniform(-0.5, 0.5, size=outputs).astype(np.float32)
        if self.chance(0.5):
            self.gemm(matrix, bias)
        else:
            self.emit("MatMul", [self.current, self.constant(matrix, "W")])
            if self.chance(0.75):
                self.add(bias)
        self.features = outputs

    def gemm(self, matrix: np.ndarray, bias: np.ndarray) -> None:
        attrs = {}
        if self.chance(0.5):
            attrs["transB"] = 1
            matrix = np.ascontiguousarray(matrix.T)
        elif self.chance(0.5):
            attrs["transB"] = 0
        if self.chance(0.4):
            attrs["alpha"] = float(self.rng.uniform(0.25, 2.0))
        if self.chance(0.4):
            attrs["beta"] = float(self.rng.uniform(-2.0, 2.0))
        inputs = [self.current, self.constant(matrix, "W")]
        shapes = ["()", "(1,)", "(N,)", "(1,N)"] + (["none"] if self.opset >= 11 else [])
        shape = self.pick(shapes)
        if shape != "none":
            value = {"()": bias[:1].reshape(()), "(1,)": bias[:1], "(N,)": bias, "(1,N)": bias[np.newaxis]}[shape]
            inputs.append(self.constant(value.copy(), "C"))
        self.emit("Gemm", inputs, **attrs)

    def add(self, bias: np.ndarray) -> None:
        value = self.pick([bias, bias[np.newaxis], bias[:1].reshape(())])
        constant = self.constant(value.copy(), "b")
        self.emit("Add", [self.current, constant] if self.chance(0.5) else [constant, self.current])

    def activations(self) -> None:
        for _ in range(self.pick([0, 1, 1, 2])):
            # Clip twice as often as the others: it has the most forms (two signatures, optional bounds).
            self.pick([self.relu, self.clip, self.clip, self.min_max])()
            self.maybe_pass_through()

    def relu(self) -> None:
        self.emit("Relu", [self.current])

    def clip(self) -> None:
        lo = float(np.float32(self.rng.uniform(-1.0, 0.2)))
        hi = float(np.float32(self.rng.uniform(0.3, 2.0)))
        keep = self.pick([(True, True), (True, False), (False, True), (False, False)])
        if self.opset < 11:
            bounds = {name: v for name, v, kept in (("min", lo, keep[0]), ("max", hi, keep[1])) if kept}
            self.emit("Clip", [self.current], **bounds)
            return
        inputs = [self.current]
        inputs.append(self.constant(np.array(lo, dtype=np.float32), "lo") if keep[0] else "")
        inputs.append(self.constant(np.array(hi, dtype=np.float32), "hi") if keep[1] else "")
        while inputs[-1] == "":
            inputs.pop()
        self.emit("Clip", inputs)

    def min_max(self) -> None:
        op = self.pick(["Min", "Max"])
        bound = np.float32(self.rng.uniform(0.0, 1.0) if op == "Min" else self.rng.uniform(-1.0, 0.2))
        value = self.pick([np.array(bound), np.array([bound]), np.full(self.features, bound)])
        constant = self.constant(value.astype(np.float32), "bound")
        self.emit(op, [self.current, constant] if self.chance(0.5) else [constant, self.current])

    def finish(self, sample_shape: tuple[int, ...]) -> onnx.ModelProto:
        self.nodes[-1].output[0] = "y"
        opsets = [helper.make_opsetid("", self.opset)]
        ir_version = helper.find_min_ir_version_for(opsets)
        if self.sparse_initializers:
            ir_version = max(ir_version, _NEEDS_SPARSE_IR)
        graph = helper.make_graph(
            self.nodes,
            f"random_opset{self.opset}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", *sample_shape])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", self.features])],
            initializer=self.initializers,
            sparse_initializer=self.sparse_initializers,
        )
        model = helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)
        # Shape inference types a sparse initializer as sparse_tensor, which no operator takes;
        # runtimes densify it on load, so only a model without one gets the full check.
        onnx.checker.check_model(model, full_check=not self.sparse_initializers)
        return model
