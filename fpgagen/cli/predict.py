"""`fpgagen predict`: run the golden model."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..arrays import read_array, write_array
from ..frontend import load_model
from ..golden import GoldenModel, flatten_inputs
from ..numerics import parse_precision
from ..passes.quantize import quantize
from . import app
from .common import calib_option, err, model_argument, plural, precision_option


@app.command()
@model_argument
@click.option("--inputs", "inputs_path", required=True, type=click.Path(path_type=Path), help="Inputs (.npy).")
@click.option(
    "--out", "out_path", required=True, type=click.Path(path_type=Path), help="Where to write outputs (.npy)."
)
@precision_option
@calib_option
def predict(model: Path, inputs_path: Path, out_path: Path, precision: str, calib: Path | None) -> None:
    """Run MODEL on INPUTS with the golden model (the reference every design must match).

    In fixed point (the default) the outputs are exactly what the generated hardware computes,
    converted back to float. Use --precision float for the unquantized reference.
    """
    ir = load_model(model)
    chosen = parse_precision(precision)
    x = flatten_inputs(ir, read_array(inputs_path), str(inputs_path))
    if chosen is not None:
        calib_inputs = None if calib is None else flatten_inputs(ir, read_array(calib), str(calib))
        ir = quantize(ir, chosen, calib_inputs)
    start = time.perf_counter()
    y = GoldenModel(ir).predict(x)
    seconds = time.perf_counter() - start
    write_array(out_path, y)
    err.print(
        f"{model.name}: {plural(x.shape[0], 'input')} through {plural(len(ir.layers), 'layer')} in {seconds:.3f} s "
        f"({precision}); wrote {out_path} with shape {y.shape}"
    )
