"""`fpgagen share`: cluster each layer's weights into a few shared values (EIE's weight sharing)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
from rich.table import Table

from ..frontend import load_model
from ..frontend.onnx_writer import write_onnx
from ..ir import Layer, Model
from ..outdir import check_output_model
from ..passes.share import MAX_VALUES, share_weights
from . import app
from .common import err, json_option, model_argument, output_model_option, print_table


@app.command()
@model_argument
@output_model_option("model with shared weights")
@click.option(
    "--values",
    required=True,
    type=int,
    help=f"Distinct nonzero weights each layer keeps at most, 2 to {MAX_VALUES}: 16 gives a 4-bit index.",
)
@json_option
def share(model: Path, output: Path, values: int, as_json: bool) -> None:
    """Cluster the weights of MODEL (ONNX or a Graph Challenge folder) into at most VALUES shared
    values per layer and write the result to OUTPUT as ONNX.

    Each nonzero weight becomes the mean of its cluster (k-means on the positive and on the
    negative weights apart: no weight changes sign or becomes zero). `fpgagen compile` then gives
    each dataflow layer of few values the codebook encoding: its weight slots carry an index of
    bits(VALUES - 1) bits instead of the weight. Prints each layer's distinct weights before and
    after and how far the weights moved. Sharing changes what the network computes (EIE fine-tunes
    the shared values by retraining; this command does not): compare `fpgagen predict` of MODEL and
    of OUTPUT on your data before you build from OUTPUT.
    """
    check_output_model(output, [model])
    ir = load_model(model)
    shared = share_weights(ir, values)
    write_onnx(shared, output)
    rows = [_row(old, new) for old, new in zip(ir.layers, shared.layers)]
    if as_json:
        click.echo(json.dumps({"model": ir.name, "values": values, "output": str(output), "layers": rows}, indent=2))
    else:
        print_table(_table(ir, values, rows))
    err.print(f"{model.name}: at most {values} weight values per layer; wrote {output}")


def _row(before: Layer, after: Layer) -> dict:
    """A layer's distinct weights before and after, and the largest and the RMS change of a weight
    relative to the layer's largest weight."""
    old, new = before.weights.data, after.weights.data
    scale = float(np.abs(old).max(initial=0.0)) or 1.0
    moved = np.abs(new - old) / scale
    return {
        "name": before.name,
        "nnz": before.nnz,
        "values_before": int(np.unique(old).size),
        "values_after": int(np.unique(new).size),
        "max_change": float(moved.max(initial=0.0)),
        "rms_change": float(np.sqrt(np.mean(moved**2))) if moved.size else 0.0,
    }


def _table(model: Model, values: int, rows: list[dict]) -> Table:
    table = Table(title=f"{model.name}: weights shared, {values} values per layer at most")
    for column in ("layer", "nonzeros", "values before", "values after", "largest change", "RMS change"):
        table.add_column(column, justify="left" if column == "layer" else "right")
    for row in rows:
        table.add_row(
            row["name"],
            str(row["nnz"]),
            str(row["values_before"]),
            str(row["values_after"]),
            f"{row['max_change']:.2%}",
            f"{row['rms_change']:.2%}",
        )
    return table
