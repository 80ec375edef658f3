"""Activity: how often each input of each layer is nonzero, and, when measured, on which vectors.

The cost model counts cycles per vector from it (docs/cost-model.md). An activation costs its
row's work only when it is nonzero, so the probabilities give the expected work; but a stage of
desynchronized PEs and several issue units takes as long as its busiest PE or unit on each vector,
and the expectation of a maximum is not the maximum of expectations. So a measured activity keeps
a sample of the calibration vectors' activations (a bounded number of them, at most
`SAMPLE_BUDGET` values in all) and the cost model takes the maximum vector by vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..golden import GoldenModel, flatten_inputs
from ..ir import Model

MAX_SAMPLES = 256  # vectors kept: the per-vector figures settle well before (bench/bench_rtl.py)
SAMPLE_BUDGET = 1 << 26  # activations kept over all layers (64 MB of booleans)


@dataclass(frozen=True, eq=False)
class Activity:
    """Per layer, the probability that each of its inputs is nonzero; with `samples`, which inputs
    are nonzero on each of a set of measured vectors ((vectors, in_features) booleans)."""

    probabilities: tuple[np.ndarray, ...]
    source: str  # said in every output: what the cycle counts assume
    samples: tuple[np.ndarray, ...] | None = None

    @classmethod
    def uniform(cls, model: Model, density: float = 1.0) -> Activity:
        if not 0.0 <= density <= 1.0:
            raise FpgagenError(f"activation density {density} is outside [0, 1]")
        note = " (the worst case: every input nonzero)" if density == 1.0 else ""
        return cls(
            tuple(np.full(layer.in_features, float(density)) for layer in model.layers),
            f"uniform activation density {density:g}{note}",
        )

    @classmethod
    def from_calibration(cls, model: Model, x: np.ndarray) -> Activity:
        """How often each input of each layer is nonzero in fixed point on the inputs `x`."""
        if not model.quantized:
            raise FpgagenError("measure activity on a quantized model")
        x = flatten_inputs(model, x, "calibration inputs")
        return cls.from_quantized(model, GoldenModel(model).quantize_inputs(x), "calibration inputs")

    @classmethod
    def from_quantized(cls, model: Model, x_q: np.ndarray, what: str = "inputs") -> Activity:
        """The activity on the fixed-point inputs `x_q` ((vectors, in_features) integers), as the
        design computes them (a simulation's vectors)."""
        if x_q.shape[0] == 0:
            raise FpgagenError(f"{what}: the array holds no samples")
        inputs = [sp.csr_array(x_q), *GoldenModel(model).run_q(x_q, trace=True)[:-1]]
        batch = x_q.shape[0]
        kept = min(batch, MAX_SAMPLES, max(1, SAMPLE_BUDGET // sum(layer.in_features for layer in model.layers)))
        return cls(
            tuple(
                np.bincount(act.indices, minlength=layer.in_features) / batch
                for act, layer in zip(inputs, model.layers)
            ),
            f"activation density measured on {batch} {what}",
            tuple(act[:kept].toarray() != 0 for act in inputs),
        )

    def inputs(self, index: int) -> Inputs:
        """The activity of layer `index`'s inputs, as the cost model takes it."""
        if self.samples is not None:
            return Inputs(self.samples[index].astype(np.float64), measured=True)
        p = self.probabilities[index]
        # probabilities of 0 and 1 only (every input nonzero, the default) are one vector, exactly
        return Inputs(p[None, :], measured=bool(np.isin(p, (0.0, 1.0)).all()))


@dataclass(frozen=True, eq=False)
class Inputs:
    """A layer's input activity as rows of a matrix: each measured vector (0 or 1 per input), or
    one row of probabilities."""

    rows: np.ndarray  # (vectors, in_features)
    measured: bool
