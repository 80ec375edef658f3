"""`fpgagen sim`: the RTL under cocotb (Verilator or Icarus), bit for bit against the golden model."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ..arrays import read_array
from ..design import model_from_manifest
from ..errors import CheckFailed
from ..manifest import read_manifest
from ..simulate import SIMULATORS, run_rtl_simulation
from ..vectors import golden_vectors, write_vectors
from . import app
from .common import err, out

RESULTS = "sim_results.json"


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
@click.option("--simulator", type=click.Choice(SIMULATORS), default="verilator", show_default=True)
@click.option(
    "--inputs",
    "inputs_path",
    type=click.Path(path_type=Path),
    help="Inputs (.npy) to simulate instead of OUTDIR/vectors; their golden outputs come from the model.",
)
@click.option("--waves", is_flag=True, help="Record waveforms (FST for Verilator, VCD for Icarus) in OUTDIR/sim_build.")
@click.option("--core", is_flag=True, help="Simulate the core with ap_ctrl_hs pins instead of the AXI4-Lite top.")
@click.option(
    "--rtl",
    "rtl_dir",
    type=click.Path(path_type=Path),
    help="Simulate this folder's Verilog instead (e.g. Vitis HLS's syn/verilog for the same design).",
)
@click.option("--toplevel", help="Top module of --rtl [default: the design's top].")
def sim(
    outdir: Path, simulator: str, inputs_path: Path | None, waves: bool, core: bool, rtl_dir: Path | None,
    toplevel: str | None,
) -> None:  # fmt: skip
    """Simulate OUTDIR/rtl with the cocotb testbench and compare with the golden model.

    Exit 0 when every output matches bit for bit, 1 at the first difference. Writes
    OUTDIR/sim_results.json: cycles per vector, per layer busy and drain cycles, the simulator.
    """
    read_manifest(outdir)
    options = {"simulator": simulator, "waves": waves, "core": core, "rtl": rtl_dir, "toplevel": toplevel}
    with err.status(f"RTL simulation ({simulator})"):
        if inputs_path is None:
            results = run_rtl_simulation(outdir, outdir / "vectors", outdir / RESULTS, **options)
        else:
            model = model_from_manifest(outdir)
            with tempfile.TemporaryDirectory(prefix="fpgagen-sim-") as folder:
                write_vectors(model, golden_vectors(model, read_array(inputs_path), str(inputs_path)), Path(folder))
                results = run_rtl_simulation(outdir, Path(folder), outdir / RESULTS, **options)
    if not results["passed"]:
        m = results["first_mismatch"]
        raise CheckFailed(
            f"RTL differs from the golden model: layer {m['layer']}, vector {m['vector']}, index {m['index']}: "
            f"expected {m['expected']}, got {m['got']}"
        )
    out.print(
        f"RTL simulation passed ({simulator}): {results['vectors']} vectors bit-exact, "
        f"{results['cycles_per_vector']:.0f} cycles per vector"
    )
