"""The report's figures, drawn with matplotlib and embedded in the page as data URIs.

Each function takes figures already computed (fpgagen.report.data) and returns one image: SVG for
charts (sharp at any zoom, text drawn as paths so the page needs no fonts), PNG for the sparsity
pictures (rasters). No pyplot: every figure is its own object, so nothing global is touched.
"""

from __future__ import annotations

import base64
import io
import math

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ..ir import Model
from ..performance import LayerPerformance
from .data import Roofline
from .metrics import FixedPointError, PeLoad, StageInterval, sparsity_picture

MODE_COLORS = {"dataflow": "#4c72b0", "sequential": "#dd8452"}
MEASURED, ESTIMATED, BOUND, ALARM = "#2b8a3e", "#9aa5b1", "#495057", "#c92a2a"
_STYLE = {
    "svg.fonttype": "path",
    "svg.hashsalt": "fpgagen",  # the same figure gives the same file
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def _uri(figure: Figure, kind: str = "svg") -> str:
    buffer = io.BytesIO()
    metadata = {"Date": None} if kind == "svg" else {"Software": None}
    figure.savefig(buffer, format=kind, bbox_inches="tight", dpi=96, metadata=metadata)
    mime = "image/svg+xml" if kind == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def _figure(width: float, height: float, **kwargs) -> Figure:
    return Figure(figsize=(width, height), layout="constrained", **kwargs)


def schedule_plot(intervals: list[StageInterval], reader_interval: float | None, layers: int) -> str:
    """Top: the stages over the layers, by mode, with their PEs. Bottom: each stage's interval
    (cycles per vector), the cost model's and the RTL's, the bottleneck marked."""
    with matplotlib.rc_context(_STYLE):
        rows = min(len(intervals), 16)  # past 16 stages the rows get thinner, not the figure taller
        figure = _figure(9, 2.2 + 0.12 * rows + 2.4)
        top, bottom = figure.subplots(2, 1, height_ratios=[1 + 0.06 * rows, 1.2])
        first = 0
        for stage in intervals:
            span = len(stage.layers)
            top.barh(stage.index, span - 0.15, left=first - 0.5 + 0.075, color=MODE_COLORS[stage.mode], height=0.7)
            if len(intervals) <= 32:
                top.text(first - 0.5 + span / 2, stage.index, f"P={stage.pes}", ha="center", va="center",
                         color="white", fontsize=7)  # fmt: skip
            first += span
        top.set_xlim(-0.5, layers - 0.5)
        top.set_ylim(len(intervals) - 0.5, -0.5)
        top.set_xlabel("layer")
        top.set_ylabel("stage")
        top.xaxis.set_major_locator(MaxNLocator(integer=True))
        top.yaxis.set_major_locator(MaxNLocator(integer=True))
        top.legend(handles=[Patch(color=color, label=mode) for mode, color in MODE_COLORS.items()], loc="upper right",
                   fontsize=7, frameon=False)  # fmt: skip

        names = (["reader"] if reader_interval else []) + [str(stage.index) for stage in intervals]
        estimated = ([reader_interval] if reader_interval else []) + [stage.estimated for stage in intervals]
        measured = ([None] if reader_interval else []) + [stage.measured for stage in intervals]
        x = np.arange(len(names))
        has_measured = any(value is not None for value in measured)
        width = 0.4 if has_measured else 0.7
        bottom.bar(x - (width / 2 if has_measured else 0), estimated, width, color=ESTIMATED, label="cost model")
        if has_measured:
            bottom.bar(x + width / 2, [value or 0 for value in measured], width, color=MEASURED, label="RTL (counters)")
        slowest = int(np.argmax([m if m is not None else e for m, e in zip(measured, estimated)]))
        bottom.annotate("bottleneck", (x[slowest], max(estimated[slowest], measured[slowest] or 0)),
                        xytext=(0, 8), textcoords="offset points", ha="center", color=ALARM, fontsize=8,
                        arrowprops={"arrowstyle": "-|>", "color": ALARM})  # fmt: skip
        bottom.set_xticks(
            x, names if len(names) <= 40 else [name if i % 10 == 0 else "" for i, name in enumerate(names)]
        )
        bottom.set_xlabel("stage")
        bottom.set_ylabel("interval (cycles per vector)")
        bottom.set_ylim(0, max(max(estimated), max((m or 0) for m in measured)) * 1.25)
        bottom.legend(fontsize=7, frameon=False, loc="upper left")
        return _uri(figure)


def cycles_plot(performance: list[LayerPerformance]) -> str:
    """Per layer: busy cycles the RTL counted, the cost model's compute cycles, the lower bound."""
    with matplotlib.rc_context(_STYLE):
        figure = _figure(9, 3.4)
        axes = figure.subplots()
        x = np.arange(len(performance))
        marker = "o" if len(performance) <= 40 else None
        axes.plot(
            x, [layer.measured for layer in performance], marker=marker, color=MEASURED, label="measured busy (RTL)"
        )
        axes.plot(x, [layer.estimated for layer in performance], marker=marker, ls="--", color=ESTIMATED,
                  label="estimated compute (cost model)")  # fmt: skip
        axes.plot(x, [layer.bound for layer in performance], marker=marker, ls=":", color=BOUND,
                  label="lower bound: max(useful MACs / P, off-chip bytes / bytes per cycle)")  # fmt: skip
        values = [v for layer in performance for v in (layer.measured, layer.estimated, layer.bound) if v > 0]
        if values and max(values) / min(values) > 50:
            axes.set_yscale("log")
        else:
            axes.set_ylim(bottom=0)
        axes.set_xticks(x, [layer.name for layer in performance], rotation=90 if len(x) > 12 else 0)
        if len(x) > 40:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=20))
        axes.set_ylabel("cycles per vector")
        axes.legend(fontsize=7, frameon=False)
        return _uri(figure)


def roofline_plot(roofline: Roofline) -> str:
    """Useful MACs per second against useful MACs per off-chip byte: the board's and the design's
    ceilings, and the design's point, measured and estimated."""
    with matplotlib.rc_context(_STYLE):
        figure = _figure(9, 4.2)
        axes = figure.subplots()
        ridges = [
            macs / bytes_
            for macs, bytes_ in ((roofline.board_macs_per_s, roofline.board_bytes_per_s),
                                 (roofline.design_macs_per_s, roofline.design_bytes_per_s))
            if bytes_ > 0
        ]  # fmt: skip
        on_chip = math.isinf(roofline.intensity)
        anchors = ridges + ([] if on_chip else [roofline.intensity])
        low = min(anchors, default=1.0) / 30
        high = max(anchors, default=1.0) * 30
        x = np.geomspace(low, high, 200)
        for name, macs, bytes_, style in (
            ("board", roofline.board_macs_per_s, roofline.board_bytes_per_s, "-"),
            ("this design", roofline.design_macs_per_s, roofline.design_bytes_per_s, "--"),
        ):
            roof = np.minimum(macs, bytes_ * x) if bytes_ > 0 else np.full_like(x, macs)
            axes.plot(x, roof, style, color=BOUND, label=f"{name}: {macs:.3g} MAC/s" +
                      (f", {bytes_ / 1e9:.3g} GB/s" if bytes_ > 0 else ", no off-chip port"))  # fmt: skip
        point_x = high if on_chip else roofline.intensity
        marker = ">" if on_chip else "o"
        for vectors_per_s, label, face in (
            (roofline.measured_vectors_per_s, "measured (RTL cycles)", MEASURED),
            (roofline.estimated_vectors_per_s, "estimated (cost model)", "none"),
        ):
            if vectors_per_s:
                axes.plot(point_x, roofline.useful_macs * vectors_per_s, marker, markersize=9, color=MEASURED,
                          markerfacecolor=face, ls="none", label=label)  # fmt: skip
        if on_chip:
            axes.annotate("every weight on chip:\nno off-chip traffic", (point_x, roofline.useful_macs *
                          (roofline.measured_vectors_per_s or roofline.estimated_vectors_per_s or 1.0)),
                          xytext=(-14, 0), textcoords="offset points", ha="right", va="center", fontsize=7)  # fmt: skip
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("operational intensity (useful MACs per off-chip byte)")
        axes.set_ylabel("useful MACs per second")
        axes.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        return _uri(figure)


def resources_plot(rows: list[dict]) -> str:
    """Each resource as a percentage of the board's budget: the cost model's and Yosys's."""
    with matplotlib.rc_context(_STYLE):
        figure = _figure(7, 2.8)
        axes = figure.subplots()
        y = np.arange(len(rows))
        series = [("cost model", "estimate_pct", ESTIMATED), ("Yosys", "synth_pct", MEASURED)]
        height = 0.38
        for offset, (label, key, color) in zip((-height / 2, height / 2), series):
            values = [row[key] if row[key] is not None else 0.0 for row in rows]
            bars = axes.barh(y + offset, values, height, color=color, label=label)
            axes.bar_label(bars, [f"{row[key]:.1f}%" if row[key] is not None else "" for row in rows],
                           padding=2, fontsize=7)  # fmt: skip
        axes.axvline(100, color=ALARM, lw=1)
        axes.set_yticks(y, [row["name"] for row in rows])
        axes.invert_yaxis()
        axes.set_xlabel("% of the board's budget")
        used = [row[key] for row in rows for _, key, _ in series if row[key] is not None]
        axes.set_xlim(0, max(110.0, max(used, default=0) * 1.2) if max(used, default=0) > 100 else
                      max(1.0, max(used, default=0) * 1.35))  # fmt: skip
        axes.legend(fontsize=7, frameon=False, loc="lower right")
        return _uri(figure)


def balance_plot(loads: list[PeLoad]) -> str:
    """Left: every PE's useful MACs over its layer's mean PE. Right: the busiest PE over the mean."""
    with matplotlib.rc_context(_STYLE | {"axes.grid": False}):
        width = max(load.pes for load in loads)
        grid = np.full((len(loads), width), np.nan)
        for row, load in enumerate(loads):
            if load.mean > 0:
                grid[row, : load.pes] = load.macs / load.mean
        figure = _figure(9, 1.6 + 0.18 * min(len(loads), 24))
        left, right = figure.subplots(1, 2, width_ratios=[3, 1], sharey=True)
        colors = matplotlib.colormaps["RdBu_r"].with_extremes(bad="#ced4da")  # grey: a PE the layer lacks
        image = left.imshow(grid, aspect="auto", cmap=colors, vmin=0.0, vmax=2.0, interpolation="nearest")
        left.set_xlabel("PE")
        left.set_ylabel("layer")
        left.set_yticks(np.arange(len(loads)), [load.layer for load in loads] if len(loads) <= 40 else
                        [load.layer if i % 10 == 0 else "" for i, load in enumerate(loads)])  # fmt: skip
        figure.colorbar(image, ax=left, label="useful MACs / mean PE", shrink=0.8)
        imbalance = [load.imbalance or 0.0 for load in loads]
        right.barh(
            np.arange(len(loads)), imbalance, height=0.7, color=[ALARM if v > 1.25 else ESTIMATED for v in imbalance]
        )
        right.axvline(1.0, color=BOUND, lw=1)
        right.set_xlabel("busiest PE / mean")
        right.grid(axis="x", alpha=0.3)
        return _uri(figure)


def fixed_point_plot(errors: list[FixedPointError]) -> str:
    """Per layer: the largest and the RMS error against float64, in units of the layer's output LSB."""
    with matplotlib.rc_context(_STYLE):
        figure = _figure(9, 3.2)
        axes = figure.subplots()
        x = np.arange(len(errors))
        axes.bar(x, [e.max_lsb for e in errors], 0.6, color=ESTIMATED, label="largest |error|")
        axes.plot(x, [e.rms / e.lsb for e in errors], "o" if len(x) <= 40 else "-", color=MEASURED,
                  label="RMS error")  # fmt: skip
        axes.axhline(0.5, color=ALARM, lw=1, ls="--", label="half an LSB: one rounding")
        axes.set_yscale("symlog", linthresh=1.0)
        axes.set_ylim(0, max([1.0, *(e.max_lsb for e in errors)]) * 1.6)
        axes.set_xticks(x, [e.layer for e in errors], rotation=90 if len(x) > 12 else 0)
        if len(x) > 40:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=20))
        axes.set_ylabel("error (LSBs of the output format)")
        axes.legend(fontsize=7, frameon=False)
        return _uri(figure)


def sparsity_plot(model: Model, columns: int = 6) -> str:
    """Every layer's weight matrix, inputs down and outputs across, as the fraction of nonzeros per
    block (dark is dense): a small picture each, PNG."""
    with matplotlib.rc_context(_STYLE | {"axes.grid": False}):
        count = len(model.layers)
        columns = min(columns, count)
        rows = -(-count // columns)
        figure = _figure(1.6 * columns, 1.75 * rows)
        axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
        for axis, layer in zip(axes, model.layers):
            picture = sparsity_picture(layer)
            axis.imshow(picture, cmap="Greys", vmin=0.0, vmax=max(float(picture.max()), 1e-12),
                        interpolation="nearest", aspect="auto")  # fmt: skip
            axis.set_title(f"{layer.name}\n{layer.in_features}x{layer.out_features}, {layer.density:.2%}", fontsize=7)
            axis.set_xticks([])
            axis.set_yticks([])
        for axis in axes[count:]:
            axis.set_axis_off()
        return _uri(figure, "png")
