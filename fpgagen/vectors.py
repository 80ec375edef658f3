"""Test vectors: the integers a design receives and what the golden model says each layer outputs.

A vectors folder holds `x.bin` (the quantized inputs) and `y<k>.bin` for every layer k (its
outputs), all little-endian int16, one row per vector, plus `vectors.json` describing them. The
C++ testbench, the cocotb testbench and `fpgagen csim/sim` all read this one format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import FpgagenError
from .golden import GoldenModel, flatten_inputs
from .ir import Model

DEFAULT_COUNT = 8


def default_inputs(model: Model, count: int = DEFAULT_COUNT, seed: int = 0) -> np.ndarray:
    """Random inputs in the quantized input range, about half of them zero (to exercise skipping)."""
    rng = np.random.default_rng(seed)
    fmt = model.input_format
    limit = fmt.to_float(fmt.qmax)
    x = rng.uniform(-limit, limit, (count, model.in_features))
    x[rng.random(x.shape) < 0.5] = 0.0
    return x


@dataclass(frozen=True)
class Vectors:
    x_q: np.ndarray  # (batch, in_features) int16
    layer_outputs: list[np.ndarray]  # per layer (batch, out_features) int16

    @property
    def batch(self) -> int:
        return self.x_q.shape[0]


def golden_vectors(model: Model, inputs: np.ndarray, source: str = "inputs") -> Vectors:
    """Quantize float `inputs` and run them through the golden model, keeping every layer's output."""
    golden = GoldenModel(model)
    x_q = golden.quantize_inputs(flatten_inputs(model, inputs, source))
    outputs = [out.toarray() for out in golden.run_q(x_q, trace=True)]
    return Vectors(x_q.astype(np.int16), [y.astype(np.int16) for y in outputs])


def write_vectors(model: Model, vectors: Vectors, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    vectors.x_q.astype("<i2").tofile(folder / "x.bin")
    for index, y in enumerate(vectors.layer_outputs):
        y.astype("<i2").tofile(folder / f"y{index}.bin")
    meta = {
        "batch": vectors.batch,
        "in_features": model.in_features,
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
    return Vectors(x_q, outputs)
