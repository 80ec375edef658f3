"""OUTDIR/report.html: one self-contained page (no script, no external file, works offline).

The figures are images embedded as data URIs; every value that came from a model file (layer
origins, names) is HTML-escaped by jinja2's autoescaping.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..atomic import atomic_file
from ..outdir import check_command_output
from ..schedule.resources import RESOURCE_KINDS
from ..templating import environment
from . import plots
from .anchors import published
from .data import ReportData, gather


def write_report(outdir: Path) -> Path:
    """Write OUTDIR/report.html from what OUTDIR holds; return its path."""
    data = gather(Path(outdir))
    target = Path(outdir) / "report.html"
    check_command_output(target)
    page = environment("report").get_template("report.html.j2").render(**context(data))
    with atomic_file(target) as work:
        work.write_text(page, encoding="utf-8")
    return target


def context(data: ReportData) -> dict:
    manifest = data.manifest
    resources_rows = _resources(data)
    return {
        "m": manifest,
        "checks": _checks(data),
        "warnings": data.warnings,
        "notes": data.notes,
        "inputs": _inputs(data),
        "summary": _summary(data, resources_rows),
        "design": _design(data),
        "published": _published(data),
        "layers": _layers(data),
        "stages": _stages(data),
        "resources": resources_rows,
        "bandwidth": _bandwidth(data),
        "balance": _balance(data),
        "errors": _errors(data),
        "figures": _figures(data, resources_rows),
    }


# -- tables -----------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".4g", missing: str = "-") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    return format(value, spec)


def _checks(data: ReportData) -> list[dict]:
    checks = []
    for name, result in (("C simulation", data.csim), ("RTL simulation", data.sim)):
        if result is None:
            checks.append({"name": name, "verdict": "not run", "css": "none", "details": "-"})
            continue
        ok = bool(result["passed"])
        mismatch = result.get("first_mismatch") or result.get("mismatch") or result.get("error")
        details = f"{result['vectors']} vectors bit-exact" if ok else f"first difference: {mismatch}"
        if "simulator" in result:
            details += f" ({result['simulator']}, {result['cycles_per_vector']:.0f} cycles per vector)"
        checks.append({"name": name, "verdict": "pass" if ok else "fail", "css": "pass" if ok else "fail",
                       "details": details})  # fmt: skip
    synth = data.synth
    if synth is None:
        checks.append({"name": "Yosys synthesis", "verdict": "not run", "css": "none", "details": "-"})
    else:
        ok = synth["latches"] == 0
        details = (f"{synth['lut']} LUT, {synth['ff']} FF, {synth['dsp']} DSP, {synth['bram36']} BRAM36, "
                   f"{synth['latches']} latches")  # fmt: skip
        checks.append({"name": "Yosys synthesis", "verdict": "pass" if ok else "fail",
                       "css": "pass" if ok else "fail", "details": details})  # fmt: skip
    return checks


def _inputs(data: ReportData) -> dict:
    vectors = data.vectors
    return {
        "folder": str(data.vectors_folder.relative_to(data.outdir))
        if data.vectors_folder.is_relative_to(data.outdir)
        else str(data.vectors_folder),
        "count": vectors.batch if vectors is not None else 0,
        "source": vectors.source if vectors is not None else "-",
        "run": "the RTL simulation" if data.sim else "the C simulation" if data.csim else "no simulation yet",
    }


def _summary(data: ReportData, resources_rows: list[dict]) -> list[dict]:
    manifest, roofline = data.manifest, data.roofline
    estimate = (manifest.get("estimate") or {}).get("totals", {})
    clock = float(manifest["board"]["clock_mhz"]) * 1e6
    cards = []
    if data.simulated:
        cycles = data.measured_interval
        cards.append({"label": "measured throughput", "value": f"{clock / cycles:,.0f} vectors/s",
                      "note": f"interval {cycles:,.0f} cycles (RTL) at {manifest['board']['clock_mhz']:g} MHz"})  # fmt: skip
    if estimate:
        cards.append({"label": "estimated throughput", "value": f"{clock / estimate['interval']:,.0f} vectors/s",
                      "note": f"interval {estimate['interval']:,.0f} cycles (cost model)"})  # fmt: skip
    if roofline is not None and roofline.measured_vectors_per_s:
        achieved = roofline.useful_macs * roofline.measured_vectors_per_s
        cards.append({"label": "efficiency (design)", "value": _fmt(achieved / roofline.design_roof, ".1%"),
                      "note": "useful MACs/s over this design's roof"})  # fmt: skip
    used = [(row["estimate_pct"], row["name"]) for row in resources_rows if row["estimate_pct"] is not None]
    if used:
        pct, name = max(used)
        cards.append({"label": "largest resource use", "value": f"{pct:.1f}% {name}", "note": "cost model"})
    verdicts = [check for check in _checks(data) if check["verdict"] != "not run"]
    cards.append({"label": "verification",
                  "value": "pass" if verdicts and all(c["verdict"] == "pass" for c in verdicts) else
                  ("fail" if verdicts else "not run"),
                  "note": ", ".join(c["name"] for c in verdicts) or "run fpgagen csim / sim"})  # fmt: skip
    return cards


def _design(data: ReportData) -> list[dict]:
    """Whole-design figures: the cost model's beside the RTL's."""
    manifest, sim = data.manifest, data.sim if data.simulated else None
    totals = (manifest.get("estimate") or {}).get("totals", {})
    mhz = float(manifest["board"]["clock_mhz"])
    edges = manifest["model"]["nnz"]
    interval, mean_latency = totals.get("interval"), totals.get("latency")
    measured_interval = data.measured_interval
    measured_latency = sim["first_output_cycles"] if sim else None
    # beside the RTL's first output, the model on the vector it ran first (the design's own figure
    # is the mean over its calibration vectors, each as a batch's first)
    latency = data.first_result_estimate or mean_latency  # set only beside a simulation that passed
    batch = sim["vectors"] if sim else data.vectors.batch if data.vectors is not None else 1
    run = latency + (batch - 1) * interval if interval and latency else None
    rows = [
        ("target clock (MHz, the board profile's; no place and route here)", mhz, mhz, ".4g"),
        ("interval (cycles per vector, steady state)", interval, measured_interval, ",.0f"),
        ("latency (cycles to the first output)", latency, measured_latency, ",.0f"),
        *(
            [("latency, mean over the calibration vectors (cycles, the design's figure)", mean_latency, None, ",.0f")]
            if latency != mean_latency
            else []
        ),
        (f"cycles for the {batch} vectors simulated", run, sim["total_cycles"] if sim else None, ",.0f"),
        ("time per vector (µs, steady state)", _per(interval, mhz), _per(measured_interval, mhz), ".4g"),
        ("latency (µs)", _per(latency, mhz), _per(measured_latency, mhz), ".4g"),
        ("vectors per second (steady state)", _rate(interval, mhz), _rate(measured_interval, mhz), ",.0f"),
        ("edges per second (nonzero weights x vectors/s)", _times(_rate(interval, mhz), edges),
         _times(_rate(measured_interval, mhz), edges), ".3e"),
    ]  # fmt: skip
    return [{"name": name, "estimate": _fmt(a, spec), "measured": _fmt(b, spec)} for name, a, b, spec in rows]


def _published(data: ReportData) -> list[dict]:
    """This Graph Challenge network's published throughputs beside the design's (none for another
    model)."""
    manifest = data.manifest
    interval = ((manifest.get("estimate") or {}).get("totals") or {}).get("interval")
    mhz = float(manifest["board"]["clock_mhz"])
    edges_per_s = {
        "cost model": _times(_rate(interval, mhz), manifest["model"]["nnz"]),
        "RTL simulation": _times(_rate(data.measured_interval, mhz), manifest["model"]["nnz"]),
    }
    rows = []
    for source, figure in published(manifest["model"]["name"]):
        ratios = {basis: _fmt(value / figure if value else None, ".3g") for basis, value in edges_per_s.items()}
        rows.append({"source": source, "edges_per_s": _fmt(figure, ".3g"), **ratios})
    return rows


def _per(cycles: float | None, mhz: float) -> float | None:
    return cycles / mhz if cycles else None


def _rate(cycles: float | None, mhz: float) -> float | None:
    return mhz * 1e6 / cycles if cycles else None


def _times(value: float | None, factor: float) -> float | None:
    return value * factor if value is not None else None


def _layers(data: ReportData) -> list[dict]:
    performance = {layer.name: layer for layer in data.performance or []}
    rows = []
    for layer in data.manifest["layers"]:
        cycles = (layer.get("estimate") or {}).get("cycles", {})
        found = performance.get(layer["name"])
        rows.append(
            {
                "name": layer["name"],
                "origin": layer["origin"],
                "shape": f"{layer['in_features']} x {layer['out_features']}",
                "nnz": f"{layer['nnz']:,}",
                "density": f"{layer['density']:.4f}",
                "mode": layer["mode"],
                "pes": _pes(layer),
                "units": layer["units"],
                "weights": _encoding(layer["encoding"]),
                "stage": layer["stage"],
                "lane_efficiency": f"{layer['lane_efficiency']:.2f}",
                "useful_macs": _fmt(found.useful_macs if found else None, ",.0f"),
                "bound": _fmt(found.bound if found else None, ",.0f"),
                "bound_kind": (layer.get("estimate") or {}).get("bound", "-"),
                "estimated": _fmt(cycles.get("compute"), ",.0f"),
                "measured": _fmt(found.measured if found else None, ",.0f"),
                "estimate_error": _fmt(found.estimate_error if found else None, "+.1%"),
                "drain": _fmt(found.drain_measured if found else None, ",.0f"),
                "efficiency": _fmt(found.efficiency if found else None, ".3f"),
            }
        )
    return rows


def _encoding(encoding: dict) -> str:
    """How a layer's weights reach its PEs: their bits, an index into a codebook of their values, or
    positions only and the shared weight."""
    if encoding.get("codebook"):
        return f"{encoding['weight_bits']}-bit index, {len(encoding['codebook'])} values"
    if encoding["weight_bits"]:
        return f"{encoding['weight_bits']}-bit"
    return f"positions, x{encoding['scale']}" + ("" if encoding["multiplies"] else " (shift)")


def _stages(data: ReportData) -> list[dict]:
    slowest = max(data.intervals, key=lambda s: s.measured if s.measured is not None else s.estimated, default=None)
    channels = [stage["channels"] for stage in data.manifest["schedule"]["stages"]]
    return [
        {
            "index": stage.index,
            # a sequential stage striped over several memory channels says how many
            "mode": stage.mode + (f", {channels[stage.index]} channels" if channels[stage.index] > 1 else ""),
            "pes": stage.pes,
            "layers": ", ".join(stage.layers),
            "estimated": _fmt(stage.estimated, ",.0f"),
            "measured": _fmt(stage.measured, ",.0f"),
            "bottleneck": stage is slowest,
        }
        for stage in data.intervals
    ]


def _resources(data: ReportData) -> list[dict]:
    totals = (data.manifest.get("estimate") or {}).get("totals", {})
    budget, used = totals.get("budget", {}), totals.get("resources", {})
    synth = (data.synth or {}).get("resources", {})
    rows = []
    for kind in RESOURCE_KINDS:
        have = budget.get(kind)
        estimate, measured = used.get(kind), synth.get(kind)
        rows.append(
            {
                "name": "BRAM36" if kind == "bram" else kind.upper(),
                "budget": _fmt(have, ",.0f"),
                "estimate": _fmt(estimate, ",.4g"),
                "synth": _fmt(measured, ",.4g"),
                "estimate_pct": 100.0 * estimate / have if have and estimate is not None else None,
                "synth_pct": 100.0 * measured / have if have and measured is not None else None,
            }
        )
    return rows


def _bandwidth(data: ReportData) -> dict | None:
    roofline = data.roofline
    if roofline is None:
        return None
    rate = roofline.measured_vectors_per_s or roofline.estimated_vectors_per_s
    used = roofline.offchip_bytes * rate if rate else None
    achieved = roofline.useful_macs * rate if rate else None
    return {
        "basis": "measured" if roofline.measured_vectors_per_s else "estimated",
        "bytes_per_vector": _fmt(roofline.offchip_bytes, ",.0f"),
        "used": _fmt(used / 1e9 if used is not None else None, ".4g"),
        "ports": _fmt(roofline.design_bytes_per_s / 1e9, ".4g"),
        "board": _fmt(roofline.board_bytes_per_s / 1e9, ".4g"),
        "ports_pct": _fmt(used / roofline.design_bytes_per_s if used and roofline.design_bytes_per_s else None, ".1%"),
        "board_pct": _fmt(used / roofline.board_bytes_per_s if used and roofline.board_bytes_per_s else None, ".1%"),
        "useful_macs": _fmt(roofline.useful_macs, ",.0f"),
        "intensity": _fmt(roofline.intensity, ".4g", missing="unbounded (no off-chip traffic)"),
        "achieved": _fmt(achieved, ".4g"),
        "design_roof": _fmt(roofline.design_roof, ".4g"),
        "board_roof": _fmt(roofline.board_roof, ".4g"),
        "design_pct": _fmt(achieved / roofline.design_roof if achieved else None, ".1%"),
        "board_pct_roof": _fmt(achieved / roofline.board_roof if achieved else None, ".1%"),
    }


def _balance(data: ReportData) -> list[dict]:
    return [
        {
            "layer": load.layer,
            "pes": load.pes,
            "mean": _fmt(load.mean / data.vectors.batch, ",.1f"),
            "max": _fmt(float(load.macs.max()) / data.vectors.batch, ",.1f"),
            "min": _fmt(float(load.macs.min()) / data.vectors.batch, ",.1f"),
            "imbalance": _fmt(load.imbalance, ".3f", missing="no work"),
        }
        for load in data.loads or []
    ]


def _errors(data: ReportData) -> list[dict]:
    return [
        {
            "layer": error.layer,
            "format": error.output_format,
            "lsb": _fmt(error.lsb, ".3g"),
            "max_abs": _fmt(error.max_abs, ".3g"),
            "max_lsb": _fmt(error.max_lsb, ".2f"),
            "rms": _fmt(error.rms, ".3g"),
            "max_float": _fmt(error.max_float, ".4g"),
        }
        for error in data.errors or []
    ]


# -- figures ----------------------------------------------------------------------------------------


def _figures(data: ReportData, resources_rows: list[dict]) -> dict:
    estimate = data.manifest.get("estimate") or {}
    reader = (estimate.get("reader") or {}).get("interval")
    figures = {
        "schedule": plots.schedule_plot(data.intervals, reader, len(data.manifest["layers"])),
        "resources": plots.resources_plot(resources_rows) if estimate else None,
        "cycles": plots.cycles_plot(data.performance) if data.performance else None,
        "roofline": plots.roofline_plot(data.roofline) if data.roofline else None,
        "balance": plots.balance_plot(data.loads) if data.loads and any(l.mean > 0 for l in data.loads) else None,
        "errors": plots.fixed_point_plot(data.errors) if data.errors else None,
        "sparsity": plots.sparsity_plot(data.model) if data.model is not None else None,
    }
    return figures


def _pes(layer: dict) -> str:
    """A layer's PEs as the report shows them: K x P when private, and the drain's lanes when it
    takes fewer than P a cycle (both absent from manifests written before them)."""
    pes = f"{layer['units']} x {layer['pes']}" if layer.get("private") else str(layer["pes"])
    lanes = layer.get("drain_lanes")
    return f"{pes}, drain {lanes}" if lanes else pes
