"""Measured cycles of a simulated design against their lower bounds and the cost model.

For every layer: the compute bound is the useful MACs per vector (nonzero weights that meet a
nonzero activation) over P; a sequential layer also has a memory bound, the bytes its rows bring
over its stage's AXI ports per vector over the bytes they deliver (and it can take) per cycle. Efficiency is the larger
bound over the busy cycles the RTL counted (`sim_results.json`); the cost model's estimate comes
from the manifest. Everything is computed on the vectors the simulation really ran, which
`sim_results.json` records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .design import board_from_manifest, model_from_manifest
from .engine.plan import row_beats
from .errors import FpgagenError
from .ir import Model
from .manifest import read_manifest
from .results import SIM_RESULTS
from .schedule.activity import Activity
from .schedule.cost_model import CostModel
from .vectors import Vectors, read_vectors


@dataclass(frozen=True)
class LayerPerformance:
    name: str
    mode: str
    pes: int
    useful_macs: float  # per vector
    compute_bound: float
    memory_bound: float  # 0 for dataflow layers
    offchip_bytes: float  # per vector, weights read over the AXI port (0 for dataflow layers)
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


def read_sim_results(outdir: Path) -> dict:
    path = Path(outdir) / SIM_RESULTS
    if not path.is_file():
        raise FpgagenError(f"{outdir}: no {SIM_RESULTS}; run fpgagen sim first")
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise FpgagenError(f"{path}: not readable JSON ({exc})") from None


def steady_interval(results: dict) -> float:
    """Steady-state cycles per vector of an RTL run (its sim results): the cycles after the first
    output over the vectors that followed it (a batch's average would include the pipeline filling
    up); a run of one vector, its cycles."""
    if results["vectors"] < 2:
        return float(results["total_cycles"])
    return (results["total_cycles"] - results["first_output_cycles"]) / (results["vectors"] - 1)


def simulated_vectors_folder(outdir: Path, results: dict, manifest: dict) -> Path:
    """The vectors folder a run's results (sim or csim) were computed on; results written before
    runs recorded it were on the design's own vectors."""
    return Path(outdir) / results.get("vectors_folder", manifest["vectors"])


def layer_performance(outdir: Path, vectors: Path | None = None) -> list[LayerPerformance]:
    """Per-layer figures of the last RTL simulation of `outdir`, on the vectors it simulated
    (or on the vectors folder `vectors`)."""
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    results = read_sim_results(outdir)
    data = read_vectors(vectors or simulated_vectors_folder(outdir, results, manifest))
    return measure_layers(manifest, results, model_from_manifest(outdir), data)


def first_result_estimate(outdir: Path, manifest: dict, model: Model, data: Vectors) -> float:
    """The cost model's cycles to the first output of a simulation of `data`: its first vector as
    a batch's first (CostModel.first_result), what the testbench's `first_output_cycles` measures.
    The design's own figure is the mean over its calibration vectors, each as the first."""
    activity = Activity.from_quantized(model, data.x_q[:1], "simulated vector")
    cost = CostModel(model, board_from_manifest(manifest, Path(outdir)), activity)
    schedule = model.schedule
    return cost.estimate(schedule.stages, 1, schedule.in_lanes, schedule.deep_channels).latency


@dataclass(frozen=True)
class LayerDemand:
    """What one layer asks of the engine per vector, on given inputs."""

    useful_macs: float  # nonzero weights met by nonzero input activations
    offchip_bytes: float  # weights read over the AXI ports (0 for dataflow layers)
    bytes_per_cycle: float  # what its ports deliver and it can take (0 for dataflow layers)

    @property
    def memory_bound(self) -> float:
        return self.offchip_bytes / self.bytes_per_cycle if self.bytes_per_cycle else 0.0


def layer_demands(manifest: dict, model: Model, data: Vectors) -> list[LayerDemand]:
    """Per layer of the design `manifest` describes (model `model`), its demand on the vectors `data`."""
    demands = []
    for index, (layer, x) in enumerate(zip(model.layers, data.layer_inputs())):
        pes = layer.schedule.pes
        weights = layer.numerics.weights_q
        active = x != 0
        macs = float((active * np.diff(weights.indptr)).sum()) / len(x)
        offchip = per_cycle = 0.0
        if layer.schedule.mode == "sequential":
            channels = [port for port in manifest["rtl"]["ports"] if port["stage"] == layer.schedule.stage]
            beat_bytes = sum(port["data_bits"] for port in channels) // 8  # P off-chip slots, a share on each
            per_cycle = min(beat_bytes, sum(port["bytes_per_cycle"] for port in channels))
            offchip = float((active * row_beats(model, index, pes)).sum()) / len(x) * beat_bytes
        demands.append(LayerDemand(macs, offchip, per_cycle))
    return demands


def measure_layers(manifest: dict, results: dict, model: Model, data: Vectors) -> list[LayerPerformance]:
    """Per-layer figures of the simulation `results` of the design `manifest` describes, whose
    model is `model`, on the vectors `data` it simulated."""
    measured = {entry["layer"]: entry for entry in results["layers"]}
    found = []
    for layer, demand, entry in zip(model.layers, layer_demands(manifest, model, data), manifest["layers"]):
        if layer.name not in measured:
            raise FpgagenError(f"{SIM_RESULTS}: no counters for layer {layer.name}")
        pes = layer.schedule.pes
        # a MAC a cycle at every PE: a private stage's K units have P each
        macs_per_cycle = pes * layer.schedule.units if layer.schedule.private else pes
        estimate = entry["estimate"]["cycles"] if entry.get("estimate") else {"compute": 0.0, "drain": 0.0}
        counters = measured[layer.name]
        found.append(
            LayerPerformance(
                name=layer.name,
                mode=layer.schedule.mode,
                pes=pes,
                useful_macs=demand.useful_macs,
                compute_bound=demand.useful_macs / macs_per_cycle,
                memory_bound=demand.memory_bound,
                offchip_bytes=demand.offchip_bytes,
                measured=counters["busy_per_vector"],
                estimated=float(estimate["compute"]),
                drain_measured=counters["drain_per_vector"],
                drain_estimated=float(estimate["drain"]),
            )
        )
    return found
