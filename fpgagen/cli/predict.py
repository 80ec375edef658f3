"""`fpgagen predict`: run the golden model of a model file, or of a compiled design."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..accuracy import CALIBRATION, measure_accuracy
from ..arrays import NPY_MAGIC, read_array, read_calibration, write_array
from ..atomic import absolute
from ..design import model_from_manifest
from ..errors import FpgagenError
from ..frontend import load_model
from ..frontend.graphchallenge_tsv import holds_layer_files
from ..golden import GoldenModel, flatten_inputs
from ..manifest import NAME as MANIFEST
from ..manifest import read_manifest
from ..numerics import DEFAULT_PRECISION, parse_precision
from ..passes.quantize import quantize
from . import app
from .common import accuracy_lines, calib_option, err, plural


@app.command()
@click.argument("source", metavar="MODEL|OUTDIR", type=click.Path(path_type=Path))
@click.option("--inputs", "inputs_path", required=True, type=click.Path(path_type=Path), help="Inputs (.npy).")
@click.option(
    "-o",
    "--out",
    "out_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Where to write the outputs (.npy); an existing file is replaced only if it is a .npy array.",
)
@click.option(
    "--precision",
    help=f"MODEL's fixed-point widths as wXaY, or 'float' for the unquantized reference [default: {DEFAULT_PRECISION}].",
)
@calib_option
def predict(source: Path, inputs_path: Path, out_path: Path, precision: str | None, calib: Path | None) -> None:
    """Run MODEL, or the design compiled into OUTDIR, on INPUTS with the golden model.

    On OUTDIR (a folder written by `fpgagen compile`) the outputs are exactly what that design's
    hardware computes, in its own formats, converted back to float. On a MODEL file they are what a
    design of --precision would compute (calibrated by --calib), or the float reference.
    """
    _check_output(out_path, [source, inputs_path] + ([calib] if calib else []))
    scale = None  # of the error: the range of these outputs, or a calibrated design's own
    if (source / MANIFEST).is_file():
        if precision is not None or calib is not None:
            raise FpgagenError(f"{source}: a compiled design computes in its own formats; drop --precision and --calib")
        ir, what = model_from_manifest(source), "the design's formats"
        measured = read_manifest(source)["numerics"]["measured"]
        if measured["inputs"] == CALIBRATION:
            scale = measured["output_range"]
    elif source.is_dir() and not holds_layer_files(source):
        raise FpgagenError(
            f"{source}: neither a compiled design (no {MANIFEST}) nor a Graph Challenge folder (no n{{N}}-l{{k}}.tsv)"
        )
    else:
        ir, what = _model(source, precision or DEFAULT_PRECISION, calib)
    x = flatten_inputs(ir, read_array(inputs_path), str(inputs_path))
    start = time.perf_counter()
    golden = GoldenModel(ir)
    # A quantized model's every layer output is kept for the error and saturation below, which
    # would otherwise run the model again.
    outputs = golden.run(x, trace=True) if ir.quantized else None
    y = golden.dequantized(outputs[-1]) if outputs is not None else golden.predict(x)
    seconds = time.perf_counter() - start
    write_array(out_path, y)
    err.print(
        f"{source.name}: {plural(x.shape[0], 'input')} through {plural(len(ir.layers), 'layer')} in {seconds:.3f} s "
        f"({what}); wrote {out_path} with shape {y.shape}"
    )
    if ir.quantized:
        accuracy = measure_accuracy(ir, x, "inputs", scale, outputs)
        design = " of the design's calibration" if scale is not None else ""
        for line in accuracy_lines(accuracy, f"on these {x.shape[0]} inputs", range_of=design):
            err.print(f"  {line}")


def _model(path: Path, precision: str, calib: Path | None):
    ir = load_model(path)
    chosen = parse_precision(precision)
    if chosen is None:
        return ir, "float"
    return quantize(ir, chosen, read_calibration(ir, calib)), chosen.name


def _check_output(out_path: Path, inputs: list[Path]) -> None:
    """Refuse to write over an input, a folder, or a file that is not an earlier array."""
    target = absolute(out_path)
    if target.is_dir():
        raise FpgagenError(f"{out_path}: is a folder; give the name of a file to write, such as {out_path}/y.npy")
    for path in inputs:
        if target.exists() and absolute(path).exists() and target.samefile(absolute(path)):
            raise FpgagenError(f"{out_path}: is an input of this command; give another --out")
    if target.is_file():
        with open(target, "rb") as handle:
            if handle.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise FpgagenError(f"{out_path}: exists and is not a .npy array; fpgagen does not overwrite it")
