"""Share pass: each layer's nonzero weights clustered into a few values (EIE's weight sharing).

Every nonzero weight of a layer becomes the centroid of its cluster: a one-dimensional k-means
(scipy.cluster.vq.kmeans2, k-means++ seeds, a fixed seed so the result is deterministic), run on the
positive and on the negative weights apart, so no weight changes sign or becomes zero and the
sparsity stays what it was. The clusters are shared out between the signs in proportion to their
weights, at least one for a sign that has any. A layer with no more distinct weights than asked is
left as it is.

The compiler then finds few distinct values in each layer and gives it the codebook encoding
(fpgagen/engine/encoding.py): slots carry a short index instead of the weight.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.cluster.vq import kmeans2

from ..engine.encoding import CODEBOOK_MAX_BITS
from ..errors import FpgagenError
from ..ir import Layer, Model

MAX_VALUES = 1 << CODEBOOK_MAX_BITS  # the largest codebook the engine builds
_SEED = 0


def share_weights(model: Model, values: int) -> Model:
    """A copy of `model` whose every layer has at most `values` distinct nonzero weights."""
    if not 2 <= values <= MAX_VALUES:
        raise FpgagenError(f"--values {values}: must be from 2 to {MAX_VALUES} (a codebook of at most a 6-bit index)")
    return replace(model, layers=tuple(_share_layer(layer, values) for layer in model.layers))


def _share_layer(layer: Layer, values: int) -> Layer:
    weights = sp.csr_array(layer.weights, copy=True)
    data = weights.data
    if np.unique(data).size <= values:
        return layer
    negative = data < 0
    clusters = _split(int(negative.sum()), int((~negative).sum()), values)
    for chosen, count in ((negative, clusters[0]), (~negative, clusters[1])):
        if count:
            data[chosen] = _clustered(data[chosen], count)
    return replace(layer, weights=weights)


def _split(negatives: int, positives: int, values: int) -> tuple[int, int]:
    """Clusters for the negative and the positive weights: in proportion, one at least for each
    sign that has weights."""
    if not negatives or not positives:
        return (values, 0) if negatives else (0, values)
    negative_share = min(max(round(values * negatives / (negatives + positives)), 1), values - 1)
    return negative_share, values - negative_share


def _clustered(weights: np.ndarray, count: int) -> np.ndarray:
    """Each weight replaced by its cluster's centroid, `count` clusters at most."""
    if np.unique(weights).size <= count:
        return weights
    with warnings.catch_warnings():  # a cluster left empty only means fewer values
        warnings.simplefilter("ignore", UserWarning)
        centroids, labels = kmeans2(weights.astype(np.float64), count, minit="++", seed=_SEED)
    return centroids[labels].astype(weights.dtype)
