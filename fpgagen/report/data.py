"""Everything the report shows, gathered from a design folder.

Reads the manifest, the results of `fpgagen csim`, `sim` and `synth`, and the vectors the last
simulation really ran (recorded in its results); rebuilds the quantized, scheduled model from the
manifest for the figures that depend on the inputs. Missing pieces leave their figures out, with
the reason, rather than failing the report.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..design import model_from_manifest
from ..errors import FpgagenError
from ..ir import Model
from ..manifest import read_manifest
from ..performance import (
    LayerPerformance,
    first_result_estimate,
    layer_demands,
    measure_layers,
    simulated_vectors_folder,
    steady_interval,
)
from ..results import CSIM_RESULTS, SIM_RESULTS, SYNTH_RESULTS
from ..vectors import Vectors, idle_layers, read_vectors
from .metrics import FixedPointError, PeLoad, StageInterval, fixed_point_errors, pe_loads, stage_intervals


@dataclass(frozen=True)
class Roofline:
    """The board's and the design's ceilings, in useful MACs per second, and where the design sits."""

    clock_hz: float
    board_macs_per_s: float  # every DSP doing one useful MAC per cycle
    board_bytes_per_s: float  # every off-chip channel at its peak
    design_macs_per_s: float  # every PE of the design doing one useful MAC per cycle
    design_bytes_per_s: float  # the design's AXI ports at what they can take
    useful_macs: float  # per vector, on the figures' vectors
    offchip_bytes: float  # per vector, weights the design reads from off chip
    estimated_vectors_per_s: float | None
    measured_vectors_per_s: float | None

    @property
    def intensity(self) -> float:
        """Useful MACs per off-chip byte (infinite when every weight is on chip)."""
        return self.useful_macs / self.offchip_bytes if self.offchip_bytes else math.inf

    def attainable(self, ceiling_macs: float, ceiling_bytes: float) -> float:
        return min(ceiling_macs, ceiling_bytes * self.intensity) if ceiling_bytes else ceiling_macs

    @property
    def design_roof(self) -> float:
        return self.attainable(self.design_macs_per_s, self.design_bytes_per_s)

    @property
    def board_roof(self) -> float:
        return self.attainable(self.board_macs_per_s, self.board_bytes_per_s)


@dataclass
class ReportData:
    outdir: Path
    manifest: dict
    csim: dict | None
    sim: dict | None
    synth: dict | None
    vectors_folder: Path
    vectors: Vectors | None
    model: Model | None
    notes: list[str] = field(default_factory=list)  # why a figure is missing
    warnings: list[str] = field(default_factory=list)
    performance: list[LayerPerformance] | None = None
    intervals: list[StageInterval] = field(default_factory=list)
    loads: list[PeLoad] | None = None
    errors: list[FixedPointError] | None = None
    roofline: Roofline | None = None
    # the cost model's cycles to the first output of the RTL run, on its first vector
    first_result_estimate: float | None = None

    @property
    def simulated(self) -> bool:
        return self.sim is not None and bool(self.sim.get("passed"))

    @property
    def measured_interval(self) -> float | None:
        """Steady-state cycles per vector of the RTL run (performance.steady_interval)."""
        return steady_interval(self.sim) if self.simulated else None


def _load(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise FpgagenError(f"{path}: not readable JSON ({exc})") from None


def gather(outdir: Path) -> ReportData:
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    csim, sim, synth = (_load(outdir / name) for name in (CSIM_RESULTS, SIM_RESULTS, SYNTH_RESULTS))
    # The figures follow the inputs of the last RTL simulation, else of the C simulation.
    ran = sim if sim is not None else csim
    folder = simulated_vectors_folder(outdir, ran, manifest) if ran is not None else outdir / manifest["vectors"]
    data = ReportData(outdir, manifest, csim, sim, synth, folder, None, None)
    try:
        data.vectors = read_vectors(folder)
    except FpgagenError as exc:
        data.notes.append(f"no figures that depend on the inputs: {exc}")
    try:
        data.model = model_from_manifest(outdir)
    except FpgagenError as exc:
        data.notes.append(f"no figures that need the model (sparsity, PE load, fixed-point error, efficiency): {exc}")
    data.intervals = stage_intervals(manifest, sim if data.simulated else None)
    if sim is not None and not sim.get("passed"):
        data.warnings.append("the RTL simulation failed: its cycle counts are left out")
    if csim is not None and not csim.get("passed"):
        data.warnings.append("the C simulation failed")
    if data.model is not None and data.vectors is not None:
        _input_figures(data)
    return data


def _input_figures(data: ReportData) -> None:
    model, vectors = data.model, data.vectors
    idle = idle_layers(model, vectors)
    if idle:
        data.warnings.append(
            f"no vector gives {', '.join(idle)} any work (no nonzero activation meets a nonzero weight): "
            "the simulations did not exercise those layers"
        )
    data.loads = pe_loads(model, vectors)
    data.errors = fixed_point_errors(model, vectors)
    if data.simulated:
        data.performance = measure_layers(data.manifest, data.sim, model, vectors)
        data.first_result_estimate = first_result_estimate(data.outdir, data.manifest, model, vectors)
    data.roofline = _roofline(data)


def _board_macs_per_s(estimate: dict) -> float | None:
    """The cost model's compute roof for this model: its DSPs on the MACs that multiply, its LUTs
    in the least PEs on all of them (docs/cost-model.md, "Roofline"), in MACs a second."""
    roofline = estimate.get("roofline") or {}
    bound, macs = roofline.get("compute_bound"), roofline.get("useful_macs")
    return bound * macs if bound and macs else None


def _roofline(data: ReportData) -> Roofline:
    manifest = data.manifest
    estimate = manifest.get("estimate") or {}
    board = estimate.get("board", {})
    budget = estimate.get("totals", {}).get("budget", {})
    clock = float(manifest["board"]["clock_mhz"]) * 1e6
    lanes = sum(  # every PE: a private stage's units have P each
        stage["pes"] * (stage["units"] if stage.get("private") else 1) for stage in manifest["schedule"]["stages"]
    )
    # the ports that stream weights while vectors run: not the load port (its `stage` is null),
    # which reads before them; a manifest written before the load port names no stage
    streaming = [port for port in manifest["rtl"]["ports"] if port.get("stage", "sequential") is not None]
    ports = sum(min(port["data_bits"] / 8, port["bytes_per_cycle"]) for port in streaming)
    demands = layer_demands(manifest, data.model, data.vectors)
    interval = estimate.get("totals", {}).get("interval")
    return Roofline(
        clock_hz=clock,
        board_macs_per_s=_board_macs_per_s(estimate) or budget.get("dsp", lanes) * clock,
        board_bytes_per_s=board.get("channels", 0) * board.get("channel_gbps", 0.0) * 1e9,
        design_macs_per_s=lanes * clock,
        design_bytes_per_s=ports * clock,
        useful_macs=sum(demand.useful_macs for demand in demands),
        offchip_bytes=sum(demand.offchip_bytes for demand in demands),
        estimated_vectors_per_s=clock / interval if interval else None,
        measured_vectors_per_s=clock / data.measured_interval if data.simulated else None,
    )
