"""Graph Challenge networks with the official statistics, and digit-like images to run on them.

The official files cannot be downloaded here, so this module makes stand-ins with the same
statistics: N x N layers with exactly 32 nonzeros in every row and column, every weight 0.0625,
the official bias for N, and the clamp to [0, 32].

Topology (RadiX-Net-like, deterministic). N = 16 M neurons, M a power of two >= 2. Layer k
(0-based) uses the stride s_k = 2**(k mod log2 M) and connects input i to the two bands of 16
consecutive outputs that start at i and at i + 16 s_k (mod N), every weight 0.0625:

    W_k[i, j] = 1/16  when (j - i) mod N < 16  or  (j - i - 16 s_k) mod N < 16.

A neuron thus reads 2 x 16 inputs and feeds 2 x 16 outputs. Within a cycle of log2 M layers the
strides 1, 2, ..., M/2 blocks add up to every offset, so every input reaches every output: the
all-to-all mixing RadiX-Net gets from its mixed radices. The bands slide by one neuron per output
rather than forming a Kronecker product of 16 x 16 blocks (I + S^s kron J_16, RadiX-Net's own
form): with blocks, the 16 neurons of a block always hold equal values, so fixed-point rounding
errs the same way on all of them, layer after layer, and an image balanced on the survival
threshold can flip between float and 16-bit fixed point (6 in 10,000 at N = 1024, L = 120, w8a16);
with sliding bands, 0 in 28,000.

Images. N must be a perfect square (64, 256, 1024, 4096, ...): image pixel (r, c) of a
sqrt(N) x sqrt(N) binary picture feeds neuron r * sqrt(N) + c. A picture is 2 to 5 random strokes,
straight segments or circular arcs 5% to 12% of the side thick: about 18% ink, like the
thresholded MNIST digits of the challenge. With these statistics about half of the images survive
(seed 0: 55% at N = 1024 and 71% at N = 4096 after 120 layers; 43% at 64 x 8, 47% at 256 x 12).

Truth. The categories come from an independent float64 computation in the Graph Challenge's own
form (plain scipy.sparse, the bias added to the nonzeros only), not from fpgagen's golden model.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..atomic import atomic_directory, is_temporary
from ..errors import FpgagenError
from ..frontend.graphchallenge_tsv import CLIP, categories, default_bias, graphchallenge_model, write_triples
from ..frontend.onnx_writer import write_onnx
from ..ir import Model
from ..outdir import LISTING, some_of, unlisted_in, write_listing

BLOCK = 16
WEIGHT = 1.0 / BLOCK
STROKES_PER_IMAGE = (2, 5)
THICKNESS = (0.05, 0.12)  # fraction of the image side
_IMAGES_PER_CHUNK = 256  # bounds the (strokes x pixels) distance tables


def check_neurons(neurons: int) -> int:
    """The image side sqrt(N), or an error if N is not 16 times a power of two and a square."""
    blocks, rest = divmod(neurons, BLOCK)
    if neurons < 2 * BLOCK or rest or blocks & (blocks - 1):
        raise FpgagenError(f"--neurons {neurons}: must be 16 times a power of two (at least 2), such as 1024")
    side = math.isqrt(neurons)
    if side * side != neurons:
        raise FpgagenError(
            f"--neurons {neurons}: the images need a square number of neurons; use 64, 256, 1024, 4096, ..."
        )
    return side


def layer_weights(neurons: int, index: int) -> sp.csr_array:
    """W_index (0-based) as an (N, N) float64 matrix, rows the inputs and columns the outputs."""
    stride = BLOCK << (index % int(math.log2(neurons // BLOCK)))
    inputs = np.repeat(np.arange(neurons), 2 * BLOCK)
    band = np.tile(np.concatenate([np.arange(BLOCK), stride + np.arange(BLOCK)]), neurons)
    outputs = (inputs + band) % neurons
    return sp.csr_array((np.full(inputs.size, WEIGHT), (inputs, outputs)), shape=(neurons, neurons))


def network(neurons: int, layers: int) -> Model:
    """The generated network as fpgagen IR, with the official bias for `neurons`."""
    check_neurons(neurons)
    _check_at_least("--layers", layers, 1)
    return graphchallenge_model([layer_weights(neurons, k) for k in range(layers)], default_bias(neurons))


def _check_at_least(option: str, value: int, least: int) -> None:
    if value < least:
        raise FpgagenError(f"{option} {value}: must be at least {least}")


def draw_images(neurons: int, count: int, rng: np.random.Generator) -> sp.csr_array:
    """`count` binary stroke pictures, one per row of a (count, N) matrix of zeros and ones."""
    side = check_neurons(neurons)
    strokes_per_image = rng.integers(STROKES_PER_IMAGE[0], STROKES_PER_IMAGE[1] + 1, count)
    strokes = _Strokes.draw(int(strokes_per_image.sum()), side, rng)
    first_stroke = np.concatenate([[0], np.cumsum(strokes_per_image)])
    pixels = (np.indices((side, side)).reshape(2, -1) + 0.5).astype(np.float64)
    chunks = []
    for start in range(0, count, _IMAGES_PER_CHUNK):
        stop = min(start + _IMAGES_PER_CHUNK, count)
        lo, hi = first_stroke[start], first_stroke[stop]
        ink = strokes.slice(lo, hi).ink(pixels)
        chunks.append(sp.csr_array(np.logical_or.reduceat(ink, first_stroke[start:stop] - lo, axis=0)))
    images = sp.vstack(chunks, format="csr") if chunks else sp.csr_array((0, neurons))
    return sp.csr_array(images, dtype=np.float64)


@dataclass(frozen=True)
class _Strokes:
    """Stroke parameters in pixel units, one entry per stroke; each stroke is a segment or an arc."""

    is_arc: np.ndarray
    half_width: np.ndarray
    start: np.ndarray  # segment end points, (strokes, 2) as (row, col)
    end: np.ndarray
    center: np.ndarray  # arcs: from angle `angle0` on, through `span` radians
    radius: np.ndarray
    angle0: np.ndarray
    span: np.ndarray

    @classmethod
    def draw(cls, count: int, side: int, rng: np.random.Generator) -> _Strokes:
        return cls(
            is_arc=rng.random(count) < 0.5,
            half_width=rng.uniform(*THICKNESS, count) * side / 2,
            start=rng.uniform(0.15, 0.85, (count, 2)) * side,
            end=rng.uniform(0.15, 0.85, (count, 2)) * side,
            center=rng.uniform(0.3, 0.7, (count, 2)) * side,
            radius=rng.uniform(0.1, 0.35, count) * side,
            angle0=rng.uniform(0.0, 2 * np.pi, count),
            span=rng.uniform(np.pi / 2, 2 * np.pi, count),
        )

    def slice(self, lo: int, hi: int) -> _Strokes:
        return _Strokes(**{name: value[lo:hi] for name, value in vars(self).items()})

    def ink(self, pixels: np.ndarray) -> np.ndarray:
        """(strokes, pixels) booleans: which pixel centers each stroke covers."""
        distance = np.empty((self.is_arc.size, pixels.shape[1]))
        arcs, segments = self.is_arc, ~self.is_arc
        distance[segments] = _segment_distance(pixels, self.start[segments], self.end[segments])
        distance[arcs] = _arc_distance(pixels, self.center[arcs], self.radius[arcs], self.angle0[arcs], self.span[arcs])
        return distance <= self.half_width[:, None]


def _segment_distance(pixels: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    rows, cols = pixels
    d_row, d_col = (end - start).T[:, :, None]
    s_row, s_col = start.T[:, :, None]
    length2 = np.maximum(d_row**2 + d_col**2, 1e-12)
    along = np.clip(((rows - s_row) * d_row + (cols - s_col) * d_col) / length2, 0.0, 1.0)
    return np.hypot(rows - s_row - along * d_row, cols - s_col - along * d_col)


def _arc_distance(
    pixels: np.ndarray, center: np.ndarray, radius: np.ndarray, angle0: np.ndarray, span: np.ndarray
) -> np.ndarray:
    rows, cols = pixels
    c_row, c_col = center.T[:, :, None]
    radius, angle0, span = radius[:, None], angle0[:, None], span[:, None]
    inside = (np.arctan2(rows - c_row, cols - c_col) - angle0) % (2 * np.pi) <= span
    to_circle = np.abs(np.hypot(rows - c_row, cols - c_col) - radius)
    ends = [(c_row + radius * np.sin(a), c_col + radius * np.cos(a)) for a in (angle0, angle0 + span)]
    to_ends = np.minimum(*(np.hypot(rows - e_row, cols - e_col) for e_row, e_col in ends))
    return np.where(inside, to_circle, to_ends)


def reference_categories(weights: Iterable[sp.sparray], images: sp.sparray, bias: float) -> np.ndarray:
    """Graph Challenge truth in float64, as its reference code computes it (bias <= 0).

    Y = Y W; the bias is added to the nonzeros of Y only; clamp to [0, 32]; drop the zeros.
    """
    y = sp.csr_array(images, dtype=np.float64)
    for w in weights:
        y = sp.csr_array(y @ w)
        y.data += bias
        np.clip(y.data, 0.0, CLIP, out=y.data)
        y.eliminate_zeros()
    return categories(y)


@dataclass(frozen=True)
class ExampleSummary:
    folder: Path
    neurons: int
    layers: int
    inputs: int
    edges: int  # nonzero weights in the whole network
    survivors: int  # images in the categories file
    seconds: float


def write_example(
    folder: Path, neurons: int = 1024, layers: int = 120, inputs: int = 2000, seed: int = 0
) -> ExampleSummary:
    """Write a Graph Challenge example into `folder`, atomically, in the official layout.

    neuron{N}/n{N}-l{k}.tsv (k = 1..L), sparse-images-{N}.tsv, neuron{N}-l{L}-categories.tsv,
    plus model.onnx and images.npy (dense float32, one image per row) for `fpgagen predict`, and the
    list of the files written (`outdir.LISTING`), by which a later example may replace them.
    """
    started = time.perf_counter()
    check_neurons(neurons)
    for option, value, least in (("--layers", layers, 1), ("--inputs", inputs, 1), ("--seed", seed, 0)):
        _check_at_least(option, value, least)
    folder = Path(folder)
    _check_target(folder)
    weights = [layer_weights(neurons, k) for k in range(layers)]
    images = draw_images(neurons, inputs, np.random.default_rng(seed))
    truth = reference_categories(weights, images, default_bias(neurons))
    with atomic_directory(folder, replaceable=_is_example_entry) as work:
        (work / f"neuron{neurons}").mkdir()
        for k, w in enumerate(weights, start=1):
            write_triples(work / f"neuron{neurons}" / f"n{neurons}-l{k}.tsv", w, "%g")
        write_triples(work / f"sparse-images-{neurons}.tsv", images, "%g")
        np.savetxt(work / f"neuron{neurons}-l{layers}-categories.tsv", truth, fmt="%d")
        np.save(work / "images.npy", images.toarray().astype(np.float32))
        write_onnx(graphchallenge_model(weights, default_bias(neurons)), work / "model.onnx")
        write_listing(work)
    return ExampleSummary(
        folder=folder,
        neurons=neurons,
        layers=layers,
        inputs=inputs,
        edges=sum(w.nnz for w in weights),
        survivors=int(truth.size),
        seconds=time.perf_counter() - started,
    )


def _check_target(folder: Path) -> None:
    """Refuse to replace anything but an empty folder or an earlier example, unchanged, whose files
    are all fpgagen's (its listing says which they are)."""
    if folder.exists() and not folder.is_dir():
        raise FpgagenError(f"{folder}: exists and is not a folder")
    if not folder.is_dir() or not any(not is_temporary(entry.name) for entry in folder.iterdir()):
        return
    if not (folder / LISTING).is_file():
        raise FpgagenError(
            f"{folder}: folder is not empty and holds no example fpgagen wrote (no {LISTING}); choose another -o"
        )
    foreign = unlisted_in(folder)
    if foreign:
        raise FpgagenError(
            f"{folder}: holds files the earlier example did not write ({some_of(foreign)}); "
            "fpgagen replaces only an example it wrote, unchanged: choose another -o"
        )


_EXAMPLE_ENTRY = re.compile(
    r"^(neuron\d+|sparse-images-\d+\.tsv|neuron\d+-l\d+-categories\.tsv|model\.onnx|images\.npy"
    rf"|{re.escape(LISTING)})$"
)


def _is_example_entry(name: str) -> bool:
    """What an example consists of: replaced by the next example, unlike anything else in the folder."""
    return _EXAMPLE_ENTRY.match(name) is not None
