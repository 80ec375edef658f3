"""`fpgagen prune`: zero weights by magnitude, unstructured or in a hardware-friendly pattern."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..frontend import load_model
from ..frontend.onnx_writer import write_onnx
from ..ir import Model
from ..outdir import check_output_model
from ..passes.prune import parse_method
from ..passes.prune import prune as prune_model
from . import app
from .common import err, json_option, model_argument, output_model_option, print_table


@app.command()
@model_argument
@output_model_option("pruned model")
@click.option(
    "--sparsity",
    type=float,
    help="Fraction of each layer's weights that ends up zero, in [0, 1). Required for magnitude and "
    "balanced:P; nm:N:M implies 1 - N/M, and a different value is refused.",
)
@click.option(
    "--method",
    default="magnitude",
    show_default=True,
    help="magnitude: the smallest weights of each layer. nm:N:M: the N largest of every M consecutive "
    "inputs of each output neuron (nm:2:4 is NVIDIA's pattern). balanced:P: the same number of "
    "weights for every input row on each of P PEs, so no PE lane idles.",
)
@json_option
def prune(model: Path, output: Path, sparsity: float | None, method: str, as_json: bool) -> None:
    """Prune MODEL (ONNX or a Graph Challenge folder) and write the result to OUTPUT as ONNX.

    Weights are kept by magnitude; among equal magnitudes the first in row-major order of W
    (inputs by outputs) wins. With magnitude, existing zeros count towards the sparsity and a
    layer already sparser than asked is left as it is. With balanced:P every (input, PE) slice
    keeps round((1 - S) * out_features / P) weights, capped at floor(out_features / P) so that
    the shorter slices fit too; a slice with fewer nonzeros than that is an error. Prints the
    nonzeros of each layer before and after.
    """
    chosen = parse_method(method)  # before loading, so a typo fails fast
    check_output_model(output, [model])
    ir = load_model(model)
    pruned = prune_model(ir, sparsity, chosen)
    write_onnx(pruned, output)
    if as_json:
        click.echo(json.dumps(_document(ir, pruned, chosen.describe(), output), indent=2))
    else:
        print_table(_comparison(ir, pruned, chosen.describe()))
    err.print(f"{model.name}: {ir.nnz} -> {pruned.nnz} nonzero weights; wrote {output}")


def _document(before: Model, after: Model, method: str, output: Path) -> dict:
    weights = sum(layer.in_features * layer.out_features for layer in after.layers)
    return {
        "model": before.name,
        "method": method,
        "output": str(output),
        "layers": [
            {
                "name": old.name,
                "in_features": old.in_features,
                "out_features": old.out_features,
                "nnz_before": old.nnz,
                "nnz_after": new.nnz,
                "density_after": new.density,
            }
            for old, new in zip(before.layers, after.layers)
        ],
        "total": {"nnz_before": before.nnz, "nnz_after": after.nnz, "density_after": after.nnz / weights},
    }


def _comparison(before: Model, after: Model, method: str) -> Table:
    table = Table(title=f"{before.name} pruned with {method}")
    for column in ("layer", "shape", "nonzeros before", "nonzeros after", "density after"):
        table.add_column(column, justify="left" if column in ("layer", "shape") else "right")
    for old, new in zip(before.layers, after.layers):
        table.add_row(
            old.name, f"{old.in_features} x {old.out_features}", str(old.nnz), str(new.nnz), f"{new.density:.4f}"
        )
    table.add_section()
    weights = sum(layer.in_features * layer.out_features for layer in after.layers)
    table.add_row("total", "", str(before.nnz), str(after.nnz), f"{after.nnz / weights:.4f}")
    return table
