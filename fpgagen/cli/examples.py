"""`fpgagen example graphchallenge` and `fpgagen import-tsv`: Graph Challenge networks in and out."""

from __future__ import annotations

import math
from pathlib import Path

import click

from ..errors import FpgagenError
from ..examples.graphchallenge import write_example
from ..frontend.graphchallenge_tsv import read_graphchallenge
from ..frontend.onnx_writer import write_onnx
from ..outdir import check_output_model
from . import app
from .common import out
from .progress import Steps


@app.group()
def example() -> None:
    """Generate example networks with inputs and expected results, ready for the other commands."""


@example.command()
@click.option("--neurons", default=1024, show_default=True, help="N: 16 times a power of two, and a square.")
@click.option("--layers", default=120, show_default=True, help="L: number of layers.")
@click.option("--inputs", default=2000, show_default=True, help="Number of images.")
@click.option("--seed", default=0, show_default=True, help="Seed of the image generator.")
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Folder to write.")
def graphchallenge(neurons: int, layers: int, inputs: int, seed: int, out_dir: Path) -> None:
    """A Sparse DNN Graph Challenge network with the official statistics, and images to run on it.

    Every layer is N x N with 32 nonzeros (all 0.0625) per row and column, the official bias and
    the clamp to [0, 32]. Writes the official TSV layout (neuron{N}/n{N}-l{k}.tsv,
    sparse-images-{N}.tsv, neuron{N}-l{L}-categories.tsv), plus model.onnx and images.npy, so that
    `fpgagen predict OUT/model.onnx --inputs OUT/images.npy --out Y.npy` runs at once, and
    fpgagen-files.json, the files it wrote: OUT must be missing, empty, or an earlier example that
    holds nothing else and none of whose files you changed.
    """
    with Steps() as steps:
        steps.begin(f"generating {neurons} x {layers}, {inputs} images and their truth")
        summary = write_example(out_dir, neurons, layers, inputs, seed)
    out.print(
        f"wrote {summary.folder}: {summary.neurons} neurons x {summary.layers} layers, {summary.edges:,} edges; "
        f"{summary.survivors} of {summary.inputs} images survive ({summary.survivors / summary.inputs:.1%}) "
        f"[{summary.seconds:.1f} s]"
    )


@app.command("import-tsv")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_path", required=True, type=click.Path(path_type=Path), help="ONNX file to write.")
@click.option("--layers", type=int, help="Keep only the first L layers (default: all).")
@click.option("--bias", type=float, help="Bias of every neuron (default: the official one for N).")
def import_tsv(folder: Path, out_path: Path, layers: int | None, bias: float | None) -> None:
    """Convert a Graph Challenge network in the official TSV layout into ONNX.

    FOLDER holds n{N}-l{k}.tsv files, directly or in a neuron{N} subfolder.
    """
    if not folder.is_dir():
        raise FpgagenError(f"{folder}: no such folder")
    if bias is not None and not (math.isfinite(bias) and bias <= 0.0):
        # The challenge adds the bias to nonzero sums only; that equals a dense layer only for bias <= 0.
        raise FpgagenError(f"--bias {bias}: must be a finite number <= 0 (the Graph Challenge rule)")
    check_output_model(out_path, [folder])
    with Steps() as steps:
        steps.begin(f"reading {folder}")
        model = read_graphchallenge(folder, layers, bias)
        steps.begin(f"writing {out_path}")
        write_onnx(model, out_path)
    out.print(
        f"wrote {out_path}: {model.in_features} neurons x {len(model.layers)} layers, {model.nnz:,} edges, "
        f"bias {model.layers[0].bias[0]:g}"
    )
