"""The relabelling pass: every layer's outputs renumbered so that its PEs share the work evenly.

The engine gives output j to PE j mod P. After scheduling, each layer but the last gets the
relabelling of fpgagen.engine.relabel for its stage's P (a permutation of the P outputs at each
local address): its weight columns and biases move to the new indices, and so do the next layer's
rows, which those outputs feed. The model computes exactly what it did; only the order of the
activations between two layers changes. The last layer keeps its order, so the model's outputs are
where the user expects them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..engine.relabel import relabelling
from ..ir import Layer, Model


def relabel(model: Model) -> Model:
    """`model` (quantized and scheduled) with every layer but the last relabelled for its P."""
    if model.schedule is None or not model.quantized or model.relabelled:
        raise ValueError("relabel a quantized, scheduled model once")
    layers = list(model.layers)
    for index in range(len(layers) - 1):
        layer = layers[index]
        order = relabelling(layer.numerics.weights_q, layer.schedule.pes)
        layers[index] = _move_outputs(layer, order)
        layers[index + 1] = _move_inputs(layers[index + 1], order)
    return model.with_layers(layers)


def _columns(matrix: sp.csr_array, order: np.ndarray) -> sp.csr_array:
    moved = sp.csr_array((matrix.data.copy(), order[matrix.indices], matrix.indptr.copy()), shape=matrix.shape)
    moved.sort_indices()
    return moved


def _rows(matrix: sp.csr_array, order: np.ndarray) -> sp.csr_array:
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return sp.csr_array(matrix[inverse])


def _scatter(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    moved = np.empty_like(values)
    moved[order] = values
    return moved


def _move_outputs(layer: Layer, order: np.ndarray) -> Layer:
    numerics = layer.numerics
    return replace(
        layer,
        weights=_columns(layer.weights, order),
        bias=_scatter(layer.bias, order),
        numerics=replace(
            numerics, weights_q=_columns(numerics.weights_q, order), bias_q=_scatter(numerics.bias_q, order)
        ),
        output_order=order,
    )


def _move_inputs(layer: Layer, order: np.ndarray) -> Layer:
    numerics = layer.numerics
    return replace(
        layer,
        weights=_rows(layer.weights, order),
        numerics=replace(numerics, weights_q=_rows(numerics.weights_q, order)),
    )
