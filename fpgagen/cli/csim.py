"""`fpgagen csim`: C simulation of a compiled design's HLS C++, bit for bit against the golden model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..arrays import read_array
from ..atomic import atomic_file
from ..backends.hls import CsimResult, run_csim
from ..errors import CheckFailed, FpgagenError
from ..manifest import read_manifest
from ..outdir import check_command_output
from ..results import CSIM_RESULTS
from . import app
from .common import out, plural
from .inputs import vectors_of
from .progress import Steps

CSIM_VECTORS = "csim_vectors"


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
@click.option(
    "--inputs",
    "inputs_path",
    type=click.Path(path_type=Path),
    help=f"Inputs (.npy) to simulate instead of OUTDIR/vectors; their golden outputs come from the model "
    f"and are kept in OUTDIR/{CSIM_VECTORS}.",
)
def csim(outdir: Path, inputs_path: Path | None) -> None:
    """Build OUTDIR/hls with g++ and run its testbench: every layer, then the whole design.

    Exit 0 when every output matches the golden model bit for bit, 1 at the first difference
    (reported with its layer, vector and index). Writes OUTDIR/csim_results.json.
    """
    read_manifest(outdir)  # a missing folder, or one that holds no design, is named as such
    check_command_output(outdir / CSIM_RESULTS)
    if not (outdir / "hls").is_dir():
        raise FpgagenError(f"{outdir}: no hls/ folder (compile a model into it first)")
    with Steps() as steps:
        inputs = None if inputs_path is None else read_array(inputs_path)
        vectors = vectors_of(outdir, inputs, inputs_path, CSIM_VECTORS, steps)
        result = run_csim(outdir, vectors, status=steps.begin)
    _write_results(outdir / CSIM_RESULTS, result, vectors.relative_to(outdir))
    if not result.passed:
        if result.mismatch is not None:
            raise CheckFailed(f"C simulation differs from the golden model at {result.mismatch}")
        raise CheckFailed(f"C simulation failed: {result.error}")
    out.print(
        f"C simulation passed: {plural(result.vectors, 'vector')} bit-exact in {result.seconds:.3f} s "
        f"({result.edges_per_second:.3g} edges/s; build {result.build_seconds:.1f} s)"
    )


def _write_results(path: Path, result: CsimResult, vectors: Path) -> None:
    with atomic_file(path) as work:
        work.write_text(json.dumps(result.to_json() | {"vectors_folder": str(vectors)}, indent=2) + "\n")
