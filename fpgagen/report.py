"""OUTDIR/report.html: the manifest, the verification results and the measured cycles in one page.

Every value that came from a model file (layer origins, names) is HTML-escaped by jinja2's
autoescaping; the page has no scripts.
"""

from __future__ import annotations

import json
from pathlib import Path

from .manifest import read_manifest
from .performance import layer_performance
from .templating import environment

RESULT_FILES = {"C simulation": "csim_results.json", "RTL simulation": "sim_results.json",
                "Yosys synthesis": "synth_results.json"}  # fmt: skip


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _checks(found: dict) -> list[dict]:
    checks = []
    for name, filename in RESULT_FILES.items():
        result = found[filename]
        if result is None:
            checks.append({"name": name, "verdict": "not run", "css": "none", "details": f"no {filename}"})
        elif name == "Yosys synthesis":
            ok = result["latches"] == 0
            details = f"{result['lut']} LUT, {result['ff']} FF, {result['dsp']} DSP, {result['bram36']} BRAM36, {result['latches']} latches"
            checks.append(
                {"name": name, "verdict": "pass" if ok else "fail", "css": "pass" if ok else "fail", "details": details}
            )
        else:
            ok = result["passed"]
            mismatch = result.get("first_mismatch") or result.get("mismatch")
            details = f"{result['vectors']} vectors bit-exact" if ok else f"first mismatch: {mismatch}"
            if "simulator" in result:
                details += f" ({result['simulator']}, {result['cycles_per_vector']:.0f} cycles per vector)"
            checks.append(
                {"name": name, "verdict": "pass" if ok else "fail", "css": "pass" if ok else "fail", "details": details}
            )
    return checks


def _layers(manifest: dict, sim: dict | None) -> list[dict]:
    measured = {entry["layer"]: entry for entry in (sim or {}).get("layers", [])}
    rows = []
    for layer in manifest["layers"]:
        estimate = layer.get("estimate") or {}
        cycles = estimate.get("cycles", {})
        counters = measured.get(layer["name"])
        rows.append(
            layer
            | {
                "compute": f"{cycles['compute']:.0f}" if cycles else "-",
                "drain": f"{cycles['drain']:.0f}" if cycles else "-",
                "bound": estimate.get("bound", "-"),
                "busy": f"{counters['busy_per_vector']:.0f}" if counters else "-",
                "measured_drain": f"{counters['drain_per_vector']:.0f}" if counters else "-",
                "efficiency": "-",
            }
        )
    return rows


def write_report(outdir: Path) -> Path:
    """Write OUTDIR/report.html from what OUTDIR holds; return its path."""
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    found = {filename: _load(outdir / filename) for filename in RESULT_FILES.values()}
    sim = found["sim_results.json"]
    layers = _layers(manifest, sim)
    if sim is not None and sim.get("passed"):
        for row, layer in zip(layers, layer_performance(outdir)):
            row["efficiency"] = f"{layer.efficiency:.3f}"
    estimate = manifest.get("estimate") or {}
    totals = estimate.get("totals", {})
    clock = manifest["board"]["clock_mhz"] * 1e6
    design = {
        "interval": f"{totals['interval']:.0f}" if totals else "-",
        "latency": f"{totals['latency']:.0f}" if totals else "-",
        "throughput": f"{totals['throughput']['steady_vectors_per_s']:.4g}" if totals else "-",
        "measured_interval": f"{sim['cycles_per_vector']:.0f}" if sim else "-",
        "measured_latency": f"{sim['first_output_cycles']}" if sim else "-",
        "measured_throughput": f"{clock / sim['cycles_per_vector']:.4g}" if sim else "-",
    }
    synth = found["synth_results.json"]
    budget, used = totals.get("budget", {}), totals.get("resources", {})
    resource_rows = [
        {
            "name": name.upper(),
            "budget": budget.get(name, "-"),
            "estimate": used.get(name, "-"),
            "synth": synth["resources"][name] if synth else "-",
        }
        for name in ("dsp", "bram", "uram", "lut", "ff")
    ]
    page = (
        environment("report")
        .get_template("report.html.j2")
        .render(m=manifest, checks=_checks(found), layers=layers, design=design, resources=resource_rows)
    )
    target = outdir / "report.html"
    target.write_text(page, encoding="utf-8")
    return target
