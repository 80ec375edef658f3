"""Test vectors: the integers a design receives and what the golden model says each layer outputs.

A vectors folder holds `x.bin` (the quantized inputs) and `y<k>.bin` for every layer k (its
outputs), all little-endian int16, one row per vector, plus `vectors.json` describing them (and
where the inputs came from). The C++ testbench, the cocotb testbench and `fpgagen csim/sim` all
read this one format.

Test inputs are chosen so that every layer has work: a vector whose activations die out in an
early layer exercises no multiply in the later ones, and a design verified on such vectors is not
verified at all there. A layer "has work" on a vector when one of its nonzero input activations
meets a nonzero weight (a useful MAC).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import FpgagenError
from .golden import GoldenModel, flatten_inputs
from .ir import Model

DEFAULT_COUNT = 8

# Synthetic input families tried in order until enough vectors keep every layer busy: signed
# inputs first (any network), then non-negative ones (a ReLU network with negative biases, such
# as a Graph Challenge network, kills signed inputs within a few layers); dense before sparse,
# the full input range before smaller magnitudes.
_SIGNED = (True, False)
_DENSITIES = (0.5, 0.25, 0.125)
_SCALES = (1.0, 0.25, 1.0 / 16)
_CALIB_CHUNK = 4  # calibration rows examined at a time, in multiples of the vectors asked for
_CALIB_SCAN = 64  # at most this many multiples are examined


@dataclass(frozen=True)
class ChosenInputs:
    x: np.ndarray  # (count, in_features) float inputs
    source: str  # how they were chosen, recorded in vectors.json and shown in the report
    calibration_rows: tuple[int, ...] | None = None  # the calibration inputs' rows they are, if they are


@dataclass(frozen=True)
class Vectors:
    x_q: np.ndarray  # (batch, in_features) int16
    layer_outputs: list[np.ndarray]  # per layer (batch, out_features) int16
    source: str = "inputs"
    calibration_rows: tuple[int, ...] | None = None  # as ChosenInputs', recorded in vectors.json

    @property
    def batch(self) -> int:
        return self.x_q.shape[0]

    def layer_inputs(self) -> list[np.ndarray]:
        """What each layer receives: the inputs, then every layer's output but the last."""
        return [self.x_q, *self.layer_outputs[:-1]]


def layer_work(model: Model, layer_inputs: list) -> np.ndarray:
    """(batch, layers) useful MACs: nonzero weights of each layer met by its nonzero input activations."""
    columns = []
    for layer, x in zip(model.layers, layer_inputs):
        fan_out = np.diff(layer.weights.indptr).astype(np.float64)
        active = (x != 0).astype(np.float64)
        columns.append(np.asarray(active @ fan_out).ravel())
    return np.stack(columns, axis=1)


def idle_layers(model: Model, vectors: Vectors) -> list[str]:
    """Names of the layers that do no useful MAC on any of `vectors`."""
    work = layer_work(model, vectors.layer_inputs()).sum(axis=0)
    return [layer.name for layer, macs in zip(model.layers, work) if macs == 0]


def _busy_layers(golden: GoldenModel, x: np.ndarray) -> np.ndarray:
    """(rows, layers) bool: which layers have work on each input row (run in the model's arithmetic)."""
    x_q = golden.quantize_inputs(x) if golden.model.quantized else x
    outputs = golden.run_q(x_q, trace=True) if golden.model.quantized else golden.run(x, trace=True)
    inputs = [sp.csr_array(x_q), *outputs[:-1]]
    return layer_work(golden.model, inputs) > 0


def _input_limit(model: Model) -> float:
    fmt = model.input_format
    return float(fmt.to_float(fmt.qmax)) if fmt is not None else 1.0


def _draw(rng: np.random.Generator, shape: tuple[int, int], signed: bool, density: float, limit: float) -> np.ndarray:
    x = rng.uniform(-limit if signed else 0.0, limit, shape)
    x[rng.random(shape) < 1.0 - density] = 0.0
    return x


def default_inputs(model: Model, count: int = DEFAULT_COUNT, seed: int = 0) -> np.ndarray:
    """Random inputs in the model's input range that keep every layer busy; see `synthetic_inputs`."""
    return synthetic_inputs(model, count, seed).x


def synthetic_inputs(model: Model, count: int = DEFAULT_COUNT, seed: int = 0) -> ChosenInputs:
    """`count` random inputs, chosen so that activations survive to the last layer.

    Families of uniform random inputs (signed or non-negative, a fraction of them zero, the whole
    input range or a part of it) are drawn in a fixed order; each row goes through the golden model
    and the first `count` rows that give every layer work are kept. When fewer exist, the rows that
    keep the most layers busy fill up the rest (`idle_layers` then names the layers left idle).
    """
    rng = np.random.default_rng(seed)
    golden = GoldenModel(model)
    limit = _input_limit(model)
    shape = (count, model.in_features)
    full: list[np.ndarray] = []
    partial: list[tuple[int, int, np.ndarray]] = []  # (-busy layers, order, row)
    families = []
    for signed in _SIGNED:
        for density in _DENSITIES:
            for scale in _SCALES:
                x = _draw(rng, shape, signed, density, scale * limit)
                busy = _busy_layers(golden, x)
                kept = x[busy.all(axis=1)]
                if len(kept) and len(full) < count:
                    sign = "signed" if signed else "non-negative"
                    families.append(f"{sign}, {density:g} nonzero, up to {scale * limit:g}")
                full += list(kept)
                partial += [(-int(b.sum()), len(partial), row) for b, row in zip(busy, x) if not b.all()]
                if len(full) >= count:
                    rows = np.array(full[:count])
                    return ChosenInputs(rows, f"random inputs (seed {seed}; {'; '.join(families)})")
    partial.sort(key=lambda entry: entry[:2])
    rows = full + [row for _, _, row in partial[: count - len(full)]]
    note = f"{len(full)} of {count} keep every layer busy" if full else "none keeps every layer busy"
    return ChosenInputs(np.array(rows), f"random inputs (seed {seed}; {note})")


def calibration_inputs(model: Model, calib: np.ndarray, count: int = DEFAULT_COUNT) -> ChosenInputs:
    """`count` rows of the calibration inputs, in their order: the first rows, except that at
    least half of them (when the calibration inputs have that many) keep every layer busy.

    Real inputs often die out in a deep network (about half of the Graph Challenge images do);
    a test set of only those would leave the last layers unverified. Rows are examined from the
    start, a few times `count` at a time, so a large calibration set costs little.
    """
    calib = np.asarray(calib)
    count = min(count, len(calib))
    wanted = -(-count // 2)
    golden = GoldenModel(model)
    full = np.zeros(0, dtype=np.int64)
    examined = 0
    limit = min(len(calib), _CALIB_SCAN * count)
    while examined < limit and len(full) < wanted:
        stop = min(limit, examined + _CALIB_CHUNK * count if examined else count)
        busy = _busy_layers(golden, calib[examined:stop])
        full = np.concatenate([full, examined + np.flatnonzero(busy.all(axis=1))])
        examined = stop
    picked = set(full[:wanted].tolist())
    others = (index for index in range(len(calib)) if index not in picked)
    rows = sorted([*picked, *islice(others, count - len(picked))])
    return ChosenInputs(calib[rows], f"calibration rows {_ranges(rows)}", tuple(rows))


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    parts, start = [], None
    for position, index in enumerate(indices):
        if start is None:
            start = index
        if position + 1 == len(indices) or indices[position + 1] != index + 1:
            parts.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ", ".join(parts)


def golden_vectors(
    model: Model, inputs: np.ndarray, source: str = "inputs", calibration_rows: tuple[int, ...] | None = None
) -> Vectors:
    """Quantize float `inputs` and run them through the golden model, keeping every layer's output
    (`source` and `calibration_rows` say where the inputs came from; see ChosenInputs)."""
    golden = GoldenModel(model)
    x_q = golden.quantize_inputs(flatten_inputs(model, inputs, source))
    outputs = [out.toarray() for out in golden.run_q(x_q, trace=True)]
    return Vectors(x_q.astype(np.int16), [y.astype(np.int16) for y in outputs], source, calibration_rows)


def write_vectors(model: Model, vectors: Vectors, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    vectors.x_q.astype("<i2").tofile(folder / "x.bin")
    for index, y in enumerate(vectors.layer_outputs):
        y.astype("<i2").tofile(folder / f"y{index}.bin")
    meta = {
        "batch": vectors.batch,
        "in_features": model.in_features,
        "source": vectors.source,
        "calibration_rows": None if vectors.calibration_rows is None else list(vectors.calibration_rows),
        "layers": [
            {"name": layer.name, "file": f"y{index}.bin", "out_features": layer.out_features}
            for index, layer in enumerate(model.layers)
        ],
    }
    (folder / "vectors.json").write_text(json.dumps(meta, indent=2) + "\n")


def read_vectors(folder: Path) -> Vectors:
    folder = Path(folder)
    try:
        meta = json.loads((folder / "vectors.json").read_text())
        x_q = np.fromfile(folder / "x.bin", dtype="<i2").reshape(meta["batch"], meta["in_features"])
        outputs = [
            np.fromfile(folder / layer["file"], dtype="<i2").reshape(meta["batch"], layer["out_features"])
            for layer in meta["layers"]
        ]
    except (OSError, KeyError, ValueError) as exc:
        raise FpgagenError(f"{folder}: not a readable vectors folder ({exc})") from None
    rows = meta.get("calibration_rows")
    return Vectors(x_q, outputs, meta.get("source", "inputs"), None if rows is None else tuple(rows))
