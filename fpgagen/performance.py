"""Measured cycles of a simulated design against their lower bounds and the cost model.

For every layer: the compute bound is the useful MACs per vector (nonzero weights that meet a
nonzero activation) over P; a sequential layer also has a memory bound, the bytes its rows bring
over the AXI port per vector over the bytes the port delivers per cycle. Efficiency is the larger
bound over the busy cycles the RTL counted (`sim_results.json`); the cost model's estimate comes
from the manifest.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .design import model_from_manifest
from .engine.geometry import OFFCHIP_SLOT_BYTES
from .engine.layout import beats_per_row
from .errors import FpgagenError
from .manifest import read_manifest
from .vectors import read_vectors


@dataclass(frozen=True)
class LayerPerformance:
    name: str
    mode: str
    pes: int
    useful_macs: float  # per vector
    compute_bound: float
    memory_bound: float  # 0 for dataflow layers
    measured: float  # busy cycles per vector
    estimated: float  # the cost model's compute cycles
    drain_measured: float
    drain_estimated: float

    @property
    def bound(self) -> float:
        return max(self.compute_bound, self.memory_bound)

    @property
    def efficiency(self) -> float:
        return self.bound / self.measured if self.measured else 0.0

    @property
    def estimate_error(self) -> float:
        """(estimated - measured) / measured."""
        return (self.estimated - self.measured) / self.measured if self.measured else 0.0

    @property
    def drain_error(self) -> float:
        return (self.drain_estimated - self.drain_measured) / self.drain_measured if self.drain_measured else 0.0

    def to_dict(self) -> dict:
        return asdict(self) | {
            "bound": self.bound,
            "efficiency": self.efficiency,
            "estimate_error": self.estimate_error,
            "drain_error": self.drain_error,
        }


def layer_performance(outdir: Path, vectors: Path | None = None) -> list[LayerPerformance]:
    """Per-layer figures of the last RTL simulation of `outdir` (on `vectors`, by default its own)."""
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    results_path = outdir / "sim_results.json"
    if not results_path.is_file():
        raise FpgagenError(f"{outdir}: no sim_results.json; run fpgagen sim first")
    results = json.loads(results_path.read_text())
    measured = {entry["layer"]: entry for entry in results["layers"]}
    data = read_vectors(vectors or outdir / manifest["vectors"])
    model = model_from_manifest(outdir)
    ports = {port["port"]: port for port in manifest["rtl"]["ports"]}
    inputs = [data.x_q, *data.layer_outputs[:-1]]
    found = []
    for layer, x, entry in zip(model.layers, inputs, manifest["layers"]):
        if layer.name not in measured:
            raise FpgagenError(f"{results_path}: no counters for layer {layer.name}")
        pes = layer.schedule.pes
        weights = layer.numerics.weights_q
        active = x != 0
        macs = float((active * np.diff(weights.indptr)).sum()) / len(x)
        memory_bound = 0.0
        if layer.schedule.mode == "sequential":
            port = ports[model.schedule.sequential_stages.index(layer.schedule.stage)]
            beat_bytes = OFFCHIP_SLOT_BYTES * pes
            per_cycle = min(beat_bytes, port["bytes_per_cycle"])
            streamed = float((active * beats_per_row(weights, pes)).sum()) / len(x)
            memory_bound = streamed * beat_bytes / per_cycle
        estimate = entry["estimate"]["cycles"] if entry.get("estimate") else {"compute": 0.0, "drain": 0.0}
        counters = measured[layer.name]
        found.append(
            LayerPerformance(
                name=layer.name,
                mode=layer.schedule.mode,
                pes=pes,
                useful_macs=macs,
                compute_bound=macs / pes,
                memory_bound=memory_bound,
                measured=counters["busy_per_vector"],
                estimated=float(estimate["compute"]),
                drain_measured=counters["drain_per_vector"],
                drain_estimated=float(estimate["drain"]),
            )
        )
    return found
