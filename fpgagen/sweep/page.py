"""DIR/sweep.html: Pareto plots (throughput against resources, and against error) and a table of
every point, in one self-contained page: the plots are inline SVG drawn by matplotlib, with text
as paths, and the page loads nothing and runs no script.

Every plotted figure is the cost model's estimate, so all points compare alike (the table also
shows what C or RTL simulation and Yosys found). Text in the plots is fpgagen's own (point ids,
board and policy names checked when the sweep began); everything else reaches the page through
jinja2's autoescaping.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..atomic import atomic_file
from ..templating import environment
from .pareto import pareto_front
from .point import CHECK_FAILED, DOES_NOT_FIT, ERROR, OK
from .records import PAGE

_MARKERS = {"auto": "o", "dataflow": "s", "sequential": "^"}
_STATUS_CSS = {OK: "pass", CHECK_FAILED: "fail", DOES_NOT_FIT: "none", ERROR: "fail"}


def write_page(outdir: Path, log: dict) -> Path:
    """Write DIR/sweep.html from the contents of DIR/sweep.json; return its path."""
    records = log["records"]
    built = [r for r in records if r["estimate"] is not None]
    throughput = np.array([r["estimate"]["throughput"] for r in built])
    utilization = np.array([100 * r["estimate"]["utilization"] for r in built])
    on_resources = pareto_front(throughput, utilization) if built else np.array([], dtype=bool)
    measured = [r for r in built if r["error"] is not None]
    error = np.array([r["error"]["max_abs"] for r in measured])
    on_error = pareto_front(np.array([r["estimate"]["throughput"] for r in measured]), error) if measured else []
    fronts = {r["id"]: [] for r in records}
    for record, front in zip(built, on_resources):
        if front:
            fronts[record["id"]].append("resources")
    for record, front in zip(measured, on_error):
        if front:
            fronts[record["id"]].append("error")
    plots = []
    if built:
        plots.append(_plot(built, utilization, on_resources, "scarcest resource (% of the board)"))
    if measured:
        plots.append(_plot(measured, error, np.asarray(on_error), "largest absolute error against float"))
    page = (
        environment("report")
        .get_template("sweep.html.j2")
        .render(log=log, summary=_summary(records), plots=plots, rows=[_row(r, fronts[r["id"]]) for r in records])
    )
    target = Path(outdir) / PAGE
    with atomic_file(target) as work:
        work.write_text(page, encoding="utf-8")
    return target


def _plot(records: list[dict], x: np.ndarray, front: np.ndarray, xlabel: str) -> Markup:
    """Throughput (log) against `x` (log, or symmetric-log from 0 when some x is 0: an exact design
    has error 0), one colour per board, one marker per policy, the front outlined in black."""
    y = np.array([r["estimate"]["throughput"] for r in records])
    boards = list(dict.fromkeys(r["settings"]["board"] for r in records))
    colours = {board: f"C{index % 10}" for index, board in enumerate(boards)}
    figure = Figure(figsize=(6.4, 4.4))
    axes = figure.add_subplot()
    labels: dict[tuple[float, float], list[str]] = {}  # the front's ids, one label per place
    for record, xi, yi, on in zip(records, x, y, front):
        settings = record["settings"]
        axes.scatter(
            xi, yi, s=64 if on else 30, marker=_MARKERS[settings["schedule"]], color=colours[settings["board"]],
            edgecolors="black" if on else "none", linewidths=1.2, alpha=1.0 if on else 0.55, zorder=3,
        )  # fmt: skip
        if on:
            labels.setdefault((xi, yi), []).append(record["id"])
    for place, ids in labels.items():
        axes.annotate(", ".join(ids), place, textcoords="offset points", xytext=(5, 4), fontsize=7)
    order = np.argsort(x[front])
    axes.step(x[front][order], y[front][order], where="post", color="black", linewidth=0.8, linestyle="--")
    axes.set_yscale("log")
    if np.all(x > 0):
        axes.set_xscale("log")
    else:
        positive = x[x > 0]
        axes.set_xscale("symlog", linthresh=float(positive.min()) if positive.size else 1.0)
        axes.set_xlim(left=0)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("throughput (vectors/s, cost model)")
    axes.grid(True, which="major", linewidth=0.3)
    handles = [Line2D([], [], marker="o", linestyle="", color=colours[b], label=_plain(b)) for b in boards]
    policies = list(dict.fromkeys(r["settings"]["schedule"] for r in records))
    handles += [Line2D([], [], marker=_MARKERS[p], linestyle="", color="grey", label=p) for p in policies]
    handles.append(
        Line2D([], [], color="black", linestyle="--", marker="o", markerfacecolor="none", label="Pareto front")
    )
    axes.legend(handles=handles, fontsize=7, loc="best")
    figure.tight_layout()
    svg = io.StringIO()
    figure.savefig(svg, format="svg", metadata={"Date": None})
    text = svg.getvalue()
    return Markup(text[text.index("<svg") :])  # matplotlib's own SVG, its text drawn as paths


def _plain(text: str) -> str:
    """Text as matplotlib shows it literally: a $ would start mathematics."""
    return text.replace("$", r"\$")


def _summary(records: list[dict]) -> dict:
    counts = {status: 0 for status in (OK, CHECK_FAILED, DOES_NOT_FIT, ERROR)}
    for record in records:
        counts[record["status"]] += 1
    return counts


def _row(record: dict, fronts: list[str]) -> dict:
    estimate, error = record["estimate"], record["error"]
    checks = [_check_text(name, check) for name, check in record["checks"].items()]
    return {
        "id": record["id"],
        "label": record["label"],
        "status": record["status"],
        "css": _STATUS_CSS[record["status"]],
        "throughput": f"{estimate['throughput']:.4g}" if estimate else "-",
        "latency": f"{estimate['latency_us']:.4g}" if estimate else "-",
        "utilization": f"{100 * estimate['utilization']:.1f}% {estimate['scarcest'].upper()}" if estimate else "-",
        "error": f"{error['max_abs']:.3g}" if error else "-",
        "agreement": f"{100 * error['argmax_agreement']:.1f}%" if error else "-",
        "checks": "; ".join(checks) or "-",
        "seconds": f"{record['seconds']['total']:.1f}" if "total" in record["seconds"] else "-",
        "front": ", ".join(fronts),
        "reason": record["reason"] or "",
    }


def _check_text(name: str, check: dict) -> str:
    verdict = "pass" if check["passed"] else "FAIL"
    if name == "sim" and check["passed"]:
        return f"sim {verdict}, {check['cycles_per_vector']:.0f} cycles/vector"
    if name == "synth":
        used = check["resources"]
        latches = "" if check["passed"] else f", {check['latches']} latches"
        return f"synth {verdict}: {used['lut']} LUT, {used['ff']} FF, {used['dsp']} DSP, {used['bram']} BRAM36{latches}"
    return f"{name} {verdict}"
