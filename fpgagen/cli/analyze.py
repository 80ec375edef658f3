"""`fpgagen analyze`: sparsity, PE balance, storage and fixed-point error of a model."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..arrays import read_calibration
from ..frontend import load_model
from ..passes.analyze import Analysis, Spread, analyze
from . import app
from .common import model_argument, out, plural, precision_option, print_table


@app.command("analyze")
@model_argument
@click.option(
    "--calib",
    type=click.Path(path_type=Path),
    help="Representative inputs (.npy, one sample per row): measures how often each activation is "
    "nonzero and how far fixed point drifts from float on them.",
)
@click.option(
    "--pes",
    type=int,
    default=16,
    show_default=True,
    help="Processing elements the outputs of each layer are interleaved over (output j on PE j mod P).",
)
@precision_option(float_too=True)
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON on stdout instead of a table.")
def analyze_command(model: Path, calib: Path | None, pes: int, precision: str, as_json: bool) -> None:
    """Report, per layer of MODEL, what its sparsity costs on an engine of P PEs.

    Shape, nonzeros and density; nonzeros per output neuron (fan-in) and per input (fan-out);
    load imbalance (busiest PE over the mean PE); cycles (lock-step beats per inference) and
    lane efficiency (useful multiply-accumulates over P times the cycles); weight storage dense,
    as CSR and in the engine's format, with weights of the precision's width.

    Without --calib every input counts as nonzero. With it, each layer's input activation
    density is measured on those inputs, cycles count each row as often as its input is
    nonzero, and the fixed-point outputs are compared with the float ones (largest absolute
    error, fraction of inputs with the same argmax).
    """
    ir = load_model(model)
    result = analyze(ir, pes=pes, calib=read_calibration(ir, calib), precision=precision)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
        return
    for table in _tables(result):
        print_table(table)
    if result.fixed_point is not None:
        fp = result.fixed_point
        out.print(
            f"{result.precision} against float on {plural(fp.inputs, 'calibration input')}: max abs error "
            f"{fp.max_abs_error:.4g}, argmax agreement {fp.argmax_agreement:.2%}"
        )


def _tables(result: Analysis) -> tuple[Table, Table]:
    """Two tables, so each fits a terminal: the layers' sparsity, then what the engine makes of it."""
    title = f"{result.model}: {plural(result.pes, 'PE')}, {result.weight_bits}-bit weights ({result.precision})"
    if result.calib_inputs is not None:
        title += f", {plural(result.calib_inputs, 'calibration input')}"
    sparsity = _table(title, ["layer", "shape", "nnz", "density", "fan-in", "fan-out", "act. density"])
    sparsity.caption = "fan-in: nonzeros per output, fan-out: per input (min/mean/max)"
    engine = _table(None, ["layer", "imbalance", "lane eff.", "cycles", "dense", "CSR", "engine"])
    for layer in result.layers:
        sparsity.add_row(
            layer.name,
            f"{layer.in_features}x{layer.out_features}",
            str(layer.nnz),
            f"{layer.density:.4f}",
            _spread(layer.fan_in),
            _spread(layer.fan_out),
            _percent(layer.activation_density),
        )
        engine.add_row(
            layer.name,
            _ratio(layer.pe_imbalance),
            _percent(layer.lane_efficiency),
            f"{layer.cycles:,.0f}",
            _size(layer.dense_bytes),
            _size(layer.csr_bytes),
            _size(layer.engine_bytes),
        )
    total = result.totals
    sparsity.add_section()
    sparsity.add_row("total", "", str(total.nnz), f"{total.density:.4f}", "", "", "")
    engine.add_section()
    engine.add_row(
        "total", "", _percent(total.lane_efficiency), f"{total.cycles:,.0f}",
        _size(total.dense_bytes), _size(total.csr_bytes), _size(total.engine_bytes),
    )  # fmt: skip
    return sparsity, engine


def _table(title: str | None, columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="left" if column == "layer" else "right")
    return table


def _spread(spread: Spread) -> str:
    return f"{spread.min}/{spread.mean:.1f}/{spread.max}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count:g} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"
