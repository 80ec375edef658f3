"""Per-layer formats that meet an error bound (`fpgagen compile --max-error E`).

The error of a quantized model is measured against float on the calibration inputs
(fpgagen/accuracy.py: the largest output error relative to the output range). Every candidate
is a `Widths`: the input width, and per layer a weight width and an output activation width; the
scales follow from the calibration ranges and the accumulators are the exact worst case of each
layer (passes/quantize.py). The search keeps only candidates it has measured within the bound:

1. The widest formats the precision allows (w16a16 by default) must meet the bound. The search
   aims at 70% of it (the rest is kept for inputs it has not seen) with the scales' guard bit;
   if the widest formats need more, at the whole bound, then without the guard bit. Otherwise the
   bound is unreachable, and the error names the layer that costs the most error.
2. Uniform widths: for each activation width, the narrowest weight width that meets the bound
   (by bisection); the cheapest such pair is the starting point.
3. Per layer: each width in turn, the most expensive first, is lowered by bisection as far as the
   bound allows with the others held, and kept lower only if that is cheaper.

The cost is what the cost model charges a layer for its formats (docs/cost-model.md): weight
storage, nonzeros x weight bits, and three accumulator-wide words per output (the bias and the two
accumulator banks). The scheduler then prices the chosen formats layer by layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..accuracy import float_model, output_scale, relative_error
from ..errors import FpgagenError
from ..golden import GoldenModel
from ..ir import Model
from ..numerics import Precision
from .quantize import CALIBRATION_MARGIN, Ranges, Widths, quantize_widths

MIN_WEIGHT_BITS, MIN_ACT_BITS = 2, 4
MAX_PRECISION = Precision(16, 16)
ACCUMULATOR_WORDS = 3  # bias, and the two accumulator banks, per output (cost-model.md)
# The share of the bound kept for inputs the search has not seen. Tuned on random MLPs: with the
# error on 256 calibration rows pushed to the bound itself, 3 of 300 designs were off by more than
# twice the bound on 256 other rows (up to 6.2 times); with 30% kept, none (at most 1.7 times).
RESERVE = 0.3


@dataclass(frozen=True)
class FormatChoice:
    model: Model  # quantized in the chosen formats
    error: float  # its error on the calibration inputs, relative to the output range
    evaluations: int  # quantized models measured on the way
    margin: float  # the calibrated ranges were widened by this (CALIBRATION_MARGIN: the guard bit)
    goal: float  # the error the search kept within: the bound less the reserve, or the bound itself


def format_cost(model: Model) -> int:
    """Bits of weight and accumulator storage the formats of a quantized model cost."""
    return sum(
        layer.numerics.weights_q.nnz * layer.numerics.weight_format.bits
        + ACCUMULATOR_WORDS * layer.out_features * layer.numerics.acc_bits
        for layer in model.layers
    )


def check_max_error(max_error: float) -> None:
    """Refuse an error bound that is not a fraction of the output range: 5 meant as 5% would
    otherwise allow 500%."""
    if not 0 < max_error < 1:
        raise FpgagenError(
            f"--max-error {max_error:g}: must be a fraction of the output range between 0 and 1 (0.01 is 1%)"
        )


def choose_formats(
    model: Model, calib: np.ndarray, max_error: float, widest: Precision = MAX_PRECISION
) -> FormatChoice:
    """The cheapest per-layer formats found whose error on `calib` is at most `max_error`.

    Inputs other than the calibration ones are provided for twice: the scales keep the guard bit
    of calibrated ranges (values up to twice the calibration maximum fit), and the search keeps the
    error within `1 - RESERVE` of the bound. When even the widest formats need it, the reserve is
    given up first, then the guard bit (only inputs beyond the calibration maximum saturate).
    """
    check_max_error(max_error)
    top = Widths.uniform(widest, len(model.layers))
    searches = []
    for margin, goal in (
        (CALIBRATION_MARGIN, (1 - RESERVE) * max_error),
        (CALIBRATION_MARGIN, max_error),
        (1.0, max_error),
    ):
        search = _Search(model, calib, Ranges.of(model, calib, margin), goal)
        searches.append(search)
        if search.meets(top):
            best = _uniform_start(search, widest)
            for knob in _knobs_by_cost(model):
                best = _lower(search, best, knob)
            evaluations = sum(done.evaluations for done in searches)
            return FormatChoice(search.quantized(best), search.error(best), evaluations, margin, goal)
    raise min(searches, key=lambda done: done.error(top)).unreachable(top, widest, max_error)


class _Search:
    """Quantizes and measures candidates, remembering each one measured."""

    def __init__(self, model: Model, calib: np.ndarray, ranges: Ranges, goal: float):
        self.model, self.calib, self.ranges, self.goal = model, calib, ranges, goal
        self.reference = GoldenModel(float_model(model)).predict(calib)
        self._errors: dict[Widths, float] = {}
        self._costs: dict[Widths, int] = {}

    @property
    def evaluations(self) -> int:
        return len(self._errors)

    def quantized(self, widths: Widths) -> Model:
        return quantize_widths(self.model, widths, self.ranges)

    def error(self, widths: Widths) -> float:
        if widths not in self._errors:
            quantized = self.quantized(widths)
            self._costs[widths] = format_cost(quantized)
            got = GoldenModel(quantized).predict(self.calib)
            self._errors[widths] = float(relative_error(self.reference, got).max(initial=0.0))
        return self._errors[widths]

    def meets(self, widths: Widths) -> bool:
        return self.error(widths) <= self.goal

    def cost(self, widths: Widths) -> int:
        self.error(widths)
        return self._costs[widths]

    def unreachable(self, widths: Widths, widest: Precision, max_error: float) -> FpgagenError:
        """The refusal: the best error, and the layer whose own formats cost the most error (the
        output's error with that layer alone in fixed point, every other layer in float)."""
        quantized = self.quantized(widths)
        alone = [self._alone(quantized, index) for index in range(len(quantized.layers))]
        worst = int(np.argmax(alone))
        culprit = quantized.layers[worst]
        return FpgagenError(
            f"--max-error {max_error:g} cannot be met: with the widest formats ({widest.name}) the output is "
            f"off by {self.error(widths):.3g} of its range ({output_scale(self.reference):.4g}) on the calibration "
            f"inputs; layer {culprit.name} ({culprit.origin!r}) costs the most: alone in fixed point "
            f"({culprit.numerics.input_format} inputs, {culprit.numerics.weight_format} weights) it is off by "
            f"{alone[worst]:.3g}"
        )

    def _alone(self, quantized: Model, index: int) -> float:
        """The output error with only layer `index` in fixed point."""
        floats = float_model(self.model)
        x = self.calib
        if index:
            x = GoldenModel(_part(floats, floats.layers[:index])).predict(x)
        layer = quantized.layers[index]
        one = replace(_part(quantized, (layer,)), input_format=layer.numerics.input_format)
        x = GoldenModel(one).predict(x)
        if index + 1 < len(floats.layers):
            x = GoldenModel(_part(floats, floats.layers[index + 1 :])).predict(x)
        return float(relative_error(self.reference, x).max(initial=0.0))


def _part(model: Model, layers: tuple) -> Model:
    """The sub-chain `layers` of `model`, as a model of its own."""
    return replace(model, layers=tuple(layers), input_shape=(layers[0].in_features,))


def _uniform_start(search: _Search, widest: Precision) -> Widths:
    """The cheapest uniform widths that meet the bound."""
    layers = len(search.model.layers)
    candidates = []
    for act_bits in range(widest.act_bits, MIN_ACT_BITS - 1, -1):

        def uniform(bits: int, act_bits: int = act_bits) -> Widths:
            return Widths(act_bits, (bits,) * layers, (act_bits,) * layers)

        if not search.meets(uniform(widest.weight_bits)):
            break  # narrower activations only add error
        bits = _narrowest(lambda b: search.meets(uniform(b)), MIN_WEIGHT_BITS, widest.weight_bits)
        candidates.append(uniform(bits))
    return min(candidates, key=search.cost)


@dataclass(frozen=True)
class _Knob:
    kind: str  # "input", "weight" or "act"
    layer: int

    def get(self, widths: Widths) -> int:
        if self.kind == "input":
            return widths.input_bits
        return (widths.weight_bits if self.kind == "weight" else widths.act_bits)[self.layer]

    def set(self, widths: Widths, bits: int) -> Widths:
        if self.kind == "input":
            return replace(widths, input_bits=bits)
        values = list(widths.weight_bits if self.kind == "weight" else widths.act_bits)
        values[self.layer] = bits
        field = "weight_bits" if self.kind == "weight" else "act_bits"
        return replace(widths, **{field: tuple(values)})

    @property
    def least(self) -> int:
        return MIN_WEIGHT_BITS if self.kind == "weight" else MIN_ACT_BITS


def _knobs_by_cost(model: Model) -> list[_Knob]:
    """Every width, the ones a bit of which costs most first: a weight bit costs a bit per nonzero
    (and widens the accumulators); an activation bit widens the next layer's accumulators."""
    layers = model.layers
    worth = {_Knob("input", 0): ACCUMULATOR_WORDS * layers[0].out_features}
    for index, layer in enumerate(layers):
        worth[_Knob("weight", index)] = layer.nnz + ACCUMULATOR_WORDS * layer.out_features
        consumer = layers[index + 1].out_features if index + 1 < len(layers) else 0
        worth[_Knob("act", index)] = ACCUMULATOR_WORDS * consumer
    return sorted((knob for knob in worth if worth[knob]), key=lambda knob: -worth[knob])


def _lower(search: _Search, widths: Widths, knob: _Knob) -> Widths:
    bits = _narrowest(lambda b: search.meets(knob.set(widths, b)), knob.least, knob.get(widths))
    lowered = knob.set(widths, bits)
    return lowered if search.cost(lowered) < search.cost(widths) else widths


def _narrowest(meets: Callable[[int], bool], least: int, known: int) -> int:
    """The least width in [least, known] that meets the bound, by bisection (`known` does)."""
    lo, hi = least, known
    while lo < hi:
        middle = (lo + hi) // 2
        if meets(middle):
            hi = middle
        else:
            lo = middle + 1
    return hi
