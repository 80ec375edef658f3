"""`fpgagen csim`: C simulation of a compiled design's HLS C++, bit for bit against the golden model."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from ..arrays import read_array
from ..atomic import atomic_file
from ..backends.hls import CsimResult, run_csim
from ..design import model_from_manifest
from ..errors import CheckFailed, FpgagenError
from ..vectors import golden_vectors, write_vectors
from . import app
from .common import err, out

RESULTS = "csim_results.json"


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
@click.option(
    "--inputs",
    "inputs_path",
    type=click.Path(path_type=Path),
    help="Inputs (.npy) to simulate instead of OUTDIR/vectors; their golden outputs come from the model.",
)
def csim(outdir: Path, inputs_path: Path | None) -> None:
    """Build OUTDIR/hls with g++ and run its testbench: every layer, then the whole design.

    Exit 0 when every output matches the golden model bit for bit, 1 at the first difference
    (reported with its layer, vector and index). Writes OUTDIR/csim_results.json.
    """
    if not (outdir / "hls").is_dir():
        raise FpgagenError(f"{outdir}: no hls/ folder (compile a model into it first)")
    with err.status("C simulation") as status:
        if inputs_path is None:
            vectors = outdir / "vectors"
            if not vectors.is_dir():
                raise FpgagenError(f"{outdir}: no vectors/ folder; give --inputs")
            result = run_csim(outdir, vectors, status=status.update)
        else:
            status.update("golden outputs of the inputs")
            model = model_from_manifest(outdir)
            with tempfile.TemporaryDirectory(prefix="fpgagen-csim-") as folder:
                write_vectors(model, golden_vectors(model, read_array(inputs_path), str(inputs_path)), Path(folder))
                result = run_csim(outdir, Path(folder), status=status.update)
    _write_results(outdir / RESULTS, result)
    if not result.passed:
        if result.mismatch is not None:
            raise CheckFailed(f"C simulation differs from the golden model at {result.mismatch}")
        raise CheckFailed(f"C simulation failed: {result.error}")
    out.print(
        f"C simulation passed: {result.vectors} vectors bit-exact in {result.seconds:.3f} s "
        f"({result.edges_per_second:.3g} edges/s; build {result.build_seconds:.1f} s)"
    )


def _write_results(path: Path, result: CsimResult) -> None:
    with atomic_file(path) as work:
        work.write_text(json.dumps(result.to_json(), indent=2) + "\n")
