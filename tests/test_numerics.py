"""The fixed-point definition, the quantize pass and the golden model, against independent references."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from fpgagen.errors import FpgagenError
from fpgagen.golden import GoldenModel
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.numerics import FixedFormat, frac_bits_for, parse_precision, requantize
from fpgagen.passes.quantize import quantize


def test_quantize_rounds_half_up_and_saturates():
    fmt = FixedFormat(8, 2)  # steps of 0.25, range [-32, 31.75]
    values = [0.125, -0.125, 0.126, -0.126, 0.375, -0.375, 100.0, -100.0, 31.75, -32.0]
    assert fmt.quantize(values).tolist() == [1, 0, 1, -1, 2, -1, 127, -128, 127, -128]


@pytest.mark.parametrize("bits", [4, 8, 16])
def test_frac_bits_is_the_largest_that_fits(bits):
    rng = np.random.default_rng(bits)
    for value in np.concatenate([rng.lognormal(0, 6, 300), [1.0, 0.0625, 32.0, 2.0**-20, 1e6]]):
        frac = frac_bits_for(float(value), bits)
        assert FixedFormat(bits, frac).quantize(value) <= (1 << (bits - 1)) - 1
        assert math.floor(value * 2.0 ** (frac + 1) + 0.5) > (1 << (bits - 1)) - 1


def test_requantize_matches_exact_rational_rounding():
    rng = np.random.default_rng(1)
    acc = rng.integers(-(2**40), 2**40, 2000)
    for shift in (0, 1, 5, 17):
        got = requantize(acc, shift, -(2**15), 2**15 - 1)
        want = [min(max(math.floor(Fraction(int(a), 2**shift) + Fraction(1, 2)), -(2**15)), 2**15 - 1) for a in acc]
        assert got.tolist() == want


def test_requantize_inplace_gives_the_same_result():
    acc = np.arange(-1000, 1000, 7, dtype=np.int32)
    assert requantize(acc.copy(), 3, -50, 60, inplace=True).tolist() == requantize(acc, 3, -50, 60).tolist()


def test_activation_composition_equals_applying_both():
    rng = np.random.default_rng(2)
    z = rng.normal(0, 10, 1000)
    bounds = [-math.inf, -5.0, -1.0, 0.0, 2.0, 7.0, math.inf]
    for a in bounds:
        for b in bounds:
            if a > b:
                continue
            for c in bounds:
                for d in bounds:
                    if c > d:
                        continue
                    first, second = Activation(a, b), Activation(c, d)
                    np.testing.assert_array_equal(first.then(second).apply(z), second.apply(first.apply(z)))


@pytest.mark.parametrize("text", ["w0a16", "w8a2", "w17a16", "int8", "w8", ""])
def test_bad_precision_is_refused(text):
    with pytest.raises(FpgagenError, match="precision"):
        parse_precision(text)


def _random_model(seed: int, sizes: list[int], density: float, bias_scale: float, acts: list[Activation]) -> Model:
    rng = np.random.default_rng(seed)
    layers = []
    for k, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        w = sp.random(n_in, n_out, density=density, random_state=rng, data_rvs=lambda n: rng.normal(0, 0.5, n))
        layers.append(Layer(f"l{k}", f"node{k}", sparse_weights(w), rng.normal(0, bias_scale, n_out), acts[k]))
    return Model("m", tuple(layers), "x", "y", (sizes[0],))


def _dense_integer_reference(model: Model, x: np.ndarray) -> np.ndarray:
    """The layer formula of docs/numerics.md with dense Python-object integers (no overflow possible)."""
    act = model.input_format.quantize(x).astype(object)
    for layer in model.layers:
        num = layer.numerics
        acc = act.dot(num.weights_q.toarray().astype(object)) + num.bias_q.astype(object)
        if num.shift:
            acc = (acc + (1 << (num.shift - 1))) // (1 << num.shift)
        act = np.minimum(np.maximum(acc, num.lo_q), num.hi_q)
    return act.astype(np.int64)


RELU, NONE, CLIP = Activation(0, math.inf), Activation(), Activation(-1.0, 3.0)


@pytest.mark.parametrize(
    "seed,sizes,precision,bias_scale,acts",
    [
        (0, [20, 33, 7], "w8a16", 0.1, [RELU, NONE]),
        (1, [64, 50, 50, 10], "w16a16", 0.5, [RELU, CLIP, NONE]),  # positive biases survive: dense outputs
        (2, [300, 200, 5], "w16a16", 0.05, [NONE, NONE]),  # wide accumulators: the int64 path
        (3, [17, 9, 9, 9, 3], "w4a8", 0.2, [CLIP, RELU, CLIP, NONE]),
    ],
)
def test_golden_fixed_point_matches_the_integer_definition(seed, sizes, precision, bias_scale, acts):
    model = quantize(_random_model(seed, sizes, 0.3, bias_scale, acts), parse_precision(precision))
    x = np.random.default_rng(seed + 100).uniform(-1, 1, (16, sizes[0]))
    x[:, ::3] = 0.0  # zero activations take the skipping path
    want = _dense_integer_reference(model, x)
    got = GoldenModel(model).run(x)[-1].toarray()
    np.testing.assert_array_equal(got, want)


def test_wide_layers_use_64_bit_accumulators():
    model = quantize(_random_model(2, [300, 200, 5], 0.3, 0.05, [NONE, NONE]), parse_precision("w16a16"))
    assert max(layer.numerics.acc_bits for layer in model.layers) > 32


def test_accumulator_width_holds_the_worst_case_and_no_less():
    model = quantize(_random_model(5, [40, 30], 0.5, 0.3, [RELU]), parse_precision("w8a16"))
    num = model.layers[0].numerics
    w = num.weights_q.toarray()
    magnitude = -model.input_format.qmin
    worst = (np.abs(w).sum(axis=0) * magnitude + np.abs(num.bias_q)).max() + (1 << (num.shift - 1))
    assert worst <= 2 ** (num.acc_bits - 1) - 1
    assert worst > 2 ** (num.acc_bits - 2) - 1


def test_clip_bounds_limit_the_range_and_shifts_are_never_negative():
    """Graph Challenge layers: the interval bound grows layer by layer until the clip at 32 caps it."""
    w = sparse_weights(np.full((64, 64), 0.0625) * (np.random.default_rng(3).random((64, 64)) < 0.5))
    layer = Layer("l0", "gc", w, np.full(64, -0.3), Activation(0.0, 32.0))
    model = quantize(Model("gc", (layer,) * 8, "x", "y", (64,)), parse_precision("w8a16"))
    fracs = [q.numerics.output_format.frac for q in model.layers]
    assert fracs == sorted(fracs, reverse=True) and fracs[0] > 9
    assert model.layers[-1].numerics.output_format == FixedFormat(16, 9)  # 32 is exactly 16384
    assert (model.layers[-1].numerics.lo_q, model.layers[-1].numerics.hi_q) == (0, 16384)
    for q in model.layers:
        assert q.numerics.shift >= 0
        assert q.numerics.weights_q.data.tolist() == [64] * q.nnz  # 1/16 in Q8.10


def test_the_bound_without_calibration_keeps_the_signs():
    """A neuron a large negative bias keeps at zero through its ReLU does not size its layer's
    format: with |W| |x| + |b| one such neuron rounded every other activation to zero."""
    rng = np.random.default_rng(4)
    w = sparse_weights(rng.normal(0, 0.5, (16, 32)) * (rng.random((16, 32)) < 0.5))
    bias = rng.normal(0, 0.1, 32)
    bias[:16] = -1e6
    layer = Layer("l0", "dead", w, bias, Activation(0.0, math.inf))
    model = quantize(Model("dead", (layer,), "x", "y", (16,)), parse_precision("w8a16"))
    live = np.abs(w.toarray()[:, 16:]).sum(axis=0) + bias[16:]  # the live outputs' bound for x in [-1, 1]
    assert model.layers[0].numerics.output_format == FixedFormat(16, frac_bits_for(live.max(), 16))
    x = rng.uniform(-1, 1, (64, 16))
    error = np.abs(GoldenModel(model).predict(x) - GoldenModel(Model("dead", (layer,), "x", "y", (16,))).predict(x))
    assert error.max() < 1e-2 * live.max()


def test_64_bit_formats_saturate_instead_of_wrapping():
    """2^63 - 1 is 2^63 as a float: clipped as floats, a value above it wrapped to -2^63."""
    fmt = FixedFormat(64, 0)
    q = fmt.quantize(np.array([2.0**63, 1e30, -(2.0**63), -1e30, 2.0**62, -5.5]))
    assert q.dtype == np.int64
    assert q.tolist() == [fmt.qmax, fmt.qmax, fmt.qmin, fmt.qmin, 2**62, -5]


def test_a_layer_without_weights_keeps_its_bias():
    """All its weights zero, its outputs are its bias: the weight grid must not be the finest of
    all (Q8.40), which put a bias of 512 beyond 64 bits and wrapped it around."""
    empty = Layer("l0", "bias only", sparse_weights(np.zeros((4, 3))), np.array([1000.0, -1000.0, 600.0]), RELU)
    last = Layer("l1", "out", sparse_weights(np.array([[0.5], [0.25], [-0.5]])), np.zeros(1), NONE)
    model = Model("bias", (empty, last), "x", "y", (4,))
    x = np.random.default_rng(5).uniform(-1, 1, (8, 4))
    fixed = GoldenModel(quantize(model, parse_precision("w8a16"))).predict(x)
    np.testing.assert_allclose(fixed, GoldenModel(model).predict(x), rtol=1e-3)  # 200 each


def test_a_bias_too_wide_for_the_accumulator_is_refused():
    """Weights of 1e-9 put the accumulator's grid at 2^-50: a bias of 1e6 needs 70 bits there."""
    layer = Layer("l0", "wide", sparse_weights(np.array([[1e-9]])), np.array([1e6]), NONE)
    with pytest.raises(FpgagenError, match="a bias of 1e\\+06 does not fit a 64-bit accumulator"):
        quantize(Model("wide", (layer,), "x", "y", (1,)), parse_precision("w8a16"))


def test_golden_float_matches_dense_numpy():
    model = _random_model(7, [30, 20, 10], 0.4, 0.3, [RELU, CLIP])
    x = np.random.default_rng(8).uniform(-1, 1, (12, 30))
    want = x
    for layer in model.layers:
        want = layer.activation.apply(want @ layer.weights.toarray() + layer.bias)
    np.testing.assert_allclose(GoldenModel(model).predict(x), want, rtol=1e-12, atol=1e-12)


def test_calibration_narrows_the_output_format():
    model = _random_model(9, [50, 40, 8], 0.3, 0.1, [RELU, NONE])
    x = np.random.default_rng(10).uniform(-0.1, 0.1, (64, 50))
    bounded = quantize(model, parse_precision("w16a16"))  # 16-bit weights: activation grids dominate
    measured = quantize(model, parse_precision("w16a16"), x)
    assert measured.input_format.frac > bounded.input_format.frac
    assert measured.layers[0].numerics.output_format.frac > bounded.layers[0].numerics.output_format.frac
    error_bounded = np.abs(GoldenModel(bounded).predict(x) - GoldenModel(model).predict(x)).max()
    error_measured = np.abs(GoldenModel(measured).predict(x) - GoldenModel(model).predict(x)).max()
    assert error_measured < error_bounded
